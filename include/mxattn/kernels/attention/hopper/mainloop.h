// A consumer warpgroup's work on its 64 rows of a query tile: per KV tile S = Q'K'^T (wgmma, both
// operands from shared memory), the softmax, O += P V'^T (wgmma, P from registers); then the epilogue.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "mxattn/kernels/attention/hopper/producer.h"
#include "mxattn/kernels/attention/hopper/scheduler.h"
#include "mxattn/kernels/attention/hopper/softmax.h"
#include "mxattn/ptx/mbarrier.h"
#include "mxattn/ptx/wgmma.h"

namespace mxattn::kernels::hopper {

// Shared-memory descriptors of a K-major tile (wgmma.h smem_desc). Descriptors of one tile differ only
// in the start address field (bits 0-13, the byte address / 16, which stays under 2^14 for any shared
// address): the tile's descriptor is made once, and a k-step, a row offset or a stage is a 32-bit
// addition to its lower word (a 64-bit one costs a carry and twice the moves into uniform registers).
template <typename Tile>
__device__ __forceinline__ uint64_t tile_desc(const uint8_t* tile) {
  return ptx::smem_desc(tile, Tile::kGroupBytes, Tile::kWidth == 128 ? ptx::Swizzle::B128 : ptx::Swizzle::B64);
}
__device__ __forceinline__ uint64_t desc_plus(uint64_t desc, uint32_t bytes) {
  return (desc & 0xFFFFFFFF00000000ull) | (uint32_t(desc) + (bytes >> 4));
}
template <typename Tile>
__device__ __forceinline__ uint64_t desc_at(uint64_t tile, int row0, int k0) {
  return desc_plus(tile, Tile::desc_offset(row0, k0));
}

// S (64 x N) = Q' (64 x D) K'^T (q: the descriptor of this warpgroup's rows, k: of the stage's K tile).
// The first k-step writes S without reading it: S's old values (the previous tile's P) are dead, and no
// register must keep them while the wgmma run.
template <int N, int D, typename QTile, typename KTile>
__device__ __forceinline__ void mma_qk(float (&s)[N / 2], uint64_t q, uint64_t k) {
#pragma unroll
  for (int ks = 0; ks < D / 32; ++ks) {
    const uint64_t a = desc_at<QTile>(q, 0, 32 * ks), b = desc_at<KTile>(k, 0, 32 * ks);
    if constexpr (N == 64) ks == 0 ? ptx::wgmma_m64n64k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n64k32_f32_e4m3_ss(s, a, b, 1);
    else if constexpr (N == 128) ks == 0 ? ptx::wgmma_m64n128k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n128k32_f32_e4m3_ss(s, a, b, 1);
    else if constexpr (N == 192) ks == 0 ? ptx::wgmma_m64n192k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n192k32_f32_e4m3_ss(s, a, b, 1);
    else ks == 0 ? ptx::wgmma_m64n256k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n256k32_f32_e4m3_ss(s, a, b, 1);
  }
}

// O (64 x D) += P (64 x N, registers) V'^T (vt: the descriptor of the stage's V tile).
template <int N, int D, typename VTile>
__device__ __forceinline__ void mma_pv(float (&o)[D / 2], const uint32_t (&p)[N / 32][4], uint64_t vt) {
#pragma unroll
  for (int kk = 0; kk < N / 32; ++kk) {
    const uint64_t b = desc_at<VTile>(vt, 0, 32 * kk);
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

// The consumer warpgroups' turns on the tensor cores (ping-pong): a warpgroup issues its wgmma between
// wait() and pass(), and the turns alternate, so one warpgroup's wgmma run under the other's softmax
// instead of both sharing the tensor cores and then both waiting on the exp2 unit. Named barrier
// kTurnBarrier + w counts 256 threads: warpgroup w's wait and the other's pass (the first warpgroup's
// first turn is its own pass, made once at the start). A block's warpgroups take equally many turns,
// so only the last pass is left unclaimed when the block ends.
struct WgTurns {
  int wg;
  __device__ __forceinline__ explicit WgTurns(int w) : wg(w) {
    if (wg == 0) ptx::named_barrier_arrive(kTurnBarrier, 256);
  }
  __device__ __forceinline__ void wait() const { ptx::named_barrier_sync(kTurnBarrier + wg, 256); }
  __device__ __forceinline__ void pass() const { ptx::named_barrier_arrive(kTurnBarrier + (1 - wg), 256); }
};

// A thread's two rows of O (row0, row0 + 8) in the output's type: O times V's channel factors times the
// rows' f (1 / row sum, or 0: zeros). One 64-bit address a row, the pairs at constant offsets from it.
template <typename Out, int D>
__device__ __forceinline__ void store_rows(const PrefillParams& p, const float (&o)[D / 2], const float* v_factor,
                                           const float (&f)[2], int b, int h, int row0, int t) {
  using Pair = std::conditional_t<std::is_same_v<Out, __half>, __half2, __nv_bfloat162>;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= p.seq_q) continue;
    Pair* dst = reinterpret_cast<Pair*>(static_cast<Out*>(p.out.data) + b * p.out.stride[0] +
                                        int64_t(row) * p.out.stride[1] + h * p.out.stride[2] + 2 * t);
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      const float2 vf = *reinterpret_cast<const float2*>(&v_factor[8 * i + 2 * t]);
      // (f = 0: zeros, whatever O and the factors hold.)
      const float x = f[r] == 0.0f ? 0.0f : o[4 * i + 2 * r] * vf.x * f[r];
      const float y = f[r] == 0.0f ? 0.0f : o[4 * i + 2 * r + 1] * vf.y * f[r];
      if constexpr (std::is_same_v<Out, __half>) dst[4 * i] = __floats2half2_rn(x, y);
      else dst[4 * i] = __floats2bfloat162_rn(x, y);
    }
  }
}

// The query tile a consumer warpgroup works on, as the producer announced it in a Q buffer.
// (Its index and what the loop reads each KV tile; the rest is derived where needed, which keeps the
// registers the main loop holds to what it uses.)
struct ConsumerTile {
  int index;  // the scheduler's; tiles or more: one past the last, the block is done
  int buf, m0, n_tiles;
};

// Consumer warpgroup `wg` (0 or 1) of the block: its 64 rows (64 wg ..) of each query tile the producer
// announces in the Q buffers, in turn, until one past the last; the turns and the KV ring run on from
// tile to tile.
//
// Per KV tile n: S(n) = Q'K'^T, the softmax of S(n) into P(n), O += P(n) V'^T. The two warpgroups take
// turns on the tensor cores (WgTurns): in its turn a warpgroup issues S(n) and P(n-1) V'^T as two
// groups, then passes the turn. Its softmax of S(n) starts once the first group has completed and runs
// while P(n-1) V'^T and the other warpgroup's wgmma do (FA3's overlap inside a warpgroup and ping-pong
// between them). O's rescale and P(n)'s packing wait for P(n-1) V'^T: it reads O and P.
// From one query tile to the next the pipeline runs on: the last P V'^T of a tile and S(0) of the next
// go in one turn, and the epilogue of the one runs while the other's S(0) does.
template <int D>
__device__ void consume(SharedStorage<D>& ss, const Folded& kv, const PrefillParams& p,
                        const TileScheduler<Traits<D>::kBlockM, Traits<D>::kBlockN>& sched, int wg, int thread,
                        float scale_log2) {
  using T = Traits<D>;
  using QTile = typename T::QTile;
  constexpr int N = T::kBlockN;
  using Ring = RingPos<T::kStages>;
  using Yes = std::true_type;
  using No = std::false_type;
  const WgTurns turns{wg};
  const int warp = __shfl_sync(0xffffffffu, thread / 32, 0), lane = thread % 32, g = lane / 4, t = lane % 4;
  const int q_row0 = 64 * wg;                  // this warpgroup's rows in the Q tile
  const int my_row = q_row0 + 16 * warp + g;  // this thread's rows in it: my_row, my_row + 8
  const int diag = p.seq_kv - p.seq_q;

  // Accumulators live across the loop in registers of their own: declared (and defined) once, so the
  // compiler does not copy them between wgmma groups (which would also serialize the wgmma).
  float o[D / 2], s[N / 2];
  uint32_t pa[N / 32][4];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s[i] = 0.0f;
  WgSoftmax<N> sm;

  // Epilogue: normalize, apply V's channel factors, write O and the log-sum-exp; then the Q buffer is
  // free (the tile's wgmma have completed, the epilogue has read v_factor). A tile without keys writes
  // zeros (its rows saw no key: O = 0, whatever its channel factors).
  auto epilogue = [&](const ConsumerTile& c) {
    const WorkTile w = sched.at(c.index, p);
    const int row = c.m0 + my_row;
    sm.finish();
    const float f[2] = {c.n_tiles ? sm.inv_sum(0) : 0.0f, c.n_tiles ? sm.inv_sum(1) : 0.0f};
    if (p.out.fp16) store_rows<__half, D>(p, o, ss.v_factor[c.buf], f, w.b, w.h, row, t);
    else store_rows<__nv_bfloat16, D>(p, o, ss.v_factor[c.buf], f, w.b, w.h, row, t);
    if (p.lse && t == 0)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (row + 8 * r < p.seq_q) p.lse[(int64_t(w.b) * p.heads_q + w.h) * p.seq_q + row + 8 * r] = sm.lse(r);
    ptx::mbarrier_arrive(&ss.q_bar[c.buf].empty);
  };

  // The next query tile with keys (tiles without, causal rows before the first key, get their zeros
  // here), or one past the last.
  RingPos<kQBuffers> q_at;
  auto fetch = [&] {
    for (;;) {
      ptx::mbarrier_wait(&ss.q_bar[q_at.stage].full, q_at.phase);
      // (Broadcast from lane 0: the compiler then knows the index is warp-uniform and keeps it and what
      // derives from it, the tile's coordinates and loop bounds, in uniform registers; read per thread,
      // they took vector registers and the consumers spilled.)
      ConsumerTile c{__shfl_sync(0xffffffffu, ss.q_tile[q_at.stage], 0), q_at.stage, 0, 0};
      q_at.advance();
      if (c.index >= sched.tiles) return c;
      const WorkTile w = sched.at(c.index, p);
      c.m0 = w.m_tile * T::kBlockM, c.n_tiles = w.n_tiles;
      if (c.n_tiles > 0) return c;
      sm = WgSoftmax<N>{};
      epilogue(c);
    }
  };
  auto q_desc = [&](const ConsumerTile& c) { return desc_at<QTile>(tile_desc<QTile>(ss.q[c.buf]), q_row0, 0); };

  static_assert(sizeof(ss.k[0]) == T::KTile::kBytes && sizeof(ss.vt[0]) == T::VTile::kBytes, "stages back to back");
  const uint64_t k_desc = tile_desc<typename T::KTile>(ss.k[0]), vt_desc = tile_desc<typename T::VTile>(ss.vt[0]);

  // A turn: S (kQk, Q' tile q, K from stage qk) and P V'^T (kPv, V from stage pv), a commit group each,
  // P V'^T first when kPvFirst. Compile-time flags: a wgmma under a run-time branch makes ptxas serialize
  // every wgmma of the kernel. The barrier waits come before the turn, so the other warpgroup never
  // waits on them.
  auto issue = [&](uint64_t q, Ring qk_at, Ring pv_at, auto kQk, auto kPv, auto kPvFirst) {
    constexpr bool qk = decltype(kQk)::value, pv = decltype(kPv)::value, pv_first = decltype(kPvFirst)::value;
    if constexpr (qk && pv)
      ptx::mbarrier_wait_both(&ss.bar[qk_at.stage].k_full, qk_at.phase, &ss.bar[pv_at.stage].v_full, pv_at.phase);
    else if constexpr (qk) ptx::mbarrier_wait(&ss.bar[qk_at.stage].k_full, qk_at.phase);
    else ptx::mbarrier_wait(&ss.bar[pv_at.stage].v_full, pv_at.phase);
    turns.wait();
    fence_operands(o);  // (not S: the first k-step of S = Q'K'^T only writes it)
    ptx::wgmma_fence();
    auto mma_pv_group = [&] {
      mma_pv<N, D, typename T::VTile>(o, pa, desc_plus(vt_desc, pv_at.stage * T::VTile::kBytes));
      ptx::wgmma_commit_group();
    };
    if constexpr (pv && pv_first) mma_pv_group();
    if constexpr (qk) {
      mma_qk<N, D, QTile, typename T::KTile>(s, q, desc_plus(k_desc, qk_at.stage * T::KTile::kBytes));
      ptx::wgmma_commit_group();
    }
    if constexpr (pv && !pv_first) mma_pv_group();
    turns.pass();
  };
  // P V'^T (from stage pv_at) has completed: O and P's registers are free, and so is its stage.
  auto pv_released = [&](Ring pv_at) {
    fence_operands(o);
    ptx::mbarrier_arrive(&ss.bar[pv_at.stage].empty);
  };

  ConsumerTile cur{};  // the tile the softmax works on
  const float* k_factors = nullptr;  // the tile's KV head's, one per KV tile
  float k_factor = 0.0f;             // the next KV tile's, loaded a softmax ahead
  // A tile's start: its softmax state and factors (after the previous tile's epilogue has read them).
  // (O is zeroed by the tile's first softmax: not while a wgmma is in flight, which ptxas would take
  // for a write into its accumulators and serialize every wgmma.)
  auto begin = [&](const ConsumerTile& c) {
    sm = WgSoftmax<N>{};
    sm.scale[0] = scale_log2 * ss.q_scale[c.buf][my_row];
    sm.scale[1] = scale_log2 * ss.q_scale[c.buf][my_row + 8];
    const WorkTile w = sched.at(c.index, p);
    k_factors = kv.k_factor + kv.kv_tile(w.b, w.h / p.group, 0, p.heads_kv);
    k_factor = c.n_tiles > 0 ? __ldg(k_factors) : 0.0f;
  };
  // The softmax of S(n) of the current tile into P(n) (after P(n-1) V'^T, when kPv, has completed: it
  // reads O and P). The first tile is peeled, not branched on: a wait_group under a run-time branch
  // serializes the wgmma.
  auto softmax = [&](int n, Ring pv_at, auto kPv) {
    fence_operands(s);
    const int key0 = n * N, row0 = cur.m0 + my_row;
    const TileMask mask{key0 + N > p.seq_kv || (p.causal && key0 + N - 1 > cur.m0 + q_row0 + diag), key0, p.seq_kv,
                        diag, p.causal};
    float alpha[2];
    const float kf = k_factor;
    if (n + 1 < cur.n_tiles) k_factor = __ldg(k_factors + n + 1);  // lands while the next wgmma run
    const bool rescale = mask.active ? sm.template update<true>(s, kf, mask, row0, t, alpha)
                                     : sm.template update<false>(s, kf, mask, row0, t, alpha);
    if constexpr (decltype(kPv)::value) {
      ptx::wgmma_wait_group<0>();
      pv_released(pv_at);
    } else {
#pragma unroll
      for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
    }
    if (rescale) {
#pragma unroll
      for (int i = 0; i < D / 8; ++i)
        o[4 * i] *= alpha[0], o[4 * i + 1] *= alpha[0], o[4 * i + 2] *= alpha[1], o[4 * i + 3] *= alpha[1];
    }
#pragma unroll
    for (int kk = 0; kk < N / 32; ++kk) WgSoftmax<N>::pack_p(s, kk, pa[kk]);
  };

  // Every wgmma below is outside run-time branches (the loop's exit comes before its turn): ptxas
  // tracks the groups in flight only along straight code, and serializes every wgmma otherwise.
  Ring next_kv, last;  // the stage the next S reads, the one the last S read
  cur = fetch();
  if (cur.index >= sched.tiles) return;
  begin(cur);
  last = next_kv, next_kv.advance();
  issue(q_desc(cur), last, last, Yes{}, No{}, No{});
  ptx::wgmma_wait_group<0>();
  softmax(0, last, No{});
  for (;;) {
    for (int n = 1; n < cur.n_tiles; ++n) {
      const Ring pv_at = last;
      last = next_kv, next_kv.advance();
      issue(q_desc(cur), last, pv_at, Yes{}, Yes{}, No{});
      ptx::wgmma_wait_group<1>();  // S(n) has completed; P(n-1) V'^T may still run
      softmax(n, pv_at, Yes{});
    }
    const ConsumerTile next = fetch();
    if (next.index >= sched.tiles) break;
    // The last P V'^T of this tile and S(0) of the next in one turn; this tile's epilogue runs while
    // that S does.
    const Ring pv_at = last;
    last = next_kv, next_kv.advance();
    issue(q_desc(next), last, pv_at, Yes{}, Yes{}, Yes{});
    ptx::wgmma_wait_group<1>();  // P V'^T has completed; S(0) of the next tile may still run
    pv_released(pv_at);
    epilogue(cur);
    cur = next;
    begin(cur);
    ptx::wgmma_wait_group<0>();
    softmax(0, last, No{});
  }
  issue(q_desc(cur), last, last, No{}, Yes{}, No{});
  ptx::wgmma_wait_group<0>();
  pv_released(last);
  epilogue(cur);
}

}  // namespace mxattn::kernels::hopper
