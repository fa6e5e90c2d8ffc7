// Counters in global memory that one kernel's blocks raise and another kernel's blocks, running at the same
// time, wait on (PTX ISA §8, the memory consistency model): a release add after the data's stores, an acquire
// load before the data's reads. Data read through the async proxy (bulk copies) needs the proxy fence after
// the acquire; data written for such reads, the same fence before the release.
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// ld.acquire.gpu.global.b32: later reads of this thread see what the writer released before raising it.
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// red.release.gpu.global.add.s32: this thread's earlier writes (and those ordered before them, such as the
// block's through a barrier) become visible before the counter rises.
__device__ __forceinline__ void red_release_gpu_add(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// fence.proxy.async.global;   sm_90+: orders this thread's generic-proxy global accesses with its
// async-proxy ones (bulk copies).
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

// %smid: the SM this thread runs on.
__device__ __forceinline__ uint32_t smid() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(id));
  return id;
}

}  // namespace mxattn::ptx
