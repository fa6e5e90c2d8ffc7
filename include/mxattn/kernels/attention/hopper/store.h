// O's way out where it is staged (traits.h kOStaged): a consumer warpgroup writes its 64 rows of O into
// its stage in shared memory (epilogue.h) and goes on to its next query tile; a store warp of the
// producer warpgroup copies the stage to the output, by bulk tensor stores (one a 64-channel panel)
// through the output's tensor map where the map describes it (OutMap), else by plain 16- or 4-byte
// stores. The consumers never wait for O's global stores: waiting for them was ~5-6% of the call at 1k
// (H200, bench/prefill_notes.md v31).
//
// The hand-off between consumer warpgroup w and its store warp (the producer warpgroup's warp 1 + w), by
// named barriers of 160 threads, the warpgroup's and the warp's:
//
//   consumers   sync OStageFree  | write the stage, fence              | arrive OStageFull
//   store warp  arrive OStageFree (once, at the start);  then a tile at a time:
//               sync OStageFull  | store the stage, wait for its reads | arrive OStageFree
//
// Named barriers, not mbarriers, and the tile's place read by the store warp itself: the consumers hold no
// phase, pointer, map or leader test through their main loop (an mbarrier hand-off spilled there, v32; a
// leader thread's test held across it made D = 64's masked softmax keep predicates in registers, v33).
#pragma once
#include <cuda.h>

#include "mxattn/kernels/attention/hopper/scheduler.h"
#include "mxattn/kernels/attention/hopper/traits.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/ptx/bulk_tensor.h"
#include "mxattn/ptx/mbarrier.h"

namespace mxattn::kernels::hopper {

inline constexpr uint32_t kOStageThreads = 128 + 32;  // a consumer warpgroup and its store warp

// The output [B, S_q, H_q, D] as a tensor map of 16-bit elements (channels, rows, heads, batch entries),
// boxes of 64 channels x 64 rows, 128-byte swizzled as the stage; made on the host per call
// (launch_kernels.h). ok: the map describes the output (16-byte aligned base and strides); otherwise the
// store warp copies with plain stores. A packed batch's map spans batch x seq_q rows, a bound of its own
// rows, so it clips none: only whole 64-row boxes of a sequence go through it.
struct OutMap {
  CUtensorMap map;
  bool ok = false;
};

// The store warp of consumer warpgroup `wg` (lane: its lane). It follows the Q buffers as the consumers do,
// and takes each tile's place in the output from the tile's index there (counted in the buffer's empty
// barrier, so that the producer does not refill the buffer before it has read it), until one past the last.
template <int D, bool kPacked, typename Storage, typename Scheduler>
__device__ __forceinline__ void store_o(Storage& ss, const PrefillParams& p, const Scheduler& sched, const OutMap& out,
                                        int wg, int lane) {
  using Tile = typename decltype(ss.o_stage)::Tile;
  constexpr int kBlockM = Scheduler::kBlockM;
  const uint8_t* stage = ss.o_stage.o[wg];
  const uint32_t full = barrier_id(NamedBarrier::OStageFull, wg), free = barrier_id(NamedBarrier::OStageFree, wg);
  const bool vec16 = ((reinterpret_cast<uintptr_t>(p.out.data) |
                       uint64_t(p.out.stride[0] | p.out.stride[1] | p.out.stride[2]) * 2) & 15) == 0;
  ptx::named_barrier_arrive(free, kOStageThreads);
  for (RingPos<Storage::kQBuffers> q_at;; q_at.advance()) {
    ptx::named_barrier_sync(full, kOStageThreads);  // the tile's O is in the stage (or the consumers stopped)
    const int t = ss.q_tile[q_at.stage];
    ptx::mbarrier_arrive(&ss.q_bar[q_at.stage].empty);
    if (t >= sched.tiles) break;
    const WorkTile w = sched.template at<kPacked>(t, p);
    const int first = w.m_tile * kBlockM + 64 * wg;  // the warpgroup's first row in the sequence
    const int rows = w.sp.bad ? 0 : min(max(w.sp.seq_q - first, 0), 64), row = w.sp.q0 + first;
    // The map's rows end at S_q (unless packed), and rows of a box past them are not written.
    if (out.ok && (rows == 64 || !kPacked)) {
      if (lane == 0 && rows > 0) {
#pragma unroll
        for (int c = 0; c < D / 64; ++c)
          ptx::bulk_tensor_store_4d(&out.map, stage + c * Tile::kPanelBytes, 64 * c, row, w.h, w.sp.b);
        ptx::bulk_commit_group();
        ptx::bulk_wait_group_read<0>();
      }
      __syncwarp();
    } else {
      // 16 bytes (8 channels) at a time, row after row, a row's D / 8 pieces across the lanes.
      for (int i = lane; i < rows * (D / 8); i += 32) {
        const int r = i / (D / 8), c = i % (D / 8);
        const uint4 v = *reinterpret_cast<const uint4*>(stage + Tile::offset(r, 16 * c));
        uint16_t* at = out_row(p, w.sp.b, row + r, w.h).at + 8 * c;
        if (vec16) {
          *reinterpret_cast<uint4*>(at) = v;
        } else {
          uint32_t* x = reinterpret_cast<uint32_t*>(at);  // rows are 4-byte aligned (api/attention.h)
          x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
        }
      }
    }
    ptx::named_barrier_arrive(free, kOStageThreads);
  }
  if (lane == 0) ptx::bulk_wait_group<0>();  // the stores done before the block (and its shared memory) ends
}

// The consumer warpgroup's side: before writing its stage, until the store warp has read the last one.
__device__ __forceinline__ void o_stage_acquire(int wg) {
  ptx::named_barrier_sync(barrier_id(NamedBarrier::OStageFree, wg), kOStageThreads);
}
// After writing it (each thread its part): the stage to the store warp.
__device__ __forceinline__ void o_stage_release(int wg) {
  ptx::fence_proxy_async_shared();  // the stage's ordinary stores, read by the bulk tensor stores (async proxy)
  ptx::named_barrier_arrive(barrier_id(NamedBarrier::OStageFull, wg), kOStageThreads);
}

}  // namespace mxattn::kernels::hopper
