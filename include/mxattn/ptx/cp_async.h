// Asynchronous global -> shared copies (PTX ISA §9.7.9.25, cp.async, sm_80+; cp.async.bulk, sm_90).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// cp.async.cg.shared.global [dst], [src], 16, src_size;   sm_80+
// 16 bytes, bypassing L1; src_size 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async_cg_16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0));
}

// The same with the first src_bytes (0..16) read and the rest of the 16 zero-filled.
__device__ __forceinline__ void cp_async_cg_16_prefix(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}

// cp.async.ca.shared.global [dst], [src], 8, src_size;   sm_80+
__device__ __forceinline__ void cp_async_ca_8(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 8 : 0));
}

// cp.async.ca.shared.global [dst], [src], 4, src_size;   sm_80+
__device__ __forceinline__ void cp_async_ca_4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 4 : 0));
}

// cp.async.commit_group;   sm_80+
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;\n" ::); }

// cp.async.wait_group N;   sm_80+   (all but the N most recent groups of this thread have landed)
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], bytes, [bar];   sm_90
// One thread copies `bytes` (a multiple of 16; both addresses 16-byte aligned) through the copy engine;
// the copy completes its bytes on `bar`'s transaction count (a CTA's own shared address is a valid
// shared::cluster address when no cluster is launched).
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

}  // namespace mxattn::ptx
