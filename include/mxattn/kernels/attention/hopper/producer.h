// The producer's copies of the folded Q, K and V tiles (fold_kernel.h) into the swizzled shared memory
// where wgmma reads them: one thread, bulk copies that complete on the buffers' barriers.
#pragma once
#include "mxattn/kernels/attention/hopper/fold_kernel.h"
#include "mxattn/kernels/attention/hopper/traits.h"
#include "mxattn/ptx/cp_async.h"
#include "mxattn/ptx/mbarrier.h"

namespace mxattn::kernels::hopper {

// The producer's copies of query tile `tile` of (b, h) into Q buffer `buf`: its Q' tile, its rows' factors
// and V's channel factors and first NaN keys of (b, hk), each laid out as the buffer holds it
// (fold_kernel.h), completing on the buffer's q_full barrier.
template <int D, bool kExact, int QTerms>
__device__ __forceinline__ void copy_q_tile(SharedStorage<D, kExact, QTerms>& ss, const Folded& f, const PrefillParams& p,
                                            int buf, int b, int h, int hk, int tile) {
  using T = Traits<D, kExact>;
  constexpr uint32_t kQ = QTerms * T::QTile::kBytes, kFactors = T::kBlockM * 4, kV = D * 4;
  static_assert(sizeof(ss.q[0]) == kQ && sizeof(ss.q_scale[0]) == kFactors && sizeof(ss.v_factor[0]) == kV &&
                    sizeof(ss.v_nan_key[0]) == kV,
                "buffers");
  const int64_t at = f.q_tile(b, h, tile, p.heads_q);
  uint64_t* full = &ss.q_bar[buf].full;
  ptx::mbarrier_arrive_expect_tx(full, kQ + kFactors + 2 * kV);
  ptx::bulk_copy_g2s(ss.q[buf], f.q + at * kQ, kQ, full);
  ptx::bulk_copy_g2s(ss.q_scale[buf], f.q_factor + at * T::kBlockM, kFactors, full);
  ptx::bulk_copy_g2s(ss.v_factor[buf], f.v_factor + (int64_t(b) * p.heads_kv + hk) * D, kV, full);
  ptx::bulk_copy_g2s(ss.v_nan_key[buf], f.v_nan_key + (int64_t(b) * p.heads_kv + hk) * D, kV, full);
}

// The producer's copies of KV tile `tile` into stage `stage`: one bulk copy of its K' tile and one of its
// V'^T tile (each laid out as the stage holds it, fold_kernel.h), issued by one thread, each completing
// on its barrier through the barrier's transaction count.
template <int D, bool kExact, int QTerms>
__device__ __forceinline__ void copy_kv_tile(SharedStorage<D, kExact, QTerms>& ss, const Folded& kv, int heads_kv,
                                             int stage, int b, int hk, int tile) {
  using T = Traits<D, kExact>;
  constexpr uint32_t kK = T::KTile::kBytes, kV = T::VTile::kBytes;
  const int64_t at = kv.kv_tile(b, hk, tile, heads_kv);
  StageBarriers& bar = ss.bar[stage];
  ptx::mbarrier_arrive_expect_tx(&bar.k_full, kK + 16);
  ptx::bulk_copy_g2s(ss.k[stage], kv.k + at * kK, kK, &bar.k_full);
  ptx::bulk_copy_g2s(ss.k_factor[stage], kv.k_factor + (at & ~int64_t(3)), 16, &bar.k_full);  // (k_f is padded)
  ptx::mbarrier_arrive_expect_tx(&bar.v_full, kV);
  ptx::bulk_copy_g2s(ss.vt[stage], kv.vt + at * kV, kV, &bar.v_full);
}

}  // namespace mxattn::kernels::hopper
