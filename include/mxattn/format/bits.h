// Bit-level helpers shared by every codec: float <-> bits and exact powers of two.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MXATTN_HD __host__ __device__ __forceinline__
#else
#define MXATTN_HD inline
#endif

namespace mxattn {

MXATTN_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

MXATTN_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

MXATTN_HD float quiet_nan() { return bits_float(0x7fc00000u); }

// 2^k exactly, for k in [-149, 127] (float subnormals below -126).
MXATTN_HD float pow2f(int k) {
  return k >= -126 ? bits_float(uint32_t(k + 127) << 23) : bits_float(1u << (k + 149));
}

MXATTN_HD bool is_finite_bits(float f) { return (float_bits(f) & 0x7f800000u) != 0x7f800000u; }

}  // namespace mxattn
