// Shared-memory matrix stores of mma fragments (PTX ISA, warp-level matrix instructions: stmatrix).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// stmatrix.sync.aligned.m8n8.x4.shared.b16 [addr], {r0,r1,r2,r3};   sm_90
// Four 8x8 b16 matrices, register j holding matrix j as mma fragments (lane l: row l/4, columns
// 2*(l%4) and 2*(l%4)+1). Lane i gives the shared-memory address (a 32-bit shared address, 16-byte
// aligned) where row i%8 of matrix i/8 goes, its 16 bytes contiguous.
__device__ __forceinline__ void stmatrix_x4_b16(uint32_t smem_addr, const uint32_t (&r)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(smem_addr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
#elif defined(__CUDA_ARCH__)
  static_assert(__CUDA_ARCH__ >= 900, "stmatrix needs sm_90");
#endif
}

}  // namespace mxattn::ptx
