// What the mma.sync prefill kernels (the portable one, prefill_kernel.h, and the sm_120a one,
// sm120/prefill_kernel.h) do alike around their MMAs, on the m16n8 accumulator layout (fragment.h mma_c): a
// warp's 16 query rows, a thread's rows row0 and row0 + 8. (The portable kernel through these runs 1.2x its
// earlier inline form on the H200, D = 128: 86 against 70 TFLOPS at 4k, same call; ptxas schedules it
// differently and keeps 48 bytes in local memory at D = 128. Measure before inlining them back.)
#pragma once
#include <cmath>

#include <cuda_bf16.h>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/attention/fragment.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/kernels/attention/softmax.h"
#include "mxattn/ptx/ldmatrix.h"
#include "mxattn/ptx/mma.h"

namespace mxattn::kernels {

// S of a KV tile (keys j0 ..) to log2 units, keys past S_kv and (causal) past the diagonal at -inf.
template <int NT>
__device__ __forceinline__ void scale_and_mask(float (&s)[NT][4], const PrefillParams& p, const SeqSpan& sp, int j0,
                                               int m0, int row0, int lane, float scale_log2) {
  const int diag = sp.diag();  // row i sees keys j <= i + diag when causal
  const bool need_mask = j0 + 8 * NT > sp.seq_kv || (p.causal && j0 + 8 * NT - 1 > m0 + diag);
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const auto rc = frag::mma_c(lane, r);
      const int key = j0 + j * 8 + rc.col, row = row0 + 8 * (r / 2);
      const bool masked = need_mask && (key >= sp.seq_kv || (p.causal && key > row + diag));
      s[j][r] = masked ? -INFINITY : s[j][r] * scale_log2;
    }
}

// O's rows times the softmax's rescale factors.
template <int NT>
__device__ __forceinline__ void rescale_rows(float (&o)[NT][4], const float (&rescale)[2]) {
#pragma unroll
  for (int i = 0; i < NT; ++i) {
    o[i][0] *= rescale[0], o[i][1] *= rescale[0];
    o[i][2] *= rescale[1], o[i][3] *= rescale[1];
  }
}

// O += P V on BF16 m16n8k16: P's A fragments are S's accumulators of two adjacent key tiles rounded to BF16,
// V^T a channel-major BF16 tile (vt[channel][key], rows of kStride elements) read by ldmatrix.
template <int NK, int ND, int kStride>
__device__ __forceinline__ void mma_pv_bf16(const __nv_bfloat16 (*vt)[kStride], int lane, const float (&s)[NK][4],
                                            float (&o)[ND][4]) {
  const auto b_addr = frag::ldmatrix_b2_addr(lane);
#pragma unroll
  for (int kk = 0; kk < NK / 2; ++kk) {
    const uint32_t a[4] = {pack_bf16x2(s[2 * kk][0], s[2 * kk][1]), pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),
                           pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
    for (int i = 0; i < ND; i += 2) {
      uint32_t vb[4];
      ptx::ldmatrix_x4_b16(vb, &vt[i * 8 + b_addr.row][kk * 16 + b_addr.col]);
      const uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
      ptx::mma_m16n8k16_row_col_f32_bf16(o[i], a, b0, o[i]);
      ptx::mma_m16n8k16_row_col_f32_bf16(o[i + 1], a, b1, o[i + 1]);
    }
  }
}

// Epilogue: O normalized (and times out_scale) into the output, and the rows' LSE.
template <int NT>
__device__ __forceinline__ void write_rows(const PrefillParams& p, const SeqSpan& sp, int b, int h, int row0, int t,
                                           const float (&o)[NT][4], OnlineSoftmax& sm, float out_scale) {
  sm.finish();
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= sp.seq_q) continue;
    const float f = sm.inv_sum(r) * out_scale;
    const OutRow out = out_row(p, sp.b, sp.q0 + row, h);
#pragma unroll
    for (int i = 0; i < NT; ++i) out.store_pair(i * 8 + 2 * t, o[i][2 * r] * f, o[i][2 * r + 1] * f);
    if (p.lse && t == 0) lse_at(p, b, h, row) = sm.lse(r);
  }
}

}  // namespace mxattn::kernels
