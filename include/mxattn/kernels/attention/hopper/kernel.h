// The Hopper prefill kernel (sm_90a): FP8 wgmma over MX inputs whose block scales are folded into
// E4M3 operands (fold.h, DESIGN.md §3); K and V come folded by the pre-pass (fold_kernel.h).
// One block per (128 query rows, query head, batch entry):
//
//   warpgroup 0  producer   one thread: per KV tile, a bulk copy of its K' tile and one of its V'^T tile
//                           into a kStages-deep ring of swizzled shared memory (producer.h)
//   warpgroups 1, 2         64 query rows each: Q folded into shared memory, then per KV tile, taking
//   consumers               turns on the tensor cores, S = Q'K'^T, online softmax (the tile's K factor
//                           read from global memory), O += P V'^T, and the epilogue (mainloop.h)
//
// Per stage, k_full and v_full complete when the producer's copies have landed (its arrive sets the
// bytes to expect, the copy completes them); consumers arrive on `empty` once their wgmma have read the
// stage.
#pragma once
#include "mxattn/kernels/attention/hopper/mainloop.h"
#include "mxattn/ptx/setmaxnreg.h"

namespace mxattn::kernels::hopper {

struct Params {
  PrefillParams p;
  FoldedKv kv;
};

template <int D>
__global__ void __launch_bounds__(Traits<D>::kThreads, 1) prefill_kernel(const __grid_constant__ Params params) {
  using T = Traits<D>;
  const PrefillParams& p = params.p;
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
      ptx::mbarrier_init(&ss.bar[s].k_full, 1);  // the producer's arrive, and the copy's bytes
      ptx::mbarrier_init(&ss.bar[s].v_full, 1);
      ptx::mbarrier_init(&ss.bar[s].empty, 128 * T::kConsumers);
    }
    ptx::fence_mbarrier_init();
  }
  build_value_table(ss.q_value, p.q_mx.format, tid, T::kThreads);
  build_e2m1_table(ss.e2m1, tid, T::kThreads);
  __syncthreads();

  if (wg == 0) {
    ptx::setmaxnreg_dec<T::kProducerRegs>();
    if (thread == 0) {
      RingPos<T::kStages> at;
      for (int n = 0; n < n_tiles; ++n, at.advance()) {
        if (n >= T::kStages) ptx::mbarrier_wait(&ss.bar[at.stage].empty, at.phase ^ 1);  // freed from its last round
        copy_kv_tile<D>(ss, params.kv, p.heads_kv, at.stage, b, hk, n);
      }
    }
  } else {
    ptx::setmaxnreg_inc<T::kConsumerRegs>();
    const float scale_log2 = p.softmax_scale * kLog2e;
    consume<D>(ss, params.kv, p, wg - 1, thread, b, h, hk, m0, n_tiles, fold_headroom(p.q_mx.format.elem), scale_log2);
  }
}

}  // namespace mxattn::kernels::hopper
