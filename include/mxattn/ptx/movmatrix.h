// In-register matrix transpose (PTX ISA §9.7.14.5.16, movmatrix).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// movmatrix.sync.aligned.m8n8.trans.b16 d, a;   sm_75+
// An 8x8 b16 matrix held as mma fragments (lane l: row l/4, columns 2*(l%4), 2*(l%4)+1 in one
// register) -> its transpose in the same layout (lane l: column l/4, rows 2*(l%4), 2*(l%4)+1).
__device__ __forceinline__ uint32_t movmatrix_m8n8_trans_b16(uint32_t a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  uint32_t d;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(a));
  return d;
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 750, "movmatrix needs sm_75");
  return a;
#else
  return a;  // host pass: never called
#endif
}

}  // namespace mxattn::ptx
