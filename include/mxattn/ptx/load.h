// Global loads with cache hints (PTX ISA §9.7.9.8, ld).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// ld.global.nc.L1::no_allocate.v4.u32 {r0,r1,r2,r3}, [addr];   sm_70+
// 16 bytes of read-only data streamed past L1: each KV-cache byte is read once.
__device__ __forceinline__ uint4 ld_global_nc_na_v4_u32(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// ld.global.nc.L1::no_allocate.v2.u32 {r0,r1}, [addr];   sm_70+
__device__ __forceinline__ uint2 ld_global_nc_na_v2_u32(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

// ld.global.nc.L1::no_allocate.u32 r, [addr];   sm_70+
__device__ __forceinline__ uint32_t ld_global_nc_na_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}

}  // namespace mxattn::ptx
