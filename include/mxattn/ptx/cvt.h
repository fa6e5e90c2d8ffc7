// Conversions (PTX ISA §9.7.9.21, cvt).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// cvt.rn.f16x2.e4m3x2 d, a;   sm_89+
// Two E4M3 codes in half Half of a (0: the low 16 bits, code 0 in bits 0-7; 1: the high 16 bits, taken by the
// cvt's operand selector rather than a shift first) to two FP16 values (code 0 in the low half). Exact: every
// E4M3 value is an FP16 value.
template <int Half = 0>
__device__ __forceinline__ uint32_t cvt_rn_f16x2_e4m3x2(uint32_t a) {
  static_assert(Half == 0 || Half == 1, "a half of 32 bits");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t d;
  if constexpr (Half == 0) {
    const uint16_t lo = static_cast<uint16_t>(a);
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(d) : "h"(lo));
  } else {
    asm("{\n.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.rn.f16x2.e4m3x2 %0, hi;\n}\n" : "=r"(d) : "r"(a));
  }
  return d;
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 890, "cvt.f16x2.e4m3x2 needs sm_89");
  return a;
#else
  return a;  // host pass: never called
#endif
}

// cvt.rn.satfinite.e4m3x2.f16x2 d, a;   sm_89+
// Two FP16 values (half 0 in the low 16 bits) to two E4M3 codes (code 0 in the low byte), rounded to
// nearest even; finite values beyond 448 saturate to +-448, NaN stays NaN.
__device__ __forceinline__ uint32_t cvt_rn_satfinite_e4m3x2_f16x2(uint32_t a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t d;
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;\n" : "=h"(d) : "r"(a));
  return d;
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 890, "cvt.e4m3x2.f16x2 needs sm_89");
  return a;
#else
  return a;  // host pass: never called
#endif
}

// cvt.rn.satfinite.e4m3x2.f32 d, a, b;   sm_89+
// Two FP32 values to two E4M3 codes in the instruction's order: hi (its a) in bits 8-15, lo (its b) in
// bits 0-7. Rounded to nearest even; finite values beyond 448 saturate; NaN stays NaN.
__device__ __forceinline__ uint32_t cvt_rn_satfinite_e4m3x2_f32(float hi, float lo) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 890, "cvt.e4m3x2.f32 needs sm_89");
  return 0;
#else
  return 0;  // host pass: never called
#endif
}

// cvt.rn.satfinite.e5m2x2.f32 d, a, b;   sm_89+   (as above, E5M2 codes; Inf saturates to 57344)
__device__ __forceinline__ uint32_t cvt_rn_satfinite_e5m2x2_f32(float hi, float lo) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t d;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 890, "cvt.e5m2x2.f32 needs sm_89");
  return 0;
#else
  return 0;  // host pass: never called
#endif
}

}  // namespace mxattn::ptx
