// Online softmax on the decode kernel's transposed score fragments S^T (fragment.h, C map with keys
// in M): a thread holds query rows 2t and 2t+1 (C columns) of keys g and g+8 of each 16-key m-tile;
// the eight lanes sharing t (lane bits 2-4) share a row, so row reductions are three xor-shuffles.
// Scores are in log2 units (softmax scale * log2 e folded in beforehand).
#pragma once
#include <cmath>

#include "mxattn/kernels/attention/softmax.h"
#include "mxattn/ptx/ex2.h"

namespace mxattn::kernels {

__device__ __forceinline__ float column_max(float x) {
#pragma unroll
  for (int mask = 4; mask < 32; mask *= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, mask));
  return x;
}
__device__ __forceinline__ float column_sum(float x) {
#pragma unroll
  for (int mask = 4; mask < 32; mask *= 2) x += __shfl_xor_sync(0xffffffffu, x, mask);
  return x;
}

// Running state of two query rows (2t and 2t+1; C register r belongs to row r % 2). row_max is
// -inf until a row has seen a key; row_sum is this thread's partial sum (reduced at the end).
struct OnlineSoftmaxT {
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};

  // s: MT m-tiles of scores (masked ones -inf). Replaces s by p = exp2(s - max) and returns, per row,
  // the factor the output accumulator must be multiplied by.
  template <int MT>
  __device__ __forceinline__ void update(float (&s)[MT][4], float (&rescale)[2]) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float m = row_max[c];
#pragma unroll
      for (int j = 0; j < MT; ++j) m = fmaxf(m, fmaxf(s[j][c], s[j][c + 2]));
      m = column_max(m);
      // A row that has seen only masked keys keeps max -inf; shift by 0 so exp2(-inf) = 0, not NaN.
      const float shift = m == -INFINITY ? 0.0f : m;
      rescale[c] = row_max[c] == -INFINITY ? 0.0f : ptx::ex2_approx_ftz(row_max[c] - shift);
      row_max[c] = m;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < MT; ++j) {
        s[j][c] = ptx::ex2_approx_ftz(s[j][c] - shift);
        s[j][c + 2] = ptx::ex2_approx_ftz(s[j][c + 2] - shift);
        sum += s[j][c] + s[j][c + 2];
      }
      row_sum[c] = row_sum[c] * rescale[c] + sum;
    }
  }

  // Row sums reduced over the eight lanes of a row; call once after the last update.
  __device__ __forceinline__ void finish() {
    row_sum[0] = column_sum(row_sum[0]);
    row_sum[1] = column_sum(row_sum[1]);
  }
};

}  // namespace mxattn::kernels
