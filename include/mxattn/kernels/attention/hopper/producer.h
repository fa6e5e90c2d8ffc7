// The producer's copies of the folded K and V tiles (fold_kernel.h) into the stages' swizzled shared
// memory, where wgmma reads them; and the consumers' Q tile, folded as K's rows are.
#pragma once
#include "mxattn/kernels/attention/hopper/fold_kernel.h"
#include "mxattn/kernels/attention/hopper/traits.h"
#include "mxattn/ptx/cp_async.h"
#include "mxattn/ptx/mbarrier.h"

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

// The producer's copies of KV tile `tile` into stage `stage`: one bulk copy of its K' tile and one of its
// V'^T tile (each laid out as the stage holds it, fold_kernel.h), issued by one thread, each completing
// on its barrier through the barrier's transaction count.
template <int D>
__device__ __forceinline__ void copy_kv_tile(SharedStorage<D>& ss, const FoldedKv& kv, int heads_kv, int stage, int b,
                                             int hk, int tile) {
  using T = Traits<D>;
  constexpr uint32_t kBytes = T::KTile::kBytes;
  static_assert(T::VTile::kBytes == kBytes, "K' and V'^T tiles of one size");
  const int64_t at = kv.tile_at(b, hk, tile, heads_kv, kBytes);
  StageBarriers& bar = ss.bar[stage];
  ptx::mbarrier_arrive_expect_tx(&bar.k_full, kBytes);
  ptx::bulk_copy_g2s(ss.k[stage], kv.k + at, kBytes, &bar.k_full);
  ptx::mbarrier_arrive_expect_tx(&bar.v_full, kBytes);
  ptx::bulk_copy_g2s(ss.vt[stage], kv.vt + at, kBytes, &bar.v_full);
}

}  // namespace mxattn::kernels::hopper
