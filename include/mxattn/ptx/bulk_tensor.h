// Bulk tensor stores, shared -> global through a tensor map (PTX ISA, data movement: cp.async.bulk.tensor,
// sm_90), and the bulk async-groups they complete in (cp.async.bulk.commit_group, cp.async.bulk.wait_group).
#pragma once
#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "mxattn/ptx/cp_async.h"

namespace mxattn::ptx {

// cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [map, {c0, c1, c2, c3}], [src];   sm_90
// One thread stores the box at coordinates (c0 innermost .. c3) of the tensor `map` describes from
// shared memory at `src` (laid out as the map's swizzle says; 128-byte aligned, 1024 with the 128-byte
// swizzle). `map`: the generic address of a tensor map in parameter, constant or global memory. Rows of
// the box outside the tensor are not written. Completes in this thread's current bulk async-group.
__device__ __forceinline__ void bulk_tensor_store_4d(const CUtensorMap* map, const void* src, int c0, int c1, int c2,
                                                     int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

// cp.async.bulk.commit_group;   sm_90   (closes this thread's bulk copies issued since the last commit)
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// cp.async.bulk.wait_group.read N;   sm_90
// Until at most N of this thread's committed groups still read their shared-memory sources: the
// sources of the others may be written again.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// cp.async.bulk.wait_group N;   sm_90   (until at most N of this thread's committed groups are pending:
// the others' writes are done)
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace mxattn::ptx
