// The producer warpgroup's copies of the folded K and V tiles (fold_kernel.h) into the stages'
// swizzled shared memory, where wgmma reads them; and the consumers' Q tile, folded as K's rows are.
#pragma once
#include "mxattn/kernels/attention/hopper/fold_kernel.h"
#include "mxattn/kernels/attention/hopper/traits.h"
#include "mxattn/ptx/cp_async.h"

namespace mxattn::kernels::hopper {

__device__ __forceinline__ void st_shared_16(uint8_t* dst, uint4 v) { *reinterpret_cast<uint4*>(dst) = v; }

// Rows blocked along D (K, or Q): `rows` rows starting at outer index `first`, each D codes; 128
// threads, D/16 consecutive threads per row, so a row's reference is a max over those lanes.
// Row r of the tile is outer (b, first + r, h); rows at or past `limit` become zeros with factor 0.
template <int D, typename Tile, typename Codes>
__device__ __forceinline__ void fold_rows_along_d(Codes codes, uint8_t* tile, int tile_row0, float* factor,
                                                  const MxRows& t, const FoldTables& tables, int headroom, int b,
                                                  int first, int h, int rows, int limit, int thread) {
  constexpr int kChunks = D / 16;
  constexpr int kRowsPerPass = 128 / kChunks;
  constexpr int kBits = Codes::kBits;
  const int c = thread % kChunks;
  for (int r = thread / kChunks; r < rows; r += kRowsPerPass) {
    const int row = first + r;
    const bool in = row < limit;
    const uint8_t* scales = t.row_scales(b, in ? row : 0, h);
    const uint32_t e = in ? scales[16 * c / t.format.block] : 0;
    uint32_t m = e == kE8M0Nan ? 0 : e;
#pragma unroll
    for (int o = 1; o < kChunks; o <<= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    const int ref = int(m) - headroom;
    const uint4 v = in ? fold_chunk(codes, t.row_codes(b, row, h) + 2 * kBits * c, e, ref, tables) : make_uint4(0, 0, 0, 0);
    st_shared_16(tile + Tile::offset(tile_row0 + r, 16 * c), v);
    if (c == 0) factor[r] = in ? fold_factor(ref) : 0.0f;
  }
}

// The producer's copies of tile n (keys j0 ..): K' rows into the stage's K tile,
// then V'^T rows into its V tile, each completing on the stage's barrier through
// cp.async.mbarrier.arrive (no thread waits for its copies). Thread mapping: K row
// thread / (D/16) + i * (128 / (D/16)), chunk thread % (D/16); V^T likewise with kBlockN/16 chunks.
template <int D>
__device__ __forceinline__ void copy_kv_tile(SharedStorage<D>& ss, const FoldedKv& kv, int heads_kv, int stage, int b,
                                             int hk, int j0, int thread) {
  using T = Traits<D>;
  constexpr int kKChunks = D / 16, kKRows = 128 / kKChunks;
  constexpr int kVChunks = T::kBlockN / 16, kVRows = 128 / kVChunks;
  StageBarriers& bar = ss.bar[stage];
  const uint8_t* k = kv.k + kv.k_row(b, hk, j0, heads_kv, D) + 16 * (thread % kKChunks);
#pragma unroll
  for (int i = 0; i < T::kChunksPerThread; ++i) {
    const int r = thread / kKChunks + i * kKRows;
    ptx::cp_async_cg_16(ss.k[stage] + T::KTile::offset(r, 16 * (thread % kKChunks)), k + r * D, true);
  }
  ptx::cp_async_mbarrier_arrive_noinc(&bar.k_full);
  const uint8_t* vt = kv.vt + kv.vt_row(b, hk, 0, heads_kv, D) + j0 + 16 * (thread % kVChunks);
#pragma unroll
  for (int i = 0; i < T::kChunksPerThread; ++i) {
    const int d = thread / kVChunks + i * kVRows;
    ptx::cp_async_cg_16(ss.vt[stage] + T::VTile::offset(d, 16 * (thread % kVChunks)), vt + int64_t(d) * kv.s_pad, true);
  }
  ptx::cp_async_mbarrier_arrive_noinc(&bar.v_full);
}

}  // namespace mxattn::kernels::hopper
