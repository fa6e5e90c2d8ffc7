// A paged KV cache holding K and V in block-scaled formats, the append launcher that quantizes new
// tokens into it, and split-KV decode attention over it (DESIGN.md §4).
//
// Layout (device memory), pages head-major so one head's tokens of a page are contiguous:
//   codes  [num_pages][heads_kv][page_size][packed_bytes(head_dim, bits)]
//   scales [num_pages][heads_kv][page_size][head_dim / block]          (row-major scale bytes)
// K and V are each blocked along head_dim, per token, in their own format (4-, 6- or 8-bit elements;
// the decode kernel takes block sizes 16 and 32, and K and V of different widths or blocks where each is
// mxfp8-, mxfp6-, mxfp4- or nvfp4-like: a wider K than V, say). NVFP4's FP32
// tensor scale S_enc is fixed per cache (a device float the caller sets, e.g. from a calibration).
// Sequence b's token j is in page block_table[b * max_pages_per_seq + j / page_size], slot
// j % page_size; page_size is a power of two. The four arrays are 16-byte aligned (cudaMalloc's are).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "mxattn/api/quantize.h"
#include "mxattn/api/status.h"
#include "mxattn/format/format.h"

namespace mxattn {

struct KvCacheView {
  Format k_format = kMxfp8E4M3, v_format = kMxfp8E4M3;
  int num_pages = 0, page_size = 16, heads_kv = 1, head_dim = 128;
  uint8_t* k_codes = nullptr;
  uint8_t* k_scales = nullptr;
  uint8_t* v_codes = nullptr;
  uint8_t* v_scales = nullptr;
  const float* k_tensor_scale = nullptr;  // device S_enc; needed where the format has a tensor scale
  const float* v_tensor_scale = nullptr;

  // Allocation sizes of the four arrays.
  size_t code_bytes(const Format& f) const;
  size_t scale_bytes(const Format& f) const;
};

// Which pages each sequence owns, and how many tokens it holds.
struct PagedSequences {
  const int32_t* block_table = nullptr;  // device [batch][max_pages_per_seq]
  int max_pages_per_seq = 0;
  const int32_t* seq_lens = nullptr;     // device [batch]
  int batch = 1;
};

// Quantize new_tokens tokens per sequence of K and V ([B, new_tokens, H_kv, D], BF16 or F16, element
// strides for b, token, head; D contiguous) into the cache at positions seq_lens[b] .. seq_lens[b] +
// new_tokens - 1. seq_lens is not changed (the caller advances it). Pages must be allocated.
Status kv_cache_append(const KvCacheView& cache, const PagedSequences& seqs, int new_tokens, const void* k,
                       const int64_t (&k_strides)[3], const void* v, const int64_t (&v_strides)[3], DType dtype,
                       cudaStream_t stream);

struct DecodeArgs {
  KvCacheView cache;
  PagedSequences seqs;  // seq_lens count the new query tokens (append first, then decode)
  int max_seq_len = 0;  // host-side bound of seq_lens (sizes the split grid)
  int q_len = 1;        // query tokens per sequence, 1..16; they are the last q_len tokens
  int heads_q = 1;      // a multiple of cache.heads_kv
  const void* q = nullptr;  // [B, q_len, H_q, D], BF16 or F16 (F16 is rounded to BF16)
  DType q_dtype = DType::BF16;
  int64_t q_strides[3] = {0, 0, 0};  // elements, for b, token, head; 8-element multiples
  bool causal = true;                // token i sees keys j <= seq_len - q_len + i
  double softmax_scale = 0.0;        // 0: 1/sqrt(D)
  void* out = nullptr;               // [B, q_len, H_q, D], BF16 or F16
  DType out_dtype = DType::BF16;
  int64_t out_strides[3] = {0, 0, 0};
  float* lse = nullptr;              // [B, H_q, q_len], natural log; may be null
  int num_splits = 0;                // KV splits per sequence; 0 chooses from the SM count
  // Optional: a host copy of seqs.seq_lens (batch entries). With it, a batch of sequences of different
  // lengths is split finer, so that the longest do not run on alone at the end (a serving batch of 32
  // sequences of 3k to 64k tokens: 0.8x the time, bench/decode_notes.md); without, every sequence is
  // planned as max_seq_len long.
  const int32_t* seq_lens_host = nullptr;
  // decode_workspace_bytes(args) bytes of device memory, 16-byte aligned. It needs no clearing,
  // before the first call or between calls; calls that may overlap need separate workspaces.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

size_t decode_workspace_bytes(const DecodeArgs& args);
// Split-KV decode. The warps of a split take its KV tiles as they become free, so the order of the
// sums, and the last bits of the output, may differ from one call to the next.
Status attention_decode(const DecodeArgs& args, cudaStream_t stream);

}  // namespace mxattn
