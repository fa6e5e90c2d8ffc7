// Register-level loads and dequantization of KV-cache tiles for the decode kernel.
#pragma once
#include <cstdint>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/attention/decode_traits.h"
#include "mxattn/kernels/attention/fragment.h"
#include "mxattn/ptx/cp_async.h"

namespace mxattn::kernels {

// N bytes (a multiple of 4) from global to shared memory, asynchronously; zeros where !valid.
template <int N>
__device__ __forceinline__ void copy_async(uint8_t* dst, const uint8_t* src, bool valid) {
  static_assert(N % 4 == 0, "cp.async moves 4, 8 or 16 bytes");
  if constexpr (N % 16 == 0) {
#pragma unroll
    for (int i = 0; i < N / 16; ++i) ptx::cp_async_cg_16(dst + 16 * i, src + 16 * i, valid);
  } else if constexpr (N % 8 == 0) {
#pragma unroll
    for (int i = 0; i < N / 8; ++i) ptx::cp_async_ca_8(dst + 8 * i, src + 8 * i, valid);
  } else {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) ptx::cp_async_ca_4(dst + 4 * i, src + 4 * i, valid);
  }
}

// A lane's 16-byte copies of a tile's 32 code rows of RowBytes into a warp's stage: copy i moves tile
// bytes 16 (lane + 32 i) to their swizzled place (fragment.h stage_offset). The layout repeats every 8
// rows (8 RowBytes bytes: kPeriod copies where that is a whole number of them), so the destinations are
// computed once, for the first kPeriod copies.
template <int RowBytes, bool LdmatrixRows = false>
struct StageCopies {
  static constexpr int kChunks = RowBytes / 16;  // copies per lane: 32 rows x RowBytes / 16 / 32 lanes
  static constexpr int kPeriod = 8 * RowBytes % 512 == 0 ? 8 * RowBytes / 512 : kChunks;
  int at[kPeriod];
  __device__ explicit StageCopies(int lane) {
#pragma unroll
    for (int q = 0; q < kPeriod; ++q) at[q] = frag::stage_offset(RowBytes, 16 * (lane + 32 * q), LdmatrixRows);
  }
  __device__ __forceinline__ int dst(int i) const { return at[i % kPeriod] + 512 * (i - i % kPeriod); }
  // Rows that lie one after the other at src (this lane's 16 bytes already added): a base plus immediates.
  // Unless `whole`, rows at or past valid_keys are zero-filled. A tensor of rows as wide may come along
  // (stage2, src2: V's beside K's), its copies interleaved in the same loop.
  template <class Whole>
  __device__ __forceinline__ void issue(uint8_t* stage, const uint8_t* src, Whole whole, int valid_keys, int lane,
                                        uint8_t* stage2 = nullptr, const uint8_t* src2 = nullptr) const {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const bool valid = whole || 16 * (lane + 32 * i) / RowBytes < valid_keys;
      ptx::cp_async_cg_16(stage + dst(i), src + 512 * i, valid);
      if (stage2) ptx::cp_async_cg_16(stage2 + dst(i), src2 + 512 * i, valid);
    }
  }
  // Rows anywhere (pages under a tile): row_of(key) is key's row of `codes`; keys at or past k_end zero.
  template <class RowOf>
  __device__ __forceinline__ void issue_rows(uint8_t* stage, const uint8_t* codes, int tile0, int k_end, RowOf row_of,
                                             int lane, uint8_t* stage2 = nullptr, const uint8_t* codes2 = nullptr) const {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const int off = 16 * (lane + 32 * i), key = tile0 + off / RowBytes;
      const bool valid = key < k_end;
      const int64_t at = (valid ? row_of(key) : 0) * RowBytes + off % RowBytes;
      ptx::cp_async_cg_16(stage + dst(i), codes + at, valid);
      if (stage2) ptx::cp_async_cg_16(stage2 + dst(i), codes2 + at, valid);
    }
  }
};

// A key's N scale bytes (row `row` of `scales`) into the stage at dst; zeros where !valid. 2-byte rows
// (head_dim 64, block 32) are too narrow for cp.async: loaded and stored directly.
template <int N>
__device__ __forceinline__ void copy_scale_row(uint8_t* dst, const uint8_t* scales, int64_t row, bool valid) {
  if constexpr (N % 4 == 0) {
    copy_async<N>(dst, scales + row * N, valid);
  } else {
    static_assert(N == 2, "scale rows of 2, 4, 8 or 16 bytes");
    *reinterpret_cast<uint16_t*>(dst) = valid ? __ldg(reinterpret_cast<const uint16_t*>(scales) + row) : 0;
  }
}

// Where a lane's N fragment bytes, starting at byte `off` of rows 0..7 of a stage tile of
// RowBytes-wide rows, sit in the stage (fragment.h stage_offset): the widest aligned units (16, 8,
// 4 or 2 bytes: N's largest power-of-two divisor, which `off` is a multiple of), each inside one
// swizzled 16-byte chunk. The layout repeats every 8 rows, so these offsets serve rows 8m + x too.
template <int N, int RowBytes, bool LdmatrixRows = false>
struct StageRange {
  static constexpr int kUnit = (N & -N) < 16 ? (N & -N) : 16;
  static_assert(kUnit >= 2, "even byte counts");
  int at[N / kUnit];
  __device__ explicit StageRange(int off) {
#pragma unroll
    for (int u = 0; u < N / kUnit; ++u) at[u] = frag::stage_offset(RowBytes, off + u * kUnit, LdmatrixRows);
  }
};

// The lane's N bytes of a range `rows8` rows (a multiple of 8) further down the tile, into words.
template <int N, int RowBytes, bool LdmatrixRows>
__device__ __forceinline__ void load_stage_range(const uint8_t* tile, const StageRange<N, RowBytes, LdmatrixRows>& range,
                                                 int rows8, uint32_t (&w)[(N + 3) / 4]) {
  constexpr int kUnit = StageRange<N, RowBytes, LdmatrixRows>::kUnit;
#pragma unroll
  for (int i = 0; i < (N + 3) / 4; ++i) w[i] = 0;
#pragma unroll
  for (int u = 0; u < N / kUnit; ++u) {
    const uint8_t* p = tile + range.at[u] + rows8 * RowBytes;
    if constexpr (kUnit == 16) {
      const uint4 v = *reinterpret_cast<const uint4*>(p);
      w[4 * u] = v.x, w[4 * u + 1] = v.y, w[4 * u + 2] = v.z, w[4 * u + 3] = v.w;
    } else if constexpr (kUnit == 8) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      w[2 * u] = v.x, w[2 * u + 1] = v.y;
    } else if constexpr (kUnit == 4) {
      w[u] = *reinterpret_cast<const uint32_t*>(p);
    } else {
      w[u / 2] |= uint32_t(*reinterpret_cast<const uint16_t*>(p)) << (16 * (u % 2));
    }
  }
}

// 1, 2 or 4 scale bytes at p (shared memory, aligned to N) into one word.
template <int N>
__device__ __forceinline__ uint32_t staged_scales(const uint8_t* p) {
  if constexpr (N == 4) return *reinterpret_cast<const uint32_t*>(p);
  if constexpr (N == 2) return *reinterpret_cast<const uint16_t*>(p);
  return *p;
}

// A key's N scale bytes (1, 2, 4 or 8; shared memory, aligned to N) as words: byte b in byte b % 4 of word b / 4.
template <int N>
__device__ __forceinline__ void scale_words(const uint8_t* p, uint32_t (&w)[(N + 3) / 4]) {
  if constexpr (N == 8) {
    const uint2 x = *reinterpret_cast<const uint2*>(p);
    w[0] = x.x, w[1] = x.y;
  } else {
    w[0] = staged_scales<N>(p);
  }
}

}  // namespace mxattn::kernels
