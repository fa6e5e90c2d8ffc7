// The Hopper prefill kernel (sm_90a): FP8 wgmma over MX inputs whose block scales are folded into
// E4M3 operands (fold.h, DESIGN.md §3); Q, K and V come folded by the fold kernel (fold_kernel.h), which
// runs beside it: a query tile's copies wait for its unit's ready count.
// One block per SM, taking query tiles of 128 rows in turn (scheduler.h):
//
//   warpgroup 0  producer   one thread: per query tile, once its unit is folded, bulk copies of its Q'
//                           tile and factors into one of two Q buffers; per KV tile, bulk copies of its
//                           K' tile (with its factor) and its V'^T tile into a kStages-deep ring of
//                           swizzled shared memory (producer.h); where O is staged, warps 1 and 2 store
//                           each consumer warpgroup's O (store.h)
//   warpgroups 1, 2         64 query rows each: per KV tile, taking turns on the tensor cores,
//   consumers               S = Q'K'^T, online softmax (the tile's K factor from its stage),
//                           O += P V'^T; then the epilogue (epilogue.h)
//
// The full barriers complete when the producer's copies have landed (its arrive sets the bytes to
// expect, the copies complete them); consumers arrive on `empty` once their wgmma have read the slot.
#pragma once
#include "mxattn/kernels/attention/hopper/mainloop.h"
#include "mxattn/kernels/attention/hopper/scheduler.h"
#include "mxattn/ptx/flag.h"
#include "mxattn/ptx/griddep.h"
#include "mxattn/ptx/setmaxnreg.h"

namespace mxattn::kernels::hopper {

struct Params {
  PrefillParams p;
  Folded kv;   // the fold's workspace (fold_kernel.h)
  OutMap out;  // where O is staged (traits.h kOStaged): the output's tensor map (store.h)
};

// Until the fold has raised `ready` to `count` (fold_kernel.h); then what it stored is visible to this thread's
// reads, bulk copies included.
__device__ __forceinline__ void wait_folded(const int* ready, int count) {
  while (ptx::ld_acquire_gpu(ready) < count) __nanosleep(200);
  ptx::fence_proxy_async_global();
}

// kExact: the exact mode (traits.h: P V'^T in BF16). QTerms: 1 for MX Q, 2 for dense Q (traits.h
// SharedStorage). kLse: the LSE is written, from P's exact row sums (softmax.h); without it the tensor
// cores sum P. kPacked: a packed batch of sequences of their own lengths (params.h seq_span; a batch of
// equal lengths keeps its spans in the parameters).
template <int D, bool kExact, int QTerms, bool kLse, bool kPacked>
__global__ void __launch_bounds__(Traits<D, kExact>::kThreads, 1) prefill_kernel(const __grid_constant__ Params params) {
  using T = Traits<D, kExact>;
  const PrefillParams& p = params.p;
  // The swizzled tiles need 1024-byte alignment, which dynamic shared memory does not promise: the
  // launch asks for 1024 bytes more and the storage starts at the next multiple.
  // (Offsetting the shared array itself, not a round trip through an integer, keeps the pointer in the
  // shared address space: the compiler then emits LDS/STS, not generic loads and stores.)
  extern __shared__ uint8_t smem_raw[];
  const uint32_t misalign = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) & 1023;
  auto& ss = *reinterpret_cast<SharedStorage<D, kExact, QTerms>*>(smem_raw + ((1024 - misalign) & 1023));
  // The warpgroup index broadcast from lane 0, so the compiler knows it is warp-uniform and keeps it and
  // what derives from it (barrier ids, row offsets) in uniform registers, out of the consumers' 240.
  const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / 128, 0), thread = tid % 128;
  TileScheduler<T::kBlockM, T::kBlockN> sched(p, params.kv.tile_counter);

  // The ones tile (traits.h): row 0 1.0 (E4M3 0x38, BF16 0x3F80), rows 1-7 zero; 16-byte chunks, swizzled
  // as wgmma reads it. Where it follows V'^T in the stages (kSumsInPv), once a stage (the producer's copies
  // write V'^T's bytes only).
  constexpr int kRowChunks = T::kBlockN * T::kPvBytes / 16, kChunks = T::OnesTile::kBytes / 16;
  constexpr int kCopies = T::kSumsInPv ? T::kStages : 1;
  for (int i = tid; i < kCopies * kChunks; i += T::kThreads) {
    const int row = i % kChunks / kRowChunks, col = 16 * (i % kRowChunks);
    uint8_t* ones = T::kSumsInPv ? ss.vt[i / kChunks] + T::VTile::kBytes : ss.ones.tile();
    const uint32_t x = row == 0 ? (kExact ? 0x3F803F80u : 0x38383838u) : 0u;
    *reinterpret_cast<uint4*>(ones + T::OnesTile::offset(row, col)) = make_uint4(x, x, x, x);
  }
  ptx::fence_proxy_async_shared();  // generic-proxy stores, read by wgmma (the async proxy)
  if (tid == 0) {
    for (int s = 0; s < T::kStages; ++s) {
      ptx::mbarrier_init(&ss.bar[s].k_full, 1);  // the producer's arrive, and the copy's bytes
      ptx::mbarrier_init(&ss.bar[s].v_full, 1);
      ptx::mbarrier_init(&ss.bar[s].empty, 128 * T::kConsumers);
    }
    for (int s = 0; s < T::kQBuffers; ++s) {
      ptx::mbarrier_init(&ss.q_bar[s].full, 1);
      // The consumers, and where O is staged their store warps (store.h), free a Q buffer.
      ptx::mbarrier_init(&ss.q_bar[s].empty, (128 + (kOStaged<D, kExact, QTerms> ? 32 : 0)) * T::kConsumers);
    }
    ptx::fence_mbarrier_init();
  }
  // Launched as the fold's programmatic dependent, beside it: a packed batch's tile_start is its first item.
  if (kPacked && tid == 0) wait_folded(params.kv.ready + p.batch * p.heads_kv, 1);
  __syncthreads();
  if constexpr (kPacked) sched.tile_start = params.kv.tile_start, sched.tiles = params.kv.tile_start[p.batch];

  if (wg == 0) {
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if (thread == 0) {
      // The rings of Q buffers and KV stages run on across the block's query tiles; a slot is refilled
      // once the consumers freed it on its previous round. (Waiting for the phase before a fresh
      // barrier's first, parity 1, returns at once: the first round needs no test.)
      RingPos<T::kQBuffers> q_at;
      RingPos<T::kStages> kv_at;
      for (int t = sched.next();; t = sched.next(), q_at.advance()) {
        ptx::mbarrier_wait(&ss.q_bar[q_at.stage].empty, q_at.phase ^ 1);
        ss.q_tile[q_at.stage] = t;  // published by the arrive on q_full (release), read after its wait
        if (t >= sched.tiles) {     // no tile left: the consumers stop here
          ptx::mbarrier_arrive(&ss.q_bar[q_at.stage].full);
          break;
        }
        const WorkTile w = sched.template at<kPacked>(t, p);
        const int hk = w.h / p.group;
        const int unit = w.b * p.heads_kv + hk;
        wait_folded(params.kv.ready + unit, params.kv.unit_count(unit));
        copy_q_tile(ss, params.kv, p, q_at.stage, w.b, w.h, hk, w.m_tile);
        for (int n = 0; n < w.n_tiles; ++n, kv_at.advance()) {
          ptx::mbarrier_wait(&ss.bar[kv_at.stage].empty, kv_at.phase ^ 1);
          copy_kv_tile(ss, params.kv, p.heads_kv, kv_at.stage, w.b, hk, n);
        }
      }
      // The fold has stored every item by now; this makes the kernel end after it, as work later in the
      // stream (the workspace's release) expects.
      ptx::griddep_wait();
    } else if (const int warp = thread / 32; kOStaged<D, kExact, QTerms> && (warp == 1 || warp == 2)) {
      if constexpr (kOStaged<D, kExact, QTerms>) store_o<D, kPacked>(ss, p, sched, params.out, warp - 1, thread % 32);
    }
  } else {
    ptx::setmaxnreg_inc<T::kConsumerRegs>();
    consume<kLse, kPacked>(ss, params.kv, p, sched, wg - 1, thread, p.softmax_scale * kLog2e);
  }
}

}  // namespace mxattn::kernels::hopper
