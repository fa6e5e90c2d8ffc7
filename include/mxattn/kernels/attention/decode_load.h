// Register-level loads and dequantization of KV-cache tiles for the decode kernel.
#pragma once
#include <cstdint>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/attention/decode_traits.h"
#include "mxattn/ptx/cp_async.h"
#include "mxattn/ptx/load.h"

namespace mxattn::kernels {

// N bytes at p (aligned to the widest power of two dividing N, up to 16) into words, streamed past L1.
template <int N>
__device__ __forceinline__ void load_raw(const uint8_t* p, uint32_t (&w)[(N + 3) / 4]) {
  if constexpr (N % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 16; ++i) {
      const uint4 v = ptx::ld_global_nc_na_v4_u32(p + 16 * i);
      w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
    }
  } else if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 8; ++i) {
      const uint2 v = ptx::ld_global_nc_na_v2_u32(p + 8 * i);
      w[2 * i] = v.x, w[2 * i + 1] = v.y;
    }
  } else if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) w[i] = ptx::ld_global_nc_na_u32(p + 4 * i);
  } else {
    static_assert(N % 2 == 0, "even byte counts");
    const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
#pragma unroll
    for (int i = 0; i < (N + 3) / 4; ++i) w[i] = 0;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) w[i / 2] |= uint32_t(__ldg(q + i)) << (16 * (i % 2));
  }
}

// N bytes (a multiple of 4) from global to shared memory, asynchronously; zeros where !valid.
template <int N>
__device__ __forceinline__ void copy_async(uint8_t* dst, const uint8_t* src, bool valid) {
  static_assert(N % 4 == 0, "cp.async moves 4, 8 or 16 bytes");
  if constexpr (N % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 16; ++i) ptx::cp_async_cg_16(dst + 16 * i, src + 16 * i, valid);
  } else if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 8; ++i) ptx::cp_async_ca_8(dst + 8 * i, src + 8 * i, valid);
  } else {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) ptx::cp_async_ca_4(dst + 4 * i, src + 4 * i, valid);
  }
}

// N bytes of shared memory into words (same alignment rule as load_raw).
template <int N>
__device__ __forceinline__ void load_staged(const uint8_t* p, uint32_t (&w)[(N + 3) / 4]) {
  if constexpr (N % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 16; ++i) {
      const uint4 v = reinterpret_cast<const uint4*>(p)[i];
      w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
    }
  } else if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 8; ++i) {
      const uint2 v = reinterpret_cast<const uint2*>(p)[i];
      w[2 * i] = v.x, w[2 * i + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) w[i] = reinterpret_cast<const uint32_t*>(p)[i];
  }
}

// 1, 2 or 4 scale bytes at p (shared memory, aligned to N) into one word.
template <int N>
__device__ __forceinline__ uint32_t staged_scales(const uint8_t* p) {
  if constexpr (N == 4) return *reinterpret_cast<const uint32_t*>(p);
  if constexpr (N == 2) return *reinterpret_cast<const uint16_t*>(p);
  return *p;
}

// Element e (compile-time after unrolling) of a lane's channel range, times the scale of its block.
template <class T, int Channels, int W>
__device__ __forceinline__ float dequant_at(const uint32_t (&raw)[W], uint32_t scales, int e, const ElementTable& tab) {
  constexpr int kScaleCount = Channels >= T::kBlock ? Channels / T::kBlock : 1;
  const int sb = kScaleCount > 1 ? e / T::kBlock : 0;
  return tab.value[code_at<T::kBits>(raw, e)] * tab.scale[(scales >> (8 * sb)) & 0xFF];
}

}  // namespace mxattn::kernels
