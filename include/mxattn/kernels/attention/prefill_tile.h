// What the mma.sync prefill kernels (the portable one, prefill_kernel.h, and the sm_120a one,
// sm120/prefill_kernel.h) do alike around their MMAs, on the m16n8 accumulator layout (fragment.h mma_c): a
// warp's 16 query rows, a thread's rows row0 and row0 + 8.
#pragma once
#include <cmath>

#include "mxattn/kernels/attention/fragment.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/kernels/attention/softmax.h"

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
#pragma unroll
    for (int i = 0; i < NT; ++i)
      store_out_pair(p, sp.b, sp.q0 + row, h, i * 8 + 2 * t, o[i][2 * r] * f, o[i][2 * r + 1] * f);
    if (p.lse && t == 0) lse_at(p, b, h, row) = sm.lse(r);
  }
}

}  // namespace mxattn::kernels
