// How a consumer warpgroup's O adds up over a row's KV tiles.
//
// The FP8 wgmma's accumulation keeps about 14 bits: a product is aligned to the largest of the products
// and the accumulator's value, and the bits below are dropped (truncated, so the losses add up rather
// than cancel). Summed on in the accumulator over a whole row, a tile's share of O loses its low bits
// against the running sum where O grows with the keys (V channels with a nonzero mean, flat attention):
// a product's loss is up to 2^-14 of the sum, about K x 2^-16 relative over K keys summed on (measured
// 0.27 at 16k keys, bench/prefill_long_accuracy.py). Restarting the accumulator every G keys bounds it
// at about G x 2^-16 whatever the length, the restarted parts added in FP32 outside the tensor cores
// (H200, 16k keys, V ~ U[0, 1]: 1.8e-3 with G = 128, 6.2e-3 with G = 512; HopperPrefill.LongRowsBiasedV).
//
//   ORegisters (D = 128): the wgmma writes each tile's share into `ot` from zero; `o` sums the shares in
//   FP32 (G = one tile). O twice in registers: the tiles are narrower (traits.h kBlockN).
//   OShared (D = 64, 256): the accumulator `acc` runs on, and each KV tile one of kOSumGroups groups of
//   its channels moves into a sum in shared memory (G = traits.h kOSumKeys). The sum is BF16 (both
//   warpgroups' take 64 KB at D = 256, not 128) and `acc` keeps what BF16 did not, so O = sum + acc stays
//   exact to FP32's rounding. The move costs ~5 instructions an element; it runs in the warpgroup's turn
//   while S's wgmma do (mainloop.h), where it costs least (H200, D = 256, 16k keys: 0.85x the speed of
//   summing on in the accumulator; in the softmax 0.83x, after the turn 0.70x).
//   OPlain (the exact mode, BF16 P V'^T): the accumulator runs on over the whole row. The BF16 wgmma
//   accumulates without the FP8 one's loss (H200, HopperPrefill.LongRowsBiasedV: see
//   bench/prefill_notes.md), so one copy of O suffices.
#pragma once
#include <cuda_bf16.h>

#include <type_traits>

#include "mxattn/kernels/attention/hopper/traits.h"

namespace mxattn::kernels::hopper {

// Each accumulator also holds P's row sums of a tile (mainloop.h mma_pv; the layout of softmax.h
// add_tile_sums): sums().
template <int D>
struct ORegisters {
  static constexpr bool kFresh = true;  // P V'^T's first k-step overwrites the accumulator
  // ot: the wgmma's accumulator, D / 2 values of O's share and, in the ones tile's 8 columns after them
  // (traits.h kSumsInPv), 4 of P's row sums.
  float o[D / 2], ot[D / 2 + 4];

  __device__ __forceinline__ float (&wgmma_acc())[D / 2 + 4] { return ot; }
  __device__ __forceinline__ float (&sums())[4] { return *reinterpret_cast<float(*)[4]>(ot + D / 2); }
  __device__ __forceinline__ void start(uint4*) {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < D / 2 + 4; ++i) ot[i] = 0.0f;
  }
  // A tile's P V'^T has completed (ot holds its share); alpha: the reference's move after it (softmax.h),
  // rescale: whether any row's is not 1.
  __device__ __forceinline__ void add_tile(const float (&alpha)[2], bool rescale) {
    if (rescale) {
#pragma unroll
      for (int i = 0; i < D / 2; ++i) o[i] = (o[i] + ot[i]) * alpha[(i % 4) / 2];
    } else {
#pragma unroll
      for (int i = 0; i < D / 2; ++i) o[i] += ot[i];
    }
  }
  __device__ __forceinline__ void add_last_tile() {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] += ot[i];
  }
  // Accumulator i's value of O (fragment.h's layout), after add_last_tile.
  __device__ __forceinline__ float out(int i) const { return o[i]; }
};

template <int D>
struct OPlain {
  static constexpr bool kFresh = false;
  float acc[D / 2], l[4];

  __device__ __forceinline__ float (&wgmma_acc())[D / 2] { return acc; }
  __device__ __forceinline__ float (&sums())[4] { return l; }
  __device__ __forceinline__ void start(uint4*) {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) l[i] = 0.0f;
  }
  __device__ __forceinline__ void add_tile(const float (&alpha)[2], bool rescale) {
    if (rescale) {
#pragma unroll
      for (int i = 0; i < D / 2; ++i) acc[i] *= alpha[(i % 4) / 2];
    }
  }
  __device__ __forceinline__ void add_last_tile() {}
  __device__ __forceinline__ float out(int i) const { return acc[i]; }
};

// `sum`: this thread's D / 16 16-byte words in shared memory (traits.h OSharedStorage), word j at sum[128 j].
// Accumulator i is in word i / 8; group c (accumulators kPerGroup c ..) in words kPerGroup c / 8 ..
// O = sum x scale[c][row] + acc: a group's sum is rescaled in `scale` until it next moves.
template <int D>
struct OShared {
  static constexpr bool kFresh = false;
  static constexpr int kGroups = Traits<D, false>::kOSumGroups, kPerGroup = D / 2 / kGroups;
  static_assert(kPerGroup % 8 == 0, "a group is whole 16-byte words of the sum");
  float acc[D / 2], l[4];
  float scale[kGroups][2];
  uint4* sum;

  __device__ __forceinline__ float (&wgmma_acc())[D / 2] { return acc; }
  __device__ __forceinline__ float (&sums())[4] { return l; }
  __device__ __forceinline__ void start(uint4* thread_sum) {
    sum = thread_sum;
#pragma unroll
    for (int i = 0; i < D / 2; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < kGroups; ++c) scale[c][0] = scale[c][1] = 1.0f;
#pragma unroll
    for (int j = 0; j < D / 16; ++j) sum[128 * j] = make_uint4(0, 0, 0, 0);  // read back by this thread only
  }
  __device__ __forceinline__ void add_tile(const float (&alpha)[2], bool rescale) {
    if (rescale) {
#pragma unroll
      for (int i = 0; i < D / 2; ++i) acc[i] *= alpha[(i % 4) / 2];
#pragma unroll
      for (int c = 0; c < kGroups; ++c) scale[c][0] *= alpha[0], scale[c][1] *= alpha[1];
    }
  }
  // Before tile n's P V'^T is issued (mainloop.h: after S of tile n + 1, while its wgmma run, so the
  // softmax does not wait for it): group n % kGroups moves into the sum.
  __device__ __forceinline__ void before_pv(int n) { move_group_at<0>(n % kGroups); }
  // The last tile's share stays in acc: O = sum x scale + acc, into acc.
  __device__ __forceinline__ void add_last_tile() {
#pragma unroll
    for (int c = 0; c < kGroups; ++c)
#pragma unroll
      for (int w = 0; w < kPerGroup / 8; ++w) {
        const uint4 s = sum[128 * (c * kPerGroup / 8 + w)];
        const uint32_t x[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int i = c * kPerGroup + 8 * w + 2 * k;
          acc[i] = fmaf(lo(x[k]), scale[c][(i % 4) / 2], acc[i]);
          acc[i + 1] = fmaf(hi(x[k]), scale[c][(i % 4) / 2], acc[i + 1]);
        }
      }
  }
  __device__ __forceinline__ float out(int i) const { return acc[i]; }

 private:
  static __device__ __forceinline__ float lo(uint32_t x) { return __uint_as_float(x << 16); }
  static __device__ __forceinline__ float hi(uint32_t x) { return __uint_as_float(x & 0xFFFF0000u); }

  template <int c>
  __device__ __forceinline__ void move_group_at(int g) {
    if constexpr (c < kGroups) g == c ? move_group<c>() : move_group_at<c + 1>(g);
  }
  // Group c's accumulators into its sum: t = sum x scale + acc, the sum becomes BF16(t) and acc the rest,
  // t - BF16(t), exact in FP32 and at most 2^-9 |t|: the accumulator restarts (nearly) from zero.
  template <int c>
  __device__ __forceinline__ void move_group() {
#pragma unroll
    for (int w = 0; w < kPerGroup / 8; ++w) {
      uint4& word = sum[128 * (c * kPerGroup / 8 + w)];
      const uint4 s = word;
      uint32_t x[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int i = c * kPerGroup + 8 * w + 2 * k;  // accumulators i, i + 1: one row ((i % 4) / 2)
        const float f = scale[c][(i % 4) / 2];
        const float t0 = fmaf(lo(x[k]), f, acc[i]), t1 = fmaf(hi(x[k]), f, acc[i + 1]);
        const __nv_bfloat162 b = __floats2bfloat162_rn(t0, t1);  // .x = t0 (low half), .y = t1
        x[k] = *reinterpret_cast<const uint32_t*>(&b);
        acc[i] = t0 - lo(x[k]);
        acc[i + 1] = t1 - hi(x[k]);
      }
      word = make_uint4(x[0], x[1], x[2], x[3]);
    }
    scale[c][0] = scale[c][1] = 1.0f;
  }
};

template <typename T>
using OAccumulator = std::conditional_t<T::kExact, OPlain<T::kHeadDim>,
                                        std::conditional_t<T::kOShared, OShared<T::kHeadDim>, ORegisters<T::kHeadDim>>>;

}  // namespace mxattn::kernels::hopper
