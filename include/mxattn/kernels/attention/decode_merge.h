// The decode kernel's split merge, done by the last block of each (batch, KV head, query tile) to
// finish, or by the first block of its cluster where the splits run as one (decode_kernel.h): it combines
// the splits' normalized partials by their log-sum-exp and writes the output.
// (It was a separate kernel: one launch more per call, and 0.7 us more per 4k-key call on the
// H100; the same at 32k and 128k keys, bench/decode_notes.md v7.)
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/kernels/attention/softmax.h"

namespace mxattn::kernels {

struct DecodeOutput {
  void* out = nullptr;  // [B, q_len, H_q, D]
  int64_t out_stride[3] = {0, 0, 0};
  bool out_fp16 = false;
  float* lse = nullptr;                   // [B, H_q, q_len], natural log; may be null
  const float* v_tensor_scale = nullptr;  // device S_enc of V where its format has one, else null
  // Arrival words, one per (batch, KV head, query tile), in the workspace: epoch << 24 | blocks
  // arrived. Each call has its own epoch, so the words need no clearing between calls, and a word
  // of another epoch (an earlier call, or memory never written) counts as no arrivals.
  unsigned long long* arrivals = nullptr;
  unsigned long long epoch = 0;  // < 2^40
};

inline constexpr int kArrivalBits = 24;

// Counts this block in; returns how many blocks of the epoch have arrived, this one included.
__device__ __forceinline__ uint32_t arrive(unsigned long long* word, unsigned long long epoch) {
  unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(word);
  for (;;) {
    const unsigned long long mine = ((old >> kArrivalBits) == epoch ? old : epoch << kArrivalBits) + 1;
    const unsigned long long seen = atomicCAS(word, old, mine);
    if (seen == old) return uint32_t(mine & ((1u << kArrivalBits) - 1));
    old = seen;
  }
}

// Rows m0 .. m0 + 7 (those below `rows`) of (b, hk), from the splits' normalized partials: lse_of(r, s), split s's
// log-sum-exp of row m0 + r (log2 units), and part_of(r, s, d), its channels d, d + 1. `scratch`: 16 floats of shared
// memory. The partials live in the workspace (merge_splits) or in the cluster's shared memory (decode_kernel.h).
template <int D, int Threads, typename LseOf, typename PartOf>
__device__ void merge_rows(const DecodeOutput& out, int splits, int m0, int rows, int b, int hk, int heads_kv, int group,
                           int q_len, float* scratch, LseOf lse_of, PartOf part_of) {
  constexpr int kRows = 8;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  for (int r = warp; r < kRows; r += Threads / 32) {  // a warp per row: the max and sum of its weights
    if (m0 + r >= rows) continue;
    float m = -INFINITY;
    for (int s = lane; s < splits; s += 32) m = fmaxf(m, lse_of(r, s));
#pragma unroll
    for (int mask = 16; mask > 0; mask /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    const float shift = m == -INFINITY ? 0.0f : m;
    float l = 0.0f;
    for (int s = lane; s < splits; s += 32) l += exp2f(lse_of(r, s) - shift);
#pragma unroll
    for (int mask = 16; mask > 0; mask /= 2) l += __shfl_xor_sync(0xffffffffu, l, mask);
    if (lane == 0) scratch[2 * r] = shift, scratch[2 * r + 1] = l;
    if (lane == 0 && out.lse) {
      const int tok = (m0 + r) / group, h = hk * group + (m0 + r) % group;
      // -inf for a row that saw no key; NaN where a split's was (a NaN score: NaN weights make l NaN).
      out.lse[(int64_t(b) * heads_kv * group + h) * q_len + tok] = l == 0.0f ? -INFINITY : (m + log2f(l)) * kLn2;
    }
  }
  __syncthreads();
  const float v_inv = out.v_tensor_scale ? 1.0f / *out.v_tensor_scale : 1.0f;
  for (int idx = tid; idx < kRows * D / 2; idx += Threads) {  // a channel pair per thread
    const int r = idx / (D / 2), d = 2 * (idx % (D / 2));
    if (m0 + r >= rows) continue;
    const float shift = scratch[2 * r], l = scratch[2 * r + 1];
    float x0 = 0.0f, x1 = 0.0f;
    for (int s = 0; s < splits; ++s) {
      const float w = exp2f(lse_of(r, s) - shift);
      const float2 v = part_of(r, s, d);
      x0 += w * v.x, x1 += w * v.y;
    }
    const float inv = (l == 0.0f ? 0.0f : 1.0f / l) * v_inv;
    x0 *= inv, x1 *= inv;
    const int tok = (m0 + r) / group, h = hk * group + (m0 + r) % group;
    const int64_t at = b * out.out_stride[0] + int64_t(tok) * out.out_stride[1] + int64_t(h) * out.out_stride[2] + d;
    if (out.out_fp16)
      *reinterpret_cast<__half2*>(static_cast<__half*>(out.out) + at) = __floats2half2_rn(x0, x1);
    else
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(out.out) + at) = __floats2bfloat162_rn(x0, x1);
  }
}

// The partials in the workspace: part_o [rows][splits][D] and part_lse [rows][splits] from row part_row0 on. They
// were written by other blocks: they are read through L2 (ld.global.cg), never a stale L1 line.
template <int D, int Threads>
__device__ void merge_splits(const DecodeOutput& out, const float* part_o, const float* part_lse, int splits,
                             int64_t part_row0, int m0, int rows, int b, int hk, int heads_kv, int group, int q_len,
                             float* scratch) {
  merge_rows<D, Threads>(
      out, splits, m0, rows, b, hk, heads_kv, group, q_len, scratch,
      [&](int r, int s) { return __ldcg(part_lse + (part_row0 + m0 + r) * splits + s); },
      [&](int r, int s, int d) {
        return __ldcg(reinterpret_cast<const float2*>(part_o + ((part_row0 + m0 + r) * splits + s) * D + d));
      });
}

}  // namespace mxattn::kernels
