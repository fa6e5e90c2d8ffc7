// Kernel parameters of the attention kernels: plain device-side views, filled by api/attention.h
// and api/kv_cache.h after validation.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/format/format.h"

namespace mxattn::kernels {

// Rows of packed codes (format/pack.h) along the block axis, addressed by three outer indices,
// with row-major scales (one byte per block) addressed the same way. Strides in bytes.
struct MxRows {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  int64_t code_stride[3] = {0, 0, 0};
  int64_t scale_stride[3] = {0, 0, 0};
  Format format;
  const float* tensor_scale = nullptr;  // device S_enc where format.tensor_scale, else null

  __device__ float inv_tensor_scale() const { return tensor_scale && format.tensor_scale ? 1.0f / *tensor_scale : 1.0f; }

  __host__ __device__ const uint8_t* row_codes(int64_t i0, int64_t i1, int64_t i2) const {
    return codes + i0 * code_stride[0] + i1 * code_stride[1] + i2 * code_stride[2];
  }
  __host__ __device__ const uint8_t* row_scales(int64_t i0, int64_t i1, int64_t i2) const {
    return scales + i0 * scale_stride[0] + i1 * scale_stride[1] + i2 * scale_stride[2];
  }
};

// A dense BF16 or FP16 tensor [B, S, H, D] with element strides for B, S, H (D contiguous).
struct DenseRows {
  void* data = nullptr;
  int64_t stride[3] = {0, 0, 0};
  bool fp16 = false;
};

struct PrefillParams {
  int batch = 1, seq_q = 1, seq_kv = 1, heads_q = 1, heads_kv = 1, group = 1;
  bool causal = false;
  float softmax_scale = 0;  // 1/S_enc of Q and K and log2(e) are folded in on the device

  bool q_is_mx = false;
  DenseRows q;       // when !q_is_mx
  MxRows q_mx;       // outer (b, s, h), rows along D
  MxRows k;          // outer (b, s, h), rows along D
  MxRows v;          // outer (b, h, d), rows along S_kv (channel-major, blocked along S_kv)
  bool v_vector = false;  // V's rows allow vector loads (aligned row starts)

  DenseRows out;          // [B, S_q, H_q, D]
  float* lse = nullptr;   // [B, H_q, S_q] natural log; may be null

  // A packed batch of sequences of their own lengths (api/attention.h): batch + 1 offsets each, device
  // memory; seq_q and seq_kv then bound the lengths. Null: every batch entry is seq_q x seq_kv.
  const int* cu_seqlens_q = nullptr;
  const int* cu_seqlens_kv = nullptr;
  const int* seqused_kv = nullptr;  // keys used of each sequence's span; null: up to the next offset
};

// Where sequence b lies in the operands. A packed batch is a batch of one: sequence b's queries are rows
// q0 .. q0 + seq_q - 1 of Q and the output, its keys rows k0 .. of K and columns k0 .. of V's rows.
struct SeqSpan {
  int b;              // the operands' batch index: b, or 0 in a packed batch
  int q0, k0;         // its first query row and key
  int seq_q, seq_kv;  // its lengths
  bool bad;           // offsets that cannot be right (api/attention.h): no keys, no queries, its LSE NaN
  __device__ __forceinline__ int diag() const { return seq_kv - seq_q; }  // causal: row i sees keys <= i + diag
};
// kPacked: whether the call is a packed batch (p.cu_seqlens_q set); a kernel that knows it at compile time
// keeps a batch of equal lengths free of the loads and the registers.
template <bool kPacked>
__device__ __forceinline__ SeqSpan seq_span(const PrefillParams& p, int b) {
  if constexpr (!kPacked) {
    return {b, 0, 0, p.seq_q, p.seq_kv, false};
  } else {
    const int q0 = p.cu_seqlens_q[b], k0 = p.cu_seqlens_kv[b];
    const int sq = p.cu_seqlens_q[b + 1] - q0, span_kv = p.cu_seqlens_kv[b + 1] - k0;
    const int skv = p.seqused_kv ? p.seqused_kv[b] : span_kv;
    // V's columns start a block and a 16-key chunk (the tiles' loads): k0 a multiple of both.
    const bool bad = q0 < 0 || k0 < 0 || sq < 0 || skv < 0 || skv > span_kv || sq > p.seq_q || skv > p.seq_kv ||
                     k0 % p.v.format.block != 0 || k0 % 16 != 0;
    return bad ? SeqSpan{0, 0, 0, 0, 0, true} : SeqSpan{0, q0, k0, sq, skv, false};
  }
}
__device__ __forceinline__ SeqSpan seq_span(const PrefillParams& p, int b) {
  return p.cu_seqlens_q ? seq_span<true>(p, b) : seq_span<false>(p, b);
}
// V's row (b, hk, d) of sequence span sp: codes and scales from its first key.
__device__ __forceinline__ const uint8_t* v_codes(const PrefillParams& p, const SeqSpan& sp, int hk, int d) {
  return p.v.row_codes(sp.b, hk, d) + int64_t(sp.k0) * p.v.format.elem.bits / 8;
}
__device__ __forceinline__ const uint8_t* v_scales(const PrefillParams& p, const SeqSpan& sp, int hk, int d) {
  return p.v.row_scales(sp.b, hk, d) + sp.k0 / p.v.format.block;
}

// Output row (b, row, h): its channels, rounded to the output's BF16 or FP16. Its address is computed once
// and each pair of channels is a 4-byte store at an offset from it (per pair, the 64-bit index arithmetic
// was most of the Hopper epilogue's instructions).
struct OutRow {
  uint16_t* at;  // channel 0
  bool fp16;
  // Channels d, d + 1 rounded to BF16 or FP16, as one 4-byte word (channel d in the low half).
  static __device__ __forceinline__ uint32_t pack(bool fp16, float x0, float x1) {
    if (fp16) {
      const __half2 x = __floats2half2_rn(x0, x1);
      return *reinterpret_cast<const uint32_t*>(&x);
    }
    const __nv_bfloat162 x = __floats2bfloat162_rn(x0, x1);
    return *reinterpret_cast<const uint32_t*>(&x);
  }
  // Channels d, d + 1 (d even), or their word as pack() makes it.
  __device__ __forceinline__ void store_pair(int d, float x0, float x1) const { store_word(d, pack(fp16, x0, x1)); }
  __device__ __forceinline__ void store_word(int d, uint32_t x) const { *reinterpret_cast<uint32_t*>(at + d) = x; }
};
__device__ __forceinline__ OutRow out_row(const PrefillParams& p, int b, int row, int h) {
  return {static_cast<uint16_t*>(p.out.data) + (b * p.out.stride[0] + int64_t(row) * p.out.stride[1] + h * p.out.stride[2]),
          p.out.fp16};
}

// The LSE of query row `row` of sequence (batch entry) b, head h: [B, H_q, S_q].
__device__ __forceinline__ float& lse_at(const PrefillParams& p, int b, int h, int row) {
  return p.lse[(int64_t(b) * p.heads_q + h) * p.seq_q + row];
}

// Keys a query block of sequence span sp can see: [0, end). Causal masks align bottom-right: row i sees
// j <= i + S_kv - S_q.
__device__ __forceinline__ int prefill_kv_end(const PrefillParams& p, const SeqSpan& sp, int m0, int block_m) {
  if (!p.causal) return sp.seq_kv;
  const int last_row = min(m0 + block_m, sp.seq_q) - 1;
  const int end = last_row + sp.diag() + 1;
  return end < 0 ? 0 : (end > sp.seq_kv ? sp.seq_kv : end);
}

}  // namespace mxattn::kernels
