// The Hopper prefill kernel (sm_90a): FP8 wgmma over MX inputs whose block scales are folded into
// E4M3 operands (fold.h, DESIGN.md §3). One block per (128 query rows, query head, batch entry):
//
//   warpgroup 0  producer   V channel references; per KV tile: K and V codes -> folded E4M3 tiles
//                           in a kStages-deep ring of shared memory (producer.h)
//   warpgroups 1, 2         64 query rows each: Q' tile, then per KV tile S = Q'K'^T, online
//   consumers               softmax, O += P V'^T, and the epilogue (mainloop.h)
//
// Per stage, the producer arrives on k_full and v_full when its tiles are written; the consumers
// wait on them and arrive on `empty` once their wgmma have read the stage.
#pragma once
#include "mxattn/kernels/attention/hopper/mainloop.h"
#include "mxattn/ptx/setmaxnreg.h"

namespace mxattn::kernels::hopper {

template <int D>
__global__ void __launch_bounds__(Traits<D>::kThreads, 1) prefill_kernel(const __grid_constant__ PrefillParams p) {
  using T = Traits<D>;
  // The swizzled tiles need 1024-byte alignment, which dynamic shared memory does not promise: the
  // launch asks for 1024 bytes more and the storage starts at the next multiple.
  // (Offsetting the shared array itself, not a round trip through an integer, keeps the pointer in the
  // shared address space: the compiler then emits LDS/STS, not generic loads and stores.)
  extern __shared__ uint8_t smem_raw[];
  const uint32_t misalign = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) & 1023;
  auto& ss = *reinterpret_cast<SharedStorage<D>*>(smem_raw + ((1024 - misalign) & 1023));
  const int tid = threadIdx.x, wg = tid / 128, thread = tid % 128;
  // Causal blocks with more keys first: the longest ones start in the first wave.
  const int m_tiles = gridDim.x;
  const int m_tile = p.causal ? m_tiles - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int m0 = m_tile * T::kBlockM, h = blockIdx.y, b = blockIdx.z, hk = h / p.group;
  const int n_tiles = (prefill_kv_end(p, m0, T::kBlockM) + T::kBlockN - 1) / T::kBlockN;

  if (tid == 0) {
    for (int s = 0; s < T::kStages; ++s) {
      ptx::mbarrier_init(&ss.bar[s].k_full, 128);
      ptx::mbarrier_init(&ss.bar[s].v_full, 128);
      ptx::mbarrier_init(&ss.bar[s].empty, 128 * T::kConsumers);
    }
    ptx::fence_mbarrier_init();
  }
  build_value_table(ss.q_value, p.q_mx.format, tid, T::kThreads);
  build_value_table(ss.k_value, p.k.format, tid, T::kThreads);
  build_value_table(ss.v_value, p.v.format, tid, T::kThreads);
  build_e2m1_table(ss.e2m1, tid, T::kThreads);
  __syncthreads();

  if (wg == 0) {
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if (n_tiles == 0) return;
    v_channel_references<D>(ss, p, fold_headroom(p.v.format.elem), b, hk, thread);
    ptx::named_barrier_sync(1, 128);  // every channel reference before the first V tile
    const int k_headroom = fold_headroom(p.k.format.elem);
    using C = ProducerChunks<D>;
    const Element ke = p.k.format.elem, ve = p.v.format.elem;
    auto issue = [&](int n, uint32_t(&ek)[C::kKIter], uint32_t(&ev)[C::kVIter]) {
      const int raw = n % 2, j0 = n * T::kBlockN;
      with_codes(ke, [&](auto codes) { issue_k_tile<D>(codes, ss.raw_k[raw], ek, p, b, hk, j0, thread); });
      with_codes(ve, [&](auto codes) { issue_v_tile<D>(codes, ss.raw_v[raw], ev, p, b, hk, j0, thread); });
    };
    // Tile n: park its scale bytes (loaded in the previous step), issue tile n+1's copies and scale
    // bytes into the registers, then fold tile n.
    uint32_t ek[C::kKIter], ev[C::kVIter];
    issue(0, ek, ev);
    ptx::cp_async_commit_group();
    for (int n = 0; n < n_tiles; ++n) {
      const int stage = n % T::kStages, raw = n % 2, j0 = n * T::kBlockN;
      park_scale_bytes<D>(ss, ek, ev, thread);
      if (n + 1 < n_tiles) issue(n + 1, ek, ev);
      ptx::cp_async_commit_group();   // (empty at the last tile: the group count stays regular)
      ptx::cp_async_wait_group<1>();  // tile n's copies have landed
      StageBarriers& bar = ss.bar[stage];
      if (n >= T::kStages) ptx::mbarrier_wait(&bar.empty, ((n / T::kStages) - 1) & 1);
      with_codes(ke, [&](auto codes) { fold_k_tile<D>(codes, ss, stage, ss.raw_k[raw], p, k_headroom, j0, thread); });
      ptx::fence_proxy_async_shared();
      ptx::mbarrier_arrive(&bar.k_full);
      with_codes(ve, [&](auto codes) { fold_v_tile<D>(codes, ss, stage, ss.raw_v[raw], p, b, hk, j0, thread); });
      ptx::fence_proxy_async_shared();
      ptx::mbarrier_arrive(&bar.v_full);
    }
  } else {
    ptx::setmaxnreg_inc<T::kConsumerRegs>();
    const float scale_log2 = p.softmax_scale * kLog2e;
    consume<D>(ss, p, wg - 1, thread, b, h, m0, n_tiles, fold_headroom(p.q_mx.format.elem), scale_log2);
  }
}

}  // namespace mxattn::kernels::hopper
