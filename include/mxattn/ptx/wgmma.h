// Warpgroup MMA bookkeeping (PTX ISA §9.7.15): fences, commit groups, waits, and the shared-memory
// matrix descriptor. The MMA variants themselves are generated: wgmma_mma.h.
#pragma once
#include <cstdint>

#include "mxattn/ptx/wgmma_mma.h"

namespace mxattn::ptx {

// wgmma.fence.sync.aligned;   sm_90a
// Before the first wgmma of a group, and whenever registers it reads (accumulators, A fragments) were
// written by ordinary instructions since the last fence.
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

// wgmma.commit_group.sync.aligned;   sm_90a   (closes the group of wgmma issued since the last commit)
__device__ __forceinline__ void wgmma_commit_group() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// wgmma.wait_group.sync.aligned N;   sm_90a   (waits until at most N committed groups are pending)
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

// Registers written by wgmma are not ordered with later ordinary reads until wait_group; this tells
// the compiler that the accumulator array changed (it cannot see the asynchronous write).
__device__ __forceinline__ void wgmma_fence_operand(float& reg) { asm volatile("" : "+f"(reg)::"memory"); }

enum class Swizzle : uint64_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };

// The 64-bit shared-memory matrix descriptor (PTX ISA §9.7.15.5.1):
//   bits  0-13  start address >> 4          bits 32-45  stride byte offset >> 4 (8-row groups)
//   bits 16-29  leading byte offset >> 4    bits 49-51  base offset (0: atoms 1024-byte aligned)
//   bits 62-63  swizzle (1: 128 B, 2: 64 B, 3: 32 B)
// For K-major swizzled operands whose K extent per instruction fits in one swizzle row, the leading
// byte offset is unused (set to 1, as the ISA's canonical layouts do).
__device__ __forceinline__ uint64_t smem_desc(const void* smem, uint32_t stride_bytes, Swizzle swizzle) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(stride_bytes >> 4) << 32) |
         (uint64_t(swizzle) << 62);
}

}  // namespace mxattn::ptx
