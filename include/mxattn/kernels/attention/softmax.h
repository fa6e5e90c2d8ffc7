// Online softmax on mma.sync accumulator fragments (fragment.h, C map): a thread holds rows g and
// g+8 of a warp's 16-row tile; the four lanes of a quad (t = 0..3) share a row, so row reductions
// are two xor-shuffles. Scores are in log2 units (softmax scale * log2 e folded in beforehand).
#pragma once
#include <cmath>

#include "mxattn/ptx/ex2.h"

namespace mxattn::kernels {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Running state of two rows (g and g+8). row_max is -inf until a row has seen a key;
// row_sum is this thread's partial sum (quad-reduced at the end).
struct OnlineSoftmax {
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.0f, 0.0f};

  // s: NT n-tiles of scores (masked ones -inf). Replaces s by p = exp2(s - max) and returns, per row,
  // the factor the output accumulator must be multiplied by.
  template <int NT>
  __device__ __forceinline__ void update(float (&s)[NT][4], float (&rescale)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float m = row_max[r];
#pragma unroll
      for (int j = 0; j < NT; ++j) m = fmaxf(m, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
      m = quad_max(m);
      // A row that has seen only masked keys keeps max -inf; shift by 0 so exp2(-inf) = 0, not NaN.
      const float shift = m == -INFINITY ? 0.0f : m;
      rescale[r] = row_max[r] == -INFINITY ? 0.0f : ptx::ex2_approx_ftz(row_max[r] - shift);
      row_max[r] = m;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        s[j][2 * r] = ptx::ex2_approx_ftz(s[j][2 * r] - shift);
        s[j][2 * r + 1] = ptx::ex2_approx_ftz(s[j][2 * r + 1] - shift);
        sum += s[j][2 * r] + s[j][2 * r + 1];
      }
      row_sum[r] = row_sum[r] * rescale[r] + sum;
    }
  }

  // Quad-reduced row sums; call once after the last update.
  __device__ __forceinline__ void finish() {
    row_sum[0] = quad_sum(row_sum[0]);
    row_sum[1] = quad_sum(row_sum[1]);
  }
  // Natural-log LSE of row r (after finish): -inf for a row that saw no key.
  __device__ __forceinline__ float lse(int r) const {
    return row_sum[r] == 0.0f ? -INFINITY : (row_max[r] + log2f(row_sum[r])) * kLn2;  // NaN stays NaN
  }
  __device__ __forceinline__ float inv_sum(int r) const { return row_sum[r] == 0.0f ? 0.0f : 1.0f / row_sum[r]; }
};

}  // namespace mxattn::kernels
