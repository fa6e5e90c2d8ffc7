// ex2.approx.ftz.f32 (PTX ISA §9.7.3.22): 2^x in one MUFU.EX2, results below 2^-126 flushed to 0.
// exp2f() adds a denormal range fix-up around the same instruction; softmax terms that small add
// nothing to a sum that holds 1 (the row maximum's term), so the kernels use the instruction as is.
#pragma once

namespace mxattn::ptx {

__device__ __forceinline__ float ex2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace mxattn::ptx
