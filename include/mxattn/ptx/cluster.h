// Thread block clusters (sm_90+, PTX ISA §9.7.13.3 barrier.cluster, §9.7.9.20 mapa): a cluster-wide barrier and
// reads of another block's shared memory in the cluster (distributed shared memory).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// barrier.cluster.arrive.release + wait.acquire: every thread of the cluster's blocks arrives, and this thread's
// shared-memory writes before it are seen by the cluster's threads after their wait.
// (Builds for GPUs without clusters compile these to nothing; their launchers never ask for a cluster.)
__device__ __forceinline__ void cluster_sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// %cluster_ctarank: this block's rank in its cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r = 0;
#if __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return r;
}

// The float at `p` (this block's shared memory) in the shared memory of the cluster's block `rank`.
__device__ __forceinline__ float ld_cluster_f32(const float* p, uint32_t rank) {
  float v = *p;
#if __CUDA_ARCH__ >= 900
  uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(p)), remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
#endif
  return v;
}
__device__ __forceinline__ float2 ld_cluster_f32x2(const float* p, uint32_t rank) {
  float2 v = *reinterpret_cast<const float2*>(p);
#if __CUDA_ARCH__ >= 900
  uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(p)), remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(remote) : "memory");
#endif
  return v;
}

}  // namespace mxattn::ptx
