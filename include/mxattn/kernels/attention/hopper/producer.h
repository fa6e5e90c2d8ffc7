// The producer warpgroup: copies K and V codes from global memory into raw staging (cp.async, one tile
// ahead), folds the block scales (fold.h) and writes E4M3 tiles into the stage's swizzled shared
// memory, where wgmma reads them.
// Also the consumers' Q tile, which goes through the same row fold.
#pragma once
#include "mxattn/kernels/attention/hopper/fold.h"
#include "mxattn/kernels/attention/hopper/traits.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/format/pack.h"
#include "mxattn/ptx/cp_async.h"
#include "mxattn/ptx/prmt.h"

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

// K and V tiles go through two steps. issue_*: each producer thread starts cp.async copies of its
// chunks' codes (16 elements each) into a raw staging slot, and loads the chunks' block scale bytes
// into registers, one tile ahead of the fold. fold_*: the same thread folds its chunks from the raw
// slot (its own copies: cp.async.wait_group orders them, no barrier) into the stage's E4M3 tile.
//
// A thread's chunks: K row r = thread / (D/16) + i * (128 / (D/16)), chunk c = thread % (D/16);
// V^T row (channel) d = thread / (kBlockN/16) + i * (128 / (kBlockN/16)), chunk c = thread % (kBlockN/16).
template <int D>
struct ProducerChunks {
  using T = Traits<D>;
  static constexpr int kKChunks = D / 16, kKRows = 128 / kKChunks, kKIter = T::kBlockN / kKRows;
  static constexpr int kVChunks = T::kBlockN / 16, kVRows = 128 / kVChunks, kVIter = D / kVRows;
  static_assert(kKIter == T::kChunksPerThread && kVIter == T::kChunksPerThread);
};

// Tile n's scale bytes from registers into the thread's parking place (see SharedStorage).
template <int D>
__device__ __forceinline__ void park_scale_bytes(SharedStorage<D>& ss, const uint32_t (&ek)[ProducerChunks<D>::kKIter],
                                                 const uint32_t (&ev)[ProducerChunks<D>::kVIter], int thread) {
  using C = ProducerChunks<D>;
#pragma unroll
  for (int i = 0; i < C::kKIter; ++i) ss.scale_bytes[thread][i] = uint8_t(ek[i]);
#pragma unroll
  for (int i = 0; i < C::kVIter; ++i) ss.scale_bytes[thread][C::kKIter + i] = uint8_t(ev[i]);
}

// Copies the 2*Bits bytes of 16 codes (the first src_bytes of them in bounds, the rest zeros) into a
// 16-byte slot; src aligned to the copy width (chunk_align of the launcher).
template <int Bits>
__device__ __forceinline__ void cp_async_codes16(uint8_t* slot, const uint8_t* src, int src_bytes) {
  if constexpr (Bits == 8) {
    ptx::cp_async_cg_16_prefix(slot, src, src_bytes);
  } else if constexpr (Bits == 4) {
    ptx::cp_async_ca_8_prefix(slot, src, src_bytes);
  } else {
#pragma unroll
    for (int i = 0; i < 3; ++i) ptx::cp_async_ca_4_prefix(slot + 4 * i, src + 4 * i, min(4, max(0, src_bytes - 4 * i)));
  }
}

template <int D, typename Codes>
__device__ __forceinline__ void issue_k_tile(Codes, uint8_t* raw, uint32_t (&e)[ProducerChunks<D>::kKIter],
                                             const PrefillParams& p, int b, int hk, int j0, int thread) {
  using C = ProducerChunks<D>;
  constexpr int Bits = Codes::kBits;
  const int c = thread % C::kKChunks, r0 = thread / C::kKChunks;
  const uint8_t* codes = p.k.row_codes(b, 0, hk) + 2 * Bits * c;
  const uint8_t* scales = p.k.row_scales(b, 0, hk) + 16 * c / p.k.format.block;
#pragma unroll
  for (int i = 0; i < C::kKIter; ++i) {
    const int r = r0 + i * C::kKRows, key = j0 + r;
    const bool in = key < p.seq_kv;
    cp_async_codes16<Bits>(raw + 16 * (r * C::kKChunks + c), codes + (in ? key : 0) * p.k.code_stride[1], in ? 2 * Bits : 0);
    e[i] = in ? scales[key * p.k.scale_stride[1]] : 0u;
  }
}

template <int D, typename Codes>
__device__ __forceinline__ void issue_v_tile(Codes, uint8_t* raw, uint32_t (&e)[ProducerChunks<D>::kVIter],
                                             const PrefillParams& p, int b, int hk, int j0, int thread) {
  using C = ProducerChunks<D>;
  constexpr int Bits = Codes::kBits;
  const int c = thread % C::kVChunks, d0 = thread / C::kVChunks;
  const int key0 = j0 + 16 * c, valid = min(16, p.seq_kv - key0);
  const int row_bytes = int(packed_bytes(size_t(p.seq_kv), Bits)), byte0 = key0 * Bits / 8;
  const int src_bytes = valid > 0 ? min(2 * Bits, row_bytes - byte0) : 0;
  const uint8_t* codes = p.v.row_codes(b, hk, 0) + (valid > 0 ? byte0 : 0);
  const uint8_t* scales = p.v.row_scales(b, hk, 0) + (valid > 0 ? key0 / p.v.format.block : 0);
#pragma unroll
  for (int i = 0; i < C::kVIter; ++i) {
    const int d = d0 + i * C::kVRows;
    if (p.v_vector)  // else fold_v_tile reads the codes itself
      cp_async_codes16<Bits>(raw + 16 * (d * C::kVChunks + c), codes + d * p.v.code_stride[2], src_bytes);
    e[i] = valid > 0 ? scales[d * p.v.scale_stride[2]] : 0u;
  }
}

__device__ __forceinline__ void lds_codes16(const uint8_t* slot, uint32_t (&w)[4]) {
  const uint4 x = *reinterpret_cast<const uint4*>(slot);
  w[0] = x.x, w[1] = x.y, w[2] = x.z, w[3] = x.w;
}

// K tile n into stage `stage`: each key's reference is a max over the D/16 lanes of its row.
template <int D, typename Codes>
__device__ __forceinline__ void fold_k_tile(Codes codes, SharedStorage<D>& ss, int stage, const uint8_t* raw,
                                            const PrefillParams& p, int headroom, int j0, int thread) {
  using T = Traits<D>;
  using C = ProducerChunks<D>;
  const int c = thread % C::kKChunks;
#pragma unroll
  for (int i = 0; i < C::kKIter; ++i) {
    const int r = thread / C::kKChunks + i * C::kKRows;
    const uint32_t e = ss.scale_bytes[thread][i];
    uint32_t m = e == kE8M0Nan ? 0 : e;
#pragma unroll
    for (int o = 1; o < C::kKChunks; o <<= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    const int ref = int(m) - headroom;
    uint32_t w[4];
    lds_codes16(raw + 16 * (r * C::kKChunks + c), w);
    const bool in = j0 + r < p.seq_kv;
    st_shared_16(ss.k[stage] + T::KTile::offset(r, 16 * c), fold_codes(codes, w, e, ref, {ss.k_value, ss.e2m1}, 16));
    if (c == 0) ss.k_scale[stage][r] = in ? fold_factor(ref) : 0.0f;
  }
}

// V tile, transposed: channel d's keys j0 .. j0 + kBlockN - 1 as row d of V'^T, with the keys of each
// 16-byte chunk reordered into P's fragment order (fragment.h, pv_key_slot): chunk bytes
// 0 1 8 9 | 2 3 10 11 | 4 5 12 13 | 6 7 14 15.
template <int D, typename Codes>
__device__ __forceinline__ void fold_v_tile(Codes codes, SharedStorage<D>& ss, int stage, const uint8_t* raw,
                                            const PrefillParams& p, int b, int hk, int j0, int thread) {
  using T = Traits<D>;
  using C = ProducerChunks<D>;
  constexpr int Bits = Codes::kBits;
  const int c = thread % C::kVChunks;
  const int key0 = j0 + 16 * c, valid = min(16, p.seq_kv - key0);
  const int row_bytes = int(packed_bytes(size_t(p.seq_kv), Bits)), byte0 = key0 * Bits / 8;
#pragma unroll
  for (int i = 0; i < C::kVIter; ++i) {
    const int d = thread / C::kVChunks + i * C::kVRows;
    uint32_t w[4] = {0, 0, 0, 0};
    if (p.v_vector)
      lds_codes16(raw + 16 * (d * C::kVChunks + c), w);
    else if (valid > 0)
      load_codes16(Bits, p.v.row_codes(b, hk, d) + byte0, false, row_bytes - byte0, w);
    const uint4 x = fold_codes(codes, w, ss.scale_bytes[thread][C::kKIter + i], ss.v_ref[d], {ss.v_value, ss.e2m1}, valid);
    const uint4 y = make_uint4(ptx::prmt_b32(x.x, x.z, 0x5410), ptx::prmt_b32(x.x, x.z, 0x7632),
                               ptx::prmt_b32(x.y, x.w, 0x5410), ptx::prmt_b32(x.y, x.w, 0x7632));
    st_shared_16(ss.vt[stage] + T::VTile::offset(d, 16 * c), y);
  }
}

}  // namespace mxattn::kernels::hopper
