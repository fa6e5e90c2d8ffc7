// Shared-memory barriers (PTX ISA §9.7.13.15, mbarrier) between producer and consumer warpgroups.
// A barrier completes a phase when `count` arrivals have happened; waiters name the phase parity.
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// mbarrier.init.shared::cta.b64 [addr], count;   sm_80+
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(a), "r"(count) : "memory");
}

// mbarrier.arrive.shared::cta.b64 _, [addr];   sm_80+  (release semantics for this thread's writes)
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(a) : "memory");
}

// mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], bytes;   sm_90+
// An arrival that also expects `bytes` more to land through asynchronous copies (complete_tx) before the
// phase completes.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(a), "r"(bytes) : "memory");
}

// mbarrier.try_wait.parity.shared::cta.b64 p, [addr], parity;   sm_90+, in a loop until the phase
// with this parity has completed (acquire semantics).
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(a),
      "r"(parity)
      : "memory");
}

// Both phases complete: the two try_waits issued back to back, so their latencies overlap.
__device__ __forceinline__ void mbarrier_wait_both(uint64_t* bar_a, uint32_t parity_a, uint64_t* bar_b,
                                                   uint32_t parity_b) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(bar_a));
  const uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(bar_b));
  asm volatile(
      "{\n.reg .pred da, db;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 da, [%0], %1;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 db, [%2], %3;\n"
      "and.pred da, da, db;\n"
      "@!da bra WAIT_%=;\n}\n" ::"r"(a),
      "r"(parity_a), "r"(b), "r"(parity_b)
      : "memory");
}

// fence.mbarrier_init.release.cluster;   sm_90+  (makes initialized barriers visible before use)
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// fence.proxy.async.shared::cta;   sm_90+
// Orders this thread's ordinary shared-memory writes before later reads by the async proxy (wgmma
// operands, bulk copies). Each writing thread issues it before the barrier that publishes the data.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// bar.sync id, count;   sm_70+   (a named barrier over `count` threads, a multiple of 32)
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// bar.arrive id, count;   sm_70+   (counts this warp towards barrier `id` without waiting for it)
__device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

}  // namespace mxattn::ptx
