// CPU reference quantization of whole tensors: the definition the GPU kernels must match bit for bit.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "mxattn/format/format.h"
#include "mxattn/format/pack.h"
#include "mxattn/layout/scale_layout.h"

namespace mxattn {

// A quantized tensor, stored with its block axis last ("rows" of blocks): for K [B, S, H, D] blocked
// along D that is the source order; for prefill V [B, S, H, D] blocked along S it is [B, H, D, S],
// channel-major. Each row's codes are packed (pack.h) and padded to whole bytes.
struct QuantizedTensor {
  Format format;
  std::vector<int64_t> shape;  // stored order, block axis last
  int source_axis = -1;        // the block axis in the source tensor's order
  ScaleLayout layout = ScaleLayout::RowMajor;
  std::vector<uint8_t> codes;   // rows() * row_bytes()
  std::vector<uint8_t> scales;  // scale_bytes(layout, scale_shape())
  float tensor_scale = 1.0f;    // S_enc where format.tensor_scale, else 1

  size_t cols() const { return size_t(shape.back()); }
  size_t rows() const;
  size_t row_bytes() const { return packed_bytes(cols(), format.elem.bits); }
  size_t blocks_per_row() const { return (cols() + format.block - 1) / format.block; }
  ScaleShape scale_shape() const { return {rows(), blocks_per_row()}; }
  uint8_t scale_code(size_t row, size_t block) const {
    return scales[scale_offset(layout, row, block, blocks_per_row())];
  }
  uint32_t code(size_t row, size_t col) const { return unpack_code(&codes[row * row_bytes()], col, format.elem.bits); }
};

// Rows of `cols` elements at x + row_offsets[r], `col_stride` apart (in elements), into packed codes
// (row_bytes apart) and scales. The primitive the tensor API and the GPU tests share.
void quantize_rows(const float* x, std::span<const int64_t> row_offsets, size_t cols, int64_t col_stride,
                   const Format& f, float tensor_scale, ScaleLayout layout, uint8_t* codes, uint8_t* scales);

// amax over the tensor with fmaxf semantics (NaN ignored), for the NVFP4 tensor scale.
float tensor_amax(const float* x, std::span<const int64_t> shape, std::span<const int64_t> strides);

// Quantize a strided tensor (strides in elements; empty = contiguous) with blocks along `block_axis`.
// The NVFP4 tensor scale is computed from the tensor's amax unless `tensor_scale` gives S_enc.
QuantizedTensor quantize(const float* x, std::span<const int64_t> shape, std::span<const int64_t> strides,
                         int block_axis, const Format& f, ScaleLayout layout = ScaleLayout::RowMajor,
                         std::optional<float> tensor_scale = std::nullopt);

// Decoded values, contiguous, in the source tensor's order.
std::vector<float> dequantize(const QuantizedTensor& q);

// Contiguous strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);

}  // namespace mxattn
