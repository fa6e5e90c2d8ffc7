// max.NaN.f32 (PTX ISA §9.7.3.11): the larger of two floats, NaN if either is NaN. fmaxf returns the
// other operand for a NaN, which would let a NaN score vanish from a softmax row.
#pragma once

namespace mxattn::ptx {

// max.NaN.f32 d, a, b;   sm_80+
__device__ __forceinline__ float max_nan(float a, float b) {
  float d;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

}  // namespace mxattn::ptx
