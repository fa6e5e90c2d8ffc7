// A consumer warpgroup's work on one query tile of 64 rows: fold its Q rows into shared memory, then
// per KV tile S = Q'K'^T (wgmma, both operands from shared memory), the softmax, O += P V'^T (wgmma,
// P from registers), and the epilogue.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mxattn/kernels/attention/hopper/producer.h"
#include "mxattn/kernels/attention/hopper/softmax.h"
#include "mxattn/ptx/mbarrier.h"
#include "mxattn/ptx/wgmma.h"

namespace mxattn::kernels::hopper {

template <typename Tile>
__device__ __forceinline__ uint64_t tile_desc(const uint8_t* tile, int row0, int k0) {
  return ptx::smem_desc(tile + Tile::desc_offset(row0, k0), Tile::kGroupBytes,
                        Tile::kWidth == 128 ? ptx::Swizzle::B128 : ptx::Swizzle::B64);
}

// S (64 x N) = Q' (64 x D) K'^T.
template <int N, int D, typename QTile, typename KTile>
__device__ __forceinline__ void mma_qk(float (&s)[N / 2], const uint8_t* q, int q_row0, const uint8_t* k) {
#pragma unroll
  for (int ks = 0; ks < D / 32; ++ks) {
    const uint64_t a = tile_desc<QTile>(q, q_row0, 32 * ks), b = tile_desc<KTile>(k, 0, 32 * ks);
    if constexpr (N == 64) ptx::wgmma_m64n64k32_f32_e4m3_ss(s, a, b, ks > 0);
    else if constexpr (N == 128) ptx::wgmma_m64n128k32_f32_e4m3_ss(s, a, b, ks > 0);
    else ptx::wgmma_m64n256k32_f32_e4m3_ss(s, a, b, ks > 0);
  }
}

// O (64 x D) += P (64 x N, registers) V'^T.
template <int N, int D, typename VTile>
__device__ __forceinline__ void mma_pv(float (&o)[D / 2], const uint32_t (&p)[N / 32][4], const uint8_t* vt) {
#pragma unroll
  for (int kk = 0; kk < N / 32; ++kk) {
    const uint64_t b = tile_desc<VTile>(vt, 0, 32 * kk);
    if constexpr (D == 64) ptx::wgmma_m64n64k32_f32_e4m3_rs(o, p[kk], b, 1);
    else if constexpr (D == 128) ptx::wgmma_m64n128k32_f32_e4m3_rs(o, p[kk], b, 1);
    else ptx::wgmma_m64n256k32_f32_e4m3_rs(o, p[kk], b, 1);
  }
}

template <int N>
__device__ __forceinline__ void fence_operands(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) ptx::wgmma_fence_operand(x[i]);
}

// Consumer warpgroup `wg` (0 or 1) of the block: query rows m0 + 64 wg .. + 63; n_tiles KV tiles.
template <int D>
__device__ void consume(SharedStorage<D>& ss, const FoldedKv& kv, const PrefillParams& p, int wg, int thread, int b,
                        int h, int hk, int m0, int n_tiles, int q_headroom, float scale_log2) {
  using T = Traits<D>;
  constexpr int N = T::kBlockN;
  const int warp = thread / 32, lane = thread % 32, g = lane / 4, t = lane % 4;
  const int q_row0 = 64 * wg;                    // this warpgroup's rows in the Q tile
  const int row0 = m0 + q_row0 + 16 * warp + g;  // this thread's rows: row0, row0 + 8

  with_codes(p.q_mx.format.elem, [&](auto codes) {
    fold_rows_along_d<D, typename T::QTile>(codes, ss.q, q_row0, ss.q_scale + q_row0, p.q_mx, {ss.q_value, ss.e2m1},
                                            q_headroom, b, m0 + q_row0, h, 64, p.seq_q, thread);
  });
  ptx::fence_proxy_async_shared();
  ptx::named_barrier_sync(2 + wg, 128);

  WgSoftmax<N> sm;
  sm.scale[0] = scale_log2 * ss.q_scale[q_row0 + 16 * warp + g];
  sm.scale[1] = scale_log2 * ss.q_scale[q_row0 + 16 * warp + g + 8];
  // Accumulators live across the loop in registers of their own: declared (and defined) once, so the
  // compiler does not copy them between wgmma groups (which would also serialize the wgmma).
  float o[D / 2], s[N / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s[i] = 0.0f;

  const int diag = p.seq_kv - p.seq_q;
  for (int n = 0; n < n_tiles; ++n) {
    const int stage = n % T::kStages;
    const uint32_t phase = (n / T::kStages) & 1;
    StageBarriers& bar = ss.bar[stage];

    ptx::mbarrier_wait(&bar.k_full, phase);
    ptx::fence_proxy_async_shared();  // the copies' writes, acquired through the barrier, before wgmma reads
    fence_operands(s);
    ptx::wgmma_fence();
    mma_qk<N, D, typename T::QTile, typename T::KTile>(s, ss.q, q_row0, ss.k[stage]);
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();
    fence_operands(s);

    const int key0 = n * N;
    const TileMask mask{key0 + N > p.seq_kv || (p.causal && key0 + N - 1 > m0 + q_row0 + diag), key0, p.seq_kv, diag,
                        p.causal};
    float alpha[2];
    const bool rescale = mask.active ? sm.template update<true>(s, ss.k_scale[stage], mask, row0, t, alpha)
                                     : sm.template update<false>(s, ss.k_scale[stage], mask, row0, t, alpha);
    if (rescale) {
#pragma unroll
      for (int i = 0; i < D / 8; ++i) o[4 * i] *= alpha[0], o[4 * i + 1] *= alpha[0], o[4 * i + 2] *= alpha[1], o[4 * i + 3] *= alpha[1];
    }
    uint32_t pa[N / 32][4];
#pragma unroll
    for (int kk = 0; kk < N / 32; ++kk) WgSoftmax<N>::pack_p(s, kk, pa[kk]);

    ptx::mbarrier_wait(&bar.v_full, phase);
    ptx::fence_proxy_async_shared();
    fence_operands(o);
    ptx::wgmma_fence();
    mma_pv<N, D, typename T::VTile>(o, pa, ss.vt[stage]);
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();
    fence_operands(o);
    ptx::mbarrier_arrive(&bar.empty);
  }

  // Epilogue: normalize, apply V's channel factors, write O and the log-sum-exp.
  sm.finish();
  const float* v_factor = kv.v_factor + (int64_t(b) * p.heads_kv + hk) * D;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= p.seq_q) continue;
    const float f = sm.inv_sum(r);
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      const int d = 8 * i + 2 * t;
      const float2 vf = *reinterpret_cast<const float2*>(v_factor + d);
      // A row that saw no key has O = 0 (and its channel factors may be anything): write zeros.
      store_out_pair(p, b, row, h, d, n_tiles ? o[4 * i + 2 * r] * vf.x * f : 0.0f,
                        n_tiles ? o[4 * i + 2 * r + 1] * vf.y * f : 0.0f);
    }
    if (p.lse && t == 0) p.lse[(int64_t(b) * p.heads_q + h) * p.seq_q + row] = sm.lse(r);
  }
}

}  // namespace mxattn::kernels::hopper
