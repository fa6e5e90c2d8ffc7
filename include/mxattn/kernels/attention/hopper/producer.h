// The producer warpgroup: reads K and V codes and scales from global memory, folds the block scales
// (fold.h) and writes E4M3 tiles into the stage's swizzled shared memory, where wgmma reads them.
// Also the consumers' Q tile, which goes through the same row fold.
#pragma once
#include "mxattn/kernels/attention/hopper/fold.h"
#include "mxattn/kernels/attention/hopper/traits.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/format/pack.h"
#include "mxattn/ptx/prmt.h"

namespace mxattn::kernels::hopper {

__device__ __forceinline__ void st_shared_16(uint8_t* dst, uint4 v) { *reinterpret_cast<uint4*>(dst) = v; }

// Rows blocked along D (K, or Q): `rows` rows starting at outer index `first`, each D codes; 128
// threads, D/16 consecutive threads per row, so a row's reference is a max over those lanes.
// Row r of the tile is outer (b, first + r, h); rows at or past `limit` become zeros with factor 0.
template <int D, typename Tile>
__device__ __forceinline__ void fold_rows_along_d(uint8_t* tile, int tile_row0, float* factor, const MxRows& t,
                                                  const uint16_t* value, int headroom, int b, int first, int h,
                                                  int rows, int limit, int thread) {
  constexpr int kChunks = D / 16;
  constexpr int kRowsPerPass = 128 / kChunks;
  const int c = thread % kChunks, bits = t.format.elem.bits;
  for (int r = thread / kChunks; r < rows; r += kRowsPerPass) {
    const int row = first + r;
    const bool in = row < limit;
    const uint8_t* scales = t.row_scales(b, in ? row : 0, h);
    const uint32_t e = in ? scales[16 * c / t.format.block] : 0;
    uint32_t m = e == kE8M0Nan ? 0 : e;
#pragma unroll
    for (int o = 1; o < kChunks; o <<= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    const int ref = int(m) - headroom;
    const uint4 v = in ? fold_chunk(bits, t.row_codes(b, row, h) + 2 * bits * c, true, 16, e, ref, value, 16)
                       : make_uint4(0, 0, 0, 0);
    st_shared_16(tile + Tile::offset(tile_row0 + r, 16 * c), v);
    if (c == 0) factor[r] = in ? fold_factor(ref) : 0.0f;
  }
}

// V's channel references: the largest finite block exponent of each channel over the whole sequence
// (V is blocked along S_kv), one warp per channel at a time, 16 scale bytes a lane.
template <int D>
__device__ void v_channel_references(SharedStorage<D>& ss, const PrefillParams& p, int headroom, int b, int hk,
                                     int thread) {
  const int warp = thread / 32, lane = thread % 32;
  const int nblk = (p.seq_kv + p.v.format.block - 1) / p.v.format.block;
  for (int d = warp; d < D; d += 4) {
    const uint8_t* s = p.v.row_scales(b, hk, d);
    const bool aligned = reinterpret_cast<uintptr_t>(s) % 16 == 0;
    uint32_t m = 0;
    for (int i = 16 * lane; i < nblk; i += 512) {
      if (aligned && i + 16 <= nblk) {
        const uint4 x = *reinterpret_cast<const uint4*>(s + i);
        m = __vmaxu4(m, __vmaxu4(__vmaxu4(max_finite_e8m0x4(x.x), max_finite_e8m0x4(x.y)),
                                 __vmaxu4(max_finite_e8m0x4(x.z), max_finite_e8m0x4(x.w))));
      } else {
        for (int k = 0; k < 16 && i + k < nblk; ++k) m = __vmaxu4(m, max_finite_e8m0x4(s[i + k]));
      }
    }
    m = max_bytes(m);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) {
      ss.v_ref[d] = int(m) - headroom;
      ss.v_scale[d] = fold_factor(int(m) - headroom);
    }
  }
}

// K tile: keys j0 .. j0 + kBlockN - 1 of (b, hk) into stage `stage`, with each key's factor.
template <int D>
__device__ __forceinline__ void produce_k_tile(SharedStorage<D>& ss, const PrefillParams& p, int headroom, int stage,
                                               int b, int hk, int j0, int thread) {
  using T = Traits<D>;
  fold_rows_along_d<D, typename T::KTile>(ss.k[stage], 0, ss.k_scale[stage], p.k, ss.k_value, headroom, b, j0, hk,
                                          T::kBlockN, p.seq_kv, thread);
}

// V tile, transposed: channel d's keys j0 .. j0 + kBlockN - 1 as row d of V'^T, with the keys of each
// 16-byte chunk reordered into P's fragment order (fragment.h, pv_key_slot): chunk bytes
// 0 1 8 9 | 2 3 10 11 | 4 5 12 13 | 6 7 14 15.
template <int D>
__device__ __forceinline__ void produce_v_tile(SharedStorage<D>& ss, const PrefillParams& p, int stage, int b,
                                               int hk, int j0, int thread) {
  using T = Traits<D>;
  constexpr int kChunks = T::kBlockN / 16;
  constexpr int kRowsPerPass = 128 / kChunks;
  const int c = thread % kChunks, bits = p.v.format.elem.bits;
  const int key0 = j0 + 16 * c, valid = min(16, p.seq_kv - key0);
  const int row_bytes = int(packed_bytes(size_t(p.seq_kv), bits)), byte0 = key0 * bits / 8;
  for (int d = thread / kChunks; d < D; d += kRowsPerPass) {
    const uint32_t e = valid > 0 ? p.v.row_scales(b, hk, d)[key0 / p.v.format.block] : 0;
    const uint4 x = fold_chunk(bits, p.v.row_codes(b, hk, d) + byte0, p.v_vector, row_bytes - byte0, e,
                               ss.v_ref[d], ss.v_value, valid);
    const uint4 y = make_uint4(ptx::prmt_b32(x.x, x.z, 0x5410), ptx::prmt_b32(x.x, x.z, 0x7632),
                               ptx::prmt_b32(x.y, x.w, 0x5410), ptx::prmt_b32(x.y, x.w, 0x7632));
    st_shared_16(ss.vt[stage] + T::VTile::offset(d, 16 * c), y);
  }
}

}  // namespace mxattn::kernels::hopper
