// A consumer warpgroup's work on its 64 rows of a query tile: per KV tile S = Q'K'^T (wgmma, both
// operands from shared memory), the softmax, O += P V'^T (wgmma, P from registers); then the epilogue.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "mxattn/kernels/attention/hopper/accumulate.h"
#include "mxattn/kernels/attention/hopper/epilogue.h"
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

// A fragments of P over a tile's N keys: 32 bytes of keys each, E4M3 or (kExact) BF16.
template <int N, bool kExact>
inline constexpr int PSteps = N * (kExact ? 2 : 1) / 32;

// S (64 x N) = Q' (64 x D) K'^T (q: the descriptor of this warpgroup's rows, k: of the stage's K tile),
// summed over Q's terms (traits.h SharedStorage: the second term's tile follows the first).
// The first k-step writes S without reading it: S's old values (the previous tile's P) are dead, and no
// register must keep them while the wgmma run.
template <int N, int D, int QTerms, typename QTile, typename KTile>
__device__ __forceinline__ void mma_qk(float (&s)[N / 2], uint64_t q, uint64_t k) {
#pragma unroll
  for (int ks = 0; ks < QTerms * D / 32; ++ks) {
    const uint64_t a = desc_plus(desc_at<QTile>(q, 0, 32 * (ks % (D / 32))), ks / (D / 32) * QTile::kBytes);
    const uint64_t b = desc_at<KTile>(k, 0, 32 * (ks % (D / 32)));
    if constexpr (N == 64) ks == 0 ? ptx::wgmma_m64n64k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n64k32_f32_e4m3_ss(s, a, b, 1);
    else if constexpr (N == 128) ks == 0 ? ptx::wgmma_m64n128k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n128k32_f32_e4m3_ss(s, a, b, 1);
    else if constexpr (N == 192) ks == 0 ? ptx::wgmma_m64n192k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n192k32_f32_e4m3_ss(s, a, b, 1);
    else ks == 0 ? ptx::wgmma_m64n256k32_f32_e4m3_ss_zero(s, a, b) : ptx::wgmma_m64n256k32_f32_e4m3_ss(s, a, b, 1);
  }
}

// O (64 x D) (+)= P (64 x N, registers) V'^T (vt: the descriptor of the stage's V tile) into the
// accumulator of accumulate.h: kFresh, this tile's share alone (the first k-step writes the accumulator
// without reading it). Unless kExactSum (softmax.h), l (64 x 8) = P times the ones tile (ones: its
// descriptor): l's column 0 is each row's sum of this tile's P. Where the accumulator has room for l after
// O (accumulate.h ORegisters) the ones tile's rows follow V'^T's (traits.h kSumsInPv) and one wgmma of
// N = D + 8 makes both. P is E4M3 (k32 steps) or, kExact, BF16 (k16 steps): a step is 32 bytes of V'^T's
// rows either way.
template <int N, int D, bool kExact, bool kFresh, bool kExactSum, typename VTile, typename OnesTile, int kAcc>
__device__ __forceinline__ void mma_pv(float (&acc)[kAcc], float (&l)[4], const uint32_t (&p)[PSteps<N, kExact>][4],
                                       uint64_t vt, uint64_t ones) {
  constexpr bool kSumsInPv = kAcc == D / 2 + 4 && !kExactSum;
  float(&o)[D / 2] = *reinterpret_cast<float(*)[D / 2]>(acc);
#pragma unroll
  for (int kk = 0; kk < PSteps<N, kExact>; ++kk) {
    const uint64_t b = desc_at<VTile>(vt, 0, 32 * kk);
    const bool zero = kFresh && kk == 0;
    if constexpr (kSumsInPv) {
      static_assert(!kExact && D == 128 && kFresh, "sums beside O: D = 128's E4M3 P V'^T (traits.h)");
      zero ? ptx::wgmma_m64n136k32_f32_e4m3_rs_zero(acc, p[kk], b) : ptx::wgmma_m64n136k32_f32_e4m3_rs(acc, p[kk], b, 1);
    } else if constexpr (kExact) {
      static_assert(!kFresh, "the exact mode's O runs on (accumulate.h OPlain)");
      if constexpr (D == 64) ptx::wgmma_m64n64k16_f32_bf16_rs(o, p[kk], b, 1);
      else if constexpr (D == 128) ptx::wgmma_m64n128k16_f32_bf16_rs(o, p[kk], b, 1);
      else ptx::wgmma_m64n256k16_f32_bf16_rs(o, p[kk], b, 1);
      if constexpr (!kExactSum) ptx::wgmma_m64n8k16_f32_bf16_rs(l, p[kk], desc_at<OnesTile>(ones, 0, 32 * kk), kk > 0);
    } else {
      if constexpr (D == 64) zero ? ptx::wgmma_m64n64k32_f32_e4m3_rs_zero(o, p[kk], b) : ptx::wgmma_m64n64k32_f32_e4m3_rs(o, p[kk], b, 1);
      else if constexpr (D == 128) zero ? ptx::wgmma_m64n128k32_f32_e4m3_rs_zero(o, p[kk], b) : ptx::wgmma_m64n128k32_f32_e4m3_rs(o, p[kk], b, 1);
      else zero ? ptx::wgmma_m64n256k32_f32_e4m3_rs_zero(o, p[kk], b) : ptx::wgmma_m64n256k32_f32_e4m3_rs(o, p[kk], b, 1);
      if constexpr (!kExactSum && !kSumsInPv)
        ptx::wgmma_m64n8k32_f32_e4m3_rs(l, p[kk], desc_at<OnesTile>(ones, 0, 32 * kk), kk > 0);
    }
  }
}

template <int N>
__device__ __forceinline__ void fence_operands(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) ptx::wgmma_fence_operand(x[i]);
}

// The consumer warpgroups' turns on the tensor cores (ping-pong): a warpgroup issues its wgmma between
// wait() and pass(), and the turns alternate, so one warpgroup's wgmma run under the other's softmax
// instead of both sharing the tensor cores and then both waiting on the exp2 unit. Warpgroup w's named
// barrier Turn counts 256 threads: its wait and the other's pass (the first warpgroup's first turn is its
// own pass, made once at the start). A block's warpgroups take equally many turns,
// so only the last pass is left unclaimed when the block ends.
struct WgTurns {
  int wg;
  __device__ __forceinline__ explicit WgTurns(int w) : wg(w) {
    if (wg == 0) ptx::named_barrier_arrive(barrier_id(NamedBarrier::Turn, 0), 256);
  }
  __device__ __forceinline__ void wait() const { ptx::named_barrier_sync(barrier_id(NamedBarrier::Turn, wg), 256); }
  __device__ __forceinline__ void pass() const { ptx::named_barrier_arrive(barrier_id(NamedBarrier::Turn, 1 - wg), 256); }
};

// Consumer warpgroup `wg` (0 or 1) on one query tile: rows m0 + 64 wg .. + 63 of head h, sequence b (its
// span sp, params.h), whose Q' tile and factors sit in Q buffer `buf`; n_tiles KV tiles from the ring
// position `ring` on (left at the next free one).
template <bool kLse, int D, bool kExact, int QTerms>
__device__ __forceinline__ void consume_tile(SharedStorage<D, kExact, QTerms>& ss, const Folded& kv, const PrefillParams& p,
                                             const WgTurns& turns, RingPos<Traits<D, kExact>::kStages>& ring, int buf, int wg,
                                             int thread, int b, int h, int hk, int m0, int n_tiles, const SeqSpan& sp,
                                             float scale_log2) {
  using T = Traits<D, kExact>;
  constexpr int N = T::kBlockN;
  const int warp = __shfl_sync(0xffffffffu, thread / 32, 0), lane = thread % 32, g = lane / 4, t = lane % 4;
  const int q_row0 = 64 * wg;                    // this warpgroup's rows in the Q tile
  const int row0 = m0 + q_row0 + 16 * warp + g;  // this thread's rows: row0, row0 + 8

  WgSoftmax<N, kLse> sm;  // the LSE needs P's exact sums (softmax.h)
  sm.scale[0] = scale_log2 * ss.q_scale[buf][q_row0 + 16 * warp + g];
  sm.scale[1] = scale_log2 * ss.q_scale[buf][q_row0 + 16 * warp + g + 8];
  // Accumulators live across the loop in registers of their own: declared (and defined) once, so the
  // compiler does not copy them between wgmma groups (which would also serialize the wgmma). O adds up
  // its KV tiles as accumulate.h says.
  OAccumulator<T> o;
  o.start(ss.o_sum.of_thread(wg, thread));
  auto& acc = o.wgmma_acc();
  auto& l = o.sums();  // P's row sums (mma_pv)
  float s[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s[i] = 0.0f;

  // Per tile n: S(n) = Q'K'^T, the softmax of S(n) into P(n), O += P(n) V'^T. The two warpgroups take
  // turns on the tensor cores (WgTurns): in its turn a warpgroup issues S(n) and P(n-1) V'^T as two
  // groups, then passes the turn. Its softmax of S(n) starts once the first group has completed and
  // runs while P(n-1) V'^T and the other warpgroup's wgmma do (FA3's overlap inside a warpgroup and
  // ping-pong between them). O's update and P(n)'s packing wait for P(n-1) V'^T: it writes O's accumulator and
  // reads P.
  const int diag = sp.diag();
  // A tile whose keys all lie below this is masked for no row of the warpgroup (causal: its first row sees keys
  // up to m0 + q_row0 + diag, the others more): one test a tile.
  const int unmasked_end = p.causal ? min(sp.seq_kv, m0 + q_row0 + diag + 1) : sp.seq_kv;
  uint32_t pa[PSteps<N, kExact>][4];
  static_assert(sizeof(ss.k[0]) == T::KTile::kBytes && sizeof(ss.vt[0]) == T::kVStageBytes, "stages back to back");
  const uint64_t q_desc = desc_at<typename T::QTile>(tile_desc<typename T::QTile>(ss.q[buf]), q_row0, 0);
  const uint64_t k_desc = tile_desc<typename T::KTile>(ss.k[0]), vt_desc = tile_desc<typename T::VTile>(ss.vt[0]);
  const uint64_t ones_desc = T::kSumsInPv ? 0 : tile_desc<typename T::OnesTile>(ss.ones.tile());
  // S(n) (kQk, from stage qk) and P(n-1) V'^T (kPv, from stage pv) in one turn, a commit group each.
  // Compile-time flags: a wgmma under a run-time branch makes ptxas serialize every wgmma of the kernel.
  // The barrier waits come before the turn, so the other warpgroup never waits on them.
  using Ring = RingPos<T::kStages>;
  auto issue = [&](Ring qk_at, Ring pv_at, int n_pv, auto kQk, auto kPv) {
    constexpr bool qk = decltype(kQk)::value, pv = decltype(kPv)::value;
    if constexpr (qk && pv)
      ptx::mbarrier_wait_both(&ss.bar[qk_at.stage].k_full, qk_at.phase, &ss.bar[pv_at.stage].v_full, pv_at.phase);
    else if constexpr (qk) ptx::mbarrier_wait(&ss.bar[qk_at.stage].k_full, qk_at.phase);
    else ptx::mbarrier_wait(&ss.bar[pv_at.stage].v_full, pv_at.phase);
    turns.wait();
    fence_operands(acc);  // (not S: the first k-step of S = Q'K'^T only writes it)
    if constexpr (!kLse) fence_operands(l);
    ptx::wgmma_fence();
    if constexpr (qk) {
      mma_qk<N, D, QTerms, typename T::QTile, typename T::KTile>(s, q_desc,
                                                                 desc_plus(k_desc, qk_at.stage * T::KTile::kBytes));
      ptx::wgmma_commit_group();
    }
    if constexpr (pv) {
      if constexpr (T::kOShared) {
        // O's move to shared memory (accumulate.h) while S's wgmma run: in the turn, not on the softmax's path.
        fence_operands(acc);
        o.before_pv(n_pv);
        fence_operands(acc);
        ptx::wgmma_fence();
      }
      mma_pv<N, D, kExact, OAccumulator<T>::kFresh, kLse, typename T::VTile, typename T::OnesTile>(
          acc, l, pa, desc_plus(vt_desc, pv_at.stage * T::kVStageBytes), ones_desc);
      ptx::wgmma_commit_group();
    }
    turns.pass();
  };
  // P(n-1) V'^T has completed: P's registers are free, and so is its stage.
  auto pv_done = [&](Ring pv_at) {
    ptx::wgmma_wait_group<0>();
    fence_operands(acc);
    if constexpr (!kLse) fence_operands(l);
    ptx::mbarrier_arrive(&ss.bar[pv_at.stage].empty);
  };

  using Yes = std::true_type;
  using No = std::false_type;
  // Tile n's K factor: in its stage, beside its K' tile (producer.h), at its place in a group of 4.
  const int kf0 = int((int64_t(b) * p.heads_kv + hk) * kv.k_tiles & 3);
  // The softmax of S(n) into P(n) (after P(n-1) V'^T, when kPv, has completed: it reads O and P).
  // The first tile is peeled, not branched on: a wait_group under a run-time branch serializes the wgmma.
  Ring qk_at = ring, pv_at;  // stages of S(n)'s K and of P(n-1) V'^T's V
  auto softmax = [&](int n, auto kPv) {
    fence_operands(s);
    const int key0 = n * N;
    const TileMask mask{key0 + N > unmasked_end, key0, sp.seq_kv, diag, p.causal};
    float alpha[2];
    const float kf = ss.k_factor[qk_at.stage][(kf0 + n) & 3];
    // With 128 keys or fewer a tile, O's update and P's packing go in one basic block with the exp2 (one
    // block each for O rescaled or not), so that they issue in the exp2 unit's shadow (it takes a warp's
    // MUFU.EX2 one every 8 cycles) instead of after it. H200, same call, against the exp2 before them: D = 128
    // +5-6% at 4k and 16k, D = 256 +4-5%, 1k within 2%; D = 64 (256 keys) -17%, where they stay after.
    constexpr bool kShadow = N <= 128 && decltype(kPv)::value;
    typename WgSoftmax<N, kLse>::Exponents e;
    const bool rescale = mask.active ? sm.template update<true, !kShadow>(s, kf, mask, row0, t, alpha, e)
                                     : sm.template update<false, !kShadow>(s, kf, mask, row0, t, alpha, e);
    auto pack = [&] {
#pragma unroll
      for (int kk = 0; kk < PSteps<N, kExact>; ++kk) {
        if constexpr (kExact) WgSoftmax<N, kLse>::pack_p_bf16(s, kk, pa[kk]);
        else WgSoftmax<N, kLse>::pack_p(s, kk, pa[kk]);
      }
    };
    if constexpr (decltype(kPv)::value) {
      pv_done(pv_at);
      if constexpr (!kLse) sm.add_tile_sums(l, alpha);
    }
    if constexpr (kShadow) {
      auto tail = [&](auto kRescale) {
        o.add_tile(alpha, decltype(kRescale)::value);  // tile n-1's share, then the reference's move
        sm.exps(s, e);
        pack();
      };
      rescale ? tail(Yes{}) : tail(No{});
    } else {
      if constexpr (decltype(kPv)::value) o.add_tile(alpha, rescale);  // (at tile 0, O is still 0)
      pack();
    }
  };
  if (n_tiles > 0) {
    issue(qk_at, pv_at, 0, Yes{}, No{});
    ptx::wgmma_wait_group<0>();
    softmax(0, No{});
    for (int n = 1; n < n_tiles; ++n) {
      pv_at = qk_at;
      qk_at.advance();
      issue(qk_at, pv_at, n - 1, Yes{}, Yes{});
      ptx::wgmma_wait_group<1>();  // S(n) has completed; P(n-1) V'^T may still run
      softmax(n, Yes{});
    }
    issue(qk_at, qk_at, n_tiles - 1, No{}, Yes{});
    pv_done(qk_at);
    if constexpr (!kLse) sm.add_last_sums(l);
    o.add_last_tile();
    ring = qk_at;
    ring.advance();
  }

  constexpr bool kStaged = kOStaged<D, kExact, QTerms>;
  uint8_t* stage = nullptr;
  if constexpr (kStaged) stage = ss.o_stage.o[wg];
  epilogue<D, kStaged>(p, sp, sm, o, n_tiles > 0, ss.v_factor[buf], ss.v_nan_key[buf], b, h, row0, warp, lane, wg, stage);
}

// Consumer warpgroup `wg` (0 or 1) of the block: its rows of each query tile the producer announces in
// the Q buffers, in turn, until one past the last; the turns and the KV ring run on from tile to tile.
template <bool kLse, bool kPacked, int D, bool kExact, int QTerms>
__device__ void consume(SharedStorage<D, kExact, QTerms>& ss, const Folded& kv, const PrefillParams& p,
                        const TileScheduler<Traits<D, kExact>::kBlockM, Traits<D, kExact>::kBlockN>& sched, int wg,
                        int thread, float scale_log2) {
  using T = Traits<D, kExact>;
  const WgTurns turns{wg};
  RingPos<T::kStages> ring;
  RingPos<T::kQBuffers> q_at;
  for (;; q_at.advance()) {
    ptx::mbarrier_wait(&ss.q_bar[q_at.stage].full, q_at.phase);
    // (Broadcast from lane 0: the compiler then knows the index is warp-uniform and keeps it and what
    // derives from it, the tile's coordinates and loop bounds, in uniform registers; read per thread, they
    // took vector registers and the consumers spilled.)
    const int t = __shfl_sync(0xffffffffu, ss.q_tile[q_at.stage], 0);
    if (t >= sched.tiles) break;
    const WorkTile w = sched.template at<kPacked>(t, p);
    consume_tile<kLse>(ss, kv, p, turns, ring, q_at.stage, wg, thread, w.b, w.h, w.h / p.group,
                       w.m_tile * T::kBlockM, w.n_tiles, w.sp, scale_log2);
    ptx::mbarrier_arrive(&ss.q_bar[q_at.stage].empty);  // its last wgmma completed, its epilogue read v_factor
  }
  if constexpr (kOStaged<D, kExact, QTerms>) {  // the store warp reads the same index, and stops (store.h)
    o_stage_acquire(wg);
    o_stage_release(wg);
  }
}

}  // namespace mxattn::kernels::hopper
