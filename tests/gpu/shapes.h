// Shapes the GPU quantize tests run, odd and tail sizes included. One list, so that a new case is
// one line here.
#pragma once
#include <cstdint>
#include <vector>

namespace mxattn::test {

struct QuantizeCase {
  const char* name;
  std::vector<int64_t> shape;
  int block_axis;
  // The tensor sits inside a larger buffer: empty = contiguous; else the strides (elements) and the
  // offset of element 0, to test views (slices, transposes, misaligned starts).
  std::vector<int64_t> strides = {};
  int64_t offset = 0;
};

inline const std::vector<QuantizeCase>& quantize_cases() {
  static const std::vector<QuantizeCase> cases = {
      {"one", {1}, 0},
      {"row_tail", {3, 5}, 1},
      {"odd", {7, 33}, -1},
      {"tiled_pad_rows", {130, 100}, 1},
      {"kv_cache", {2, 3, 4, 64}, 3},
      {"long_row", {5, 1000}, 1},
      {"k128_tail", {33, 300}, 1},
      {"prefill_v", {2, 75, 3, 40}, 1},         // [B,S,H,D] blocked along S, stored [B,H,D,S]
      {"prefill_v_tiled", {1, 130, 2, 16}, 1},
      {"prefill_v_wide", {2, 77, 4, 64}, 1},    // rows (h, d) in runs of 256: the shared-memory tile kernel
      {"prefill_v_d128", {1, 300, 1, 128}, 1},
      // The tile kernel's spans of 512 columns: three, the last partial, with a block count that is not a
      // multiple of 4 (row-major scales byte by byte) and one that is (as words).
      {"prefill_v_spans", {1, 1100, 1, 128}, 1},
      {"prefill_v_span_words", {1, 1280, 1, 128}, 1},
      {"axis0_padded", {70, 300}, 0, {304, 1}, 0},  // the tile kernel's ragged last rows (300 = 2 x 128 + 44)
      {"axis0", {100, 24}, 0},
      {"slice", {10, 64}, 1, {288, 1}, 96},    // x[:, 1, :64] of a [10, 3, 96] buffer
      {"transposed", {40, 8}, 1, {1, 40}, 0},  // a transposed view: the block axis strided
      {"misaligned", {6, 48}, 1, {48, 1}, 1},  // starts one element past 16-byte alignment
      {"padded_rows", {9, 72}, 1, {80, 1}, 0},
  };
  return cases;
}

}  // namespace mxattn::test
