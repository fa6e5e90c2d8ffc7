// Online softmax on a consumer warpgroup's S accumulators (fragment.h: a thread holds rows g and g+8
// of its warp's 16, columns 8i+2t and 8i+2t+1), and P packed to E4M3 (or, in the exact mode, BF16) A
// fragments for O += P V.
//
// Scores arrive as Q'K'^T of the folded operands: the true score is s * k_factor[tile] * q_factor[row].
// Both factors (and the softmax scale, in log2 units) make one coefficient per row and tile, c = scale *
// k_factor > 0, so the maximum is taken over raw scores and each score costs one FFMA and one exp2:
// P = exp2(s * c - ref + kPOffset), ref a running maximum (log2 units) at most kStaleMax below the true
// one, lies in [0, 2^8.8]: inside E4M3's range (448); terms below 2^-9 flush to 0.
#pragma once
#include <cuda_bf16.h>

#include <cmath>

#include "mxattn/kernels/attention/softmax.h"
#include "mxattn/ptx/cvt.h"
#include "mxattn/ptx/ex2.h"
#include "mxattn/ptx/max.h"

namespace mxattn::kernels::hopper {

inline constexpr float kPOffset = 8.0f;
// How far (log2 units) a row's running maximum may lag the true one before the reference moves: P then
// stays below 2^(8 + 0.8) = 446 < 448, and the output rescale (a multiply per accumulator) is skipped
// for every tile whose maximum did not grow by more (after the first tiles, nearly all).
inline constexpr float kStaleMax = 0.8f;

__device__ __forceinline__ float quad_max_nan(float x) {
  x = ptx::max_nan(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return ptx::max_nan(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

// Where a tile's keys are masked: keys at or past `seq_kv`, and when causal keys past row + diag.
struct TileMask {
  bool active;  // false: no key of the tile is masked for any row of the warpgroup
  int key0, seq_kv, diag;
  bool causal;
};

// kExactSum: the rows' sums of P added up here, of P before its rounding to E4M3, so that the LSE is the
// true one; otherwise the tensor cores sum the rounded P of each KV tile (mainloop.h mma_pv: P times a
// row of ones), 96 additions a thread and KV tile fewer, and O is normalized by the sum of the P it was
// made of. (A tile's sum at a time, added here in FP32: summed on over a whole row, the tensor cores'
// FP8 accumulation, which keeps ~14 bits, lost 5% at 4k keys.)
template <int N, bool kExactSum>
struct WgSoftmax {
  float ref[2] = {-INFINITY, -INFINITY};  // the reference (a running row maximum), log2 units
  float row_sum[2] = {0.0f, 0.0f};        // in P's offset units; kExactSum: this thread's part
  float scale[2];                         // softmax scale * log2(e) * the row's Q factor

  // A tile's P = exp2(s * c + bias), per row.
  struct Exponents {
    float c[2], bias[2];
  };

  // s: the tile's scores (N / 2 a thread), k_factor: the tile's. Takes the rows' maxima and sets, per row,
  // the tile's exponents (e) and the factor by which the output accumulator's rows must be multiplied;
  // returns false when every factor of the warp is 1 (no row's reference moved: the caller skips the
  // multiply). kMasked: the tile has masked keys (mask.active); the other tiles, nearly all, skip the
  // per-score key and row tests. kExps: the scores are replaced by P here (exps()); otherwise the caller
  // does that, and can put other work between the exp2 (mainloop.h).
  template <bool kMasked, bool kExps>
  __device__ __forceinline__ bool update(float (&s)[N / 2], float k_factor, const TileMask& mask, int row0, int t,
                                         float (&alpha)[2], Exponents& e) {
    if constexpr (kMasked) {
#pragma unroll
      for (int i = 0; i < N / 8; ++i)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int key = mask.key0 + 8 * i + 2 * t + q % 2, row = row0 + 8 * (q / 2);
          if (key >= mask.seq_kv || (mask.causal && key > row + mask.diag)) s[4 * i + q] = -INFINITY;
        }
    }
    // Both rows' maxima first, of the raw scores (c > 0 scales them after), four running maxima a row.
    float mr[2];
    bool exact = kMasked;
    if constexpr (!kMasked) {
      // Integer maxima of the scores' bits, two scores an instruction (VIMNMX3): where a row holds a
      // non-negative score, the largest signed integer is the largest score's bits (a canonical NaN's
      // too). Seeded with 0 (+0.0f), a row whose scores are all negative comes out 0: then the warp takes
      // the float maxima, as masked tiles do. (A NaN this misses still reaches P and the row sum.)
      int m4[2][4] = {};
#pragma unroll
      for (int i = 0; i < N / 8; ++i)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          m4[r][i % 4] =
              __vimax3_s32(m4[r][i % 4], __float_as_int(s[4 * i + 2 * r]), __float_as_int(s[4 * i + 2 * r + 1]));
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        int x = __vimax3_s32(__vimax3_s32(m4[r][0], m4[r][1], m4[r][2]), m4[r][3], 0);
        x = max(x, __shfl_xor_sync(0xffffffffu, x, 1));
        mr[r] = __int_as_float(max(x, __shfl_xor_sync(0xffffffffu, x, 2)));
        exact |= __float_as_int(mr[r]) == 0;
      }
      exact = __any_sync(0xffffffffu, exact);
    }
    if (exact) float_maxima(s, mr);
    bool grow[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      e.c[r] = scale[r] * k_factor;
      const float m = mr[r] * e.c[r];
      // The reference moves only when the tile's maximum passes it by more than kStaleMax (false for a
      // NaN maximum, whose NaN reaches P anyway; true for a first finite maximum over -inf, when
      // alpha = exp2(-inf) = 0). Selects, not branches, so both rows' work interleaves.
      grow[r] = m > ref[r] + kStaleMax;
      const float a = ptx::ex2_approx_ftz(ref[r] - m);
      alpha[r] = grow[r] ? a : 1.0f;
      ref[r] = grow[r] ? m : ref[r];
      if constexpr (kExactSum) row_sum[r] *= alpha[r];
      // A row that has seen only masked keys keeps ref -inf; shift by 0 so exp2(-inf) = 0, not NaN.
      e.bias[r] = kPOffset - (ref[r] == -INFINITY ? 0.0f : ref[r]);
    }
    if constexpr (kExps) exps(s, e);
    return __any_sync(0xffffffffu, grow[0] || grow[1]);
  }

  // The tile's scores replaced by P (with the exponents update() set).
  __device__ __forceinline__ void exps(float (&s)[N / 2], const Exponents& e) {
    float sum4[2][4] = {};
#pragma unroll
    for (int i = 0; i < N / 8; ++i)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = q / 2;
        float& x = s[4 * i + q];
        x = ptx::ex2_approx_ftz(fmaf(x, e.c[r], e.bias[r]));
        if constexpr (kExactSum) sum4[r][i % 4] += x;
      }
    if constexpr (kExactSum)
#pragma unroll
      for (int r = 0; r < 2; ++r) row_sum[r] += (sum4[r][0] + sum4[r][1]) + (sum4[r][2] + sum4[r][3]);
  }

  // The rows' maxima of the scores as floats (NaN wins), eight independent chains, then the quad
  // shuffles of both rows together.
  __device__ __forceinline__ static void float_maxima(const float (&s)[N / 2], float (&mr)[2]) {
    float m4[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) m4[r][j] = ptx::max_nan(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]);
#pragma unroll
    for (int i = 4; i < N / 8; ++i)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        m4[r][i % 4] = ptx::max_nan(m4[r][i % 4], ptx::max_nan(s[4 * i + 2 * r], s[4 * i + 2 * r + 1]));
#pragma unroll
    for (int r = 0; r < 2; ++r)
      mr[r] = quad_max_nan(ptx::max_nan(ptx::max_nan(m4[r][0], m4[r][1]), ptx::max_nan(m4[r][2], m4[r][3])));
  }

  // P of k32 step kk as the A fragment of wgmma (fragment.h: keys 8i+2t, 8i+2t+1, 8i+8+2t, 8i+9+2t).
  __device__ __forceinline__ static void pack_p(const float (&p)[N / 2], int kk, uint32_t (&a)[4]) {
    const int i = 4 * kk;
#pragma unroll
    for (int reg = 0; reg < 4; ++reg) {
      const int blk = i + 2 * (reg / 2), q = 2 * (reg % 2);  // reg 0/1: blocks i, i+1; reg 2/3: i+2, i+3
      a[reg] = ptx::cvt_rn_satfinite_e4m3x2_f32(p[4 * blk + q + 1], p[4 * blk + q]) |
               ptx::cvt_rn_satfinite_e4m3x2_f32(p[4 * (blk + 1) + q + 1], p[4 * (blk + 1) + q]) << 16;
    }
  }

  // The exact mode's P of k16 step kk as a BF16 A fragment (fragment.h wgmma_a16: accumulator blocks 2kk
  // and 2kk + 1, rows g and g + 8, in key order).
  __device__ __forceinline__ static void pack_p_bf16(const float (&p)[N / 2], int kk, uint32_t (&a)[4]) {
#pragma unroll
    for (int reg = 0; reg < 4; ++reg) {
      const int i = 4 * (2 * kk + reg / 2) + 2 * (reg % 2);
      const __nv_bfloat162 b = __floats2bfloat162_rn(p[i], p[i + 1]);  // .x (low half): the lower key
      a[reg] = *reinterpret_cast<const uint32_t*>(&b);
    }
  }

  // !kExactSum: a KV tile's row sums from the tensor cores (l's column 0: l[0] row g, l[2] row g + 8, in
  // the quad's thread t = 0), added once its P V'^T has completed; then the reference's move (alpha) of
  // the tile after it, which O takes at the same time.
  __device__ __forceinline__ void add_tile_sums(const float (&l)[4], const float (&alpha)[2]) {
    row_sum[0] = (row_sum[0] + l[0]) * alpha[0];
    row_sum[1] = (row_sum[1] + l[2]) * alpha[1];
  }
  __device__ __forceinline__ void add_last_sums(const float (&l)[4]) {
    row_sum[0] += l[0];
    row_sum[1] += l[2];
  }
  // The rows' sums for the whole quad: its parts added, or thread t = 0's.
  __device__ __forceinline__ void finish() {
    if constexpr (kExactSum) {
      row_sum[0] = quad_sum(row_sum[0]);
      row_sum[1] = quad_sum(row_sum[1]);
    } else {
      row_sum[0] = __shfl_sync(0xffffffffu, row_sum[0], threadIdx.x & ~3u);
      row_sum[1] = __shfl_sync(0xffffffffu, row_sum[1], threadIdx.x & ~3u);
    }
  }
  // 1 / row sum: 0 for a row that saw no key, NaN for a NaN row.
  __device__ __forceinline__ float inv_sum(int r) const { return row_sum[r] == 0.0f ? 0.0f : 1.0f / row_sum[r]; }
  // Natural-log LSE of the true scores: -inf for a row that saw no key.
  __device__ __forceinline__ float lse(int r) const {
    if (row_sum[r] == 0.0f) return -INFINITY;
    return (ref[r] - kPOffset + log2f(row_sum[r])) * kLn2;
  }
};

}  // namespace mxattn::kernels::hopper
