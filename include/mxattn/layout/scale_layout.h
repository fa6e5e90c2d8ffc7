// Scale-factor layouts: row-major [rows, cols], and the 128x4 tiled layout that cuDNN, cuBLAS and
// CUTLASS require (seeds/001). Tiled pads rows to 128 and columns to 4, zero-filled; tiles of
// 128 rows x 4 columns are stored row-major, 512 bytes each. Inside a tile, rows r, r+32, r+64,
// r+96 share one 16-byte line:
//
//   offset:  0   1   2   3 |  4   5   6   7 |  8 ... 11 | 12 ... 15 | 16 ... 19 | ...
//   (r, c): (0,0)...(0,3)  | (32,0)..(32,3) | (64,0..3) | (96,0..3) | (1,0..3)  | ...
//
//   offset = tile * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4)
#pragma once
#include <cstddef>
#include <cstdint>

#include "mxattn/format/bits.h"

namespace mxattn {

enum class ScaleLayout : uint8_t { RowMajor, Tiled128x4 };

struct ScaleShape {
  size_t rows = 0, cols = 0;  // logical: one row per data row, one column per block
};

MXATTN_HD constexpr size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

MXATTN_HD constexpr size_t tiled_rows(size_t rows) { return round_up(rows, 128); }
MXATTN_HD constexpr size_t tiled_cols(size_t cols) { return round_up(cols, 4); }

// Bytes the scales take in a layout (padding included).
MXATTN_HD constexpr size_t scale_bytes(ScaleLayout layout, ScaleShape s) {
  return layout == ScaleLayout::RowMajor ? s.rows * s.cols : tiled_rows(s.rows) * tiled_cols(s.cols);
}

// (r, c) -> byte offset in the 128x4 tiled layout of a tensor with `cols` logical scale columns.
MXATTN_HD constexpr size_t tiled_offset(size_t r, size_t c, size_t cols) {
  const size_t tile = (r / 128) * (tiled_cols(cols) / 4) + c / 4;
  return tile * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
}

// The inverse: byte offset -> (r, c), padding positions included.
struct RowCol {
  size_t r, c;
};
MXATTN_HD constexpr RowCol tiled_position(size_t offset, size_t cols) {
  const size_t tile = offset / 512, local = offset % 512, tiles_per_row = tiled_cols(cols) / 4;
  return {(tile / tiles_per_row) * 128 + ((local % 16) / 4) * 32 + local / 16, (tile % tiles_per_row) * 4 + local % 4};
}

// tiled_offset in 32-bit pieces for the kernels, tiles_per_row = tiled_cols(cols) / 4 (the tile index fits in 32
// bits where the layout's bytes / 512 do).
MXATTN_HD constexpr uint64_t tiled_offset_u32(uint32_t r, uint32_t c, uint32_t tiles_per_row) {
  const uint32_t tile = (r >> 7) * tiles_per_row + (c >> 2);
  return uint64_t(tile) * 512 + (((r & 31u) << 4) | ((r >> 3) & 12u) | (c & 3u));
}

MXATTN_HD constexpr size_t scale_offset(ScaleLayout layout, size_t r, size_t c, size_t cols) {
  return layout == ScaleLayout::RowMajor ? r * cols + c : tiled_offset(r, c, cols);
}

// Host conversions between the two layouts. `dst` must hold scale_bytes(to, shape) bytes;
// padding is written as zeros.
void convert_scale_layout(const uint8_t* src, ScaleLayout from, uint8_t* dst, ScaleLayout to, ScaleShape shape);

}  // namespace mxattn
