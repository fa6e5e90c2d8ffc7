#include "mxattn/reference/quantize.h"

#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "mxattn/format/pack.h"

namespace mxattn {
namespace {

// Offsets of every row: each index tuple over the non-block axes, in the stored order.
std::vector<int64_t> row_offsets_of(std::span<const int64_t> shape, std::span<const int64_t> strides, int axis) {
  std::vector<int64_t> offsets{0};
  for (int d = 0; d < int(shape.size()); ++d) {
    if (d == axis) continue;
    std::vector<int64_t> next;
    next.reserve(offsets.size() * size_t(shape[d]));
    for (int64_t base : offsets)
      for (int64_t i = 0; i < shape[d]; ++i) next.push_back(base + i * strides[d]);
    offsets.swap(next);
  }
  return offsets;
}

}  // namespace

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

size_t QuantizedTensor::rows() const {
  return size_t(std::accumulate(shape.begin(), shape.end() - 1, int64_t{1}, std::multiplies<>()));
}

void quantize_rows(const float* x, std::span<const int64_t> row_offsets, size_t cols, int64_t col_stride,
                   const Format& f, float tensor_scale, ScaleLayout layout, uint8_t* codes, uint8_t* scales) {
  const size_t rows = row_offsets.size(), blocks = (cols + f.block - 1) / f.block;
  const size_t row_bytes = packed_bytes(cols, f.elem.bits);
  std::memset(scales, 0, scale_bytes(layout, {rows, blocks}));
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x + row_offsets[r];
    uint8_t* out = codes + r * row_bytes;
    std::memset(out, 0, row_bytes);
    for (size_t b = 0; b < blocks; ++b) {
      const size_t c0 = b * f.block, c1 = std::min(cols, c0 + f.block);
      float amax = 0.0f;
      bool nonfinite = false;
      for (size_t c = c0; c < c1; ++c) {
        const float v = row[int64_t(c) * col_stride];
        nonfinite |= !is_finite_bits(v);
        amax = std::fmax(amax, std::fabs(v));
      }
      const BlockScale s = f.block_scale(amax, nonfinite, tensor_scale);
      scales[scale_offset(layout, r, b, blocks)] = uint8_t(s.code);
      for (size_t c = c0; c < c1; ++c) pack_code(out, c, f.elem.bits, f.elem.encode(row[int64_t(c) * col_stride] * s.mult));
    }
  }
}

float tensor_amax(const float* x, std::span<const int64_t> shape, std::span<const int64_t> strides) {
  float amax = 0.0f;
  const int last = int(shape.size()) - 1;
  for (int64_t off : row_offsets_of(shape, strides, last))
    for (int64_t i = 0; i < shape[last]; ++i) amax = std::fmax(amax, std::fabs(x[off + i * strides[last]]));
  return amax;
}

QuantizedTensor quantize(const float* x, std::span<const int64_t> shape, std::span<const int64_t> strides_in,
                         int block_axis, const Format& f, ScaleLayout layout, std::optional<float> tensor_scale) {
  const int rank = int(shape.size());
  if (rank == 0) throw std::invalid_argument("quantize: shape must have at least one dimension");
  if (block_axis < 0) block_axis += rank;
  if (block_axis < 0 || block_axis >= rank)
    throw std::invalid_argument("quantize: block_axis " + std::to_string(block_axis) + " out of range for rank " +
                                std::to_string(rank));
  const std::vector<int64_t> strides =
      strides_in.empty() ? contiguous_strides(shape) : std::vector<int64_t>(strides_in.begin(), strides_in.end());
  if (int(strides.size()) != rank) throw std::invalid_argument("quantize: strides must have one entry per dimension");

  QuantizedTensor q;
  q.format = f;
  q.layout = layout;
  q.source_axis = block_axis;
  for (int d = 0; d < rank; ++d)
    if (d != block_axis) q.shape.push_back(shape[d]);
  q.shape.push_back(shape[block_axis]);
  if (f.tensor_scale)
    q.tensor_scale = tensor_scale ? *tensor_scale : nvfp4_tensor_scale(tensor_amax(x, shape, strides), f.elem);
  const auto offsets = row_offsets_of(shape, strides, block_axis);
  q.codes.resize(offsets.size() * q.row_bytes());
  q.scales.resize(scale_bytes(layout, q.scale_shape()));
  quantize_rows(x, offsets, q.cols(), strides[block_axis], f, q.tensor_scale, layout, q.codes.data(),
                q.scales.data());
  return q;
}

std::vector<float> dequantize(const QuantizedTensor& q) {
  const Format& f = q.format;
  // Source shape and the strides that write stored element (r, c) back to its source position.
  const int rank = int(q.shape.size());
  std::vector<int64_t> src_shape(q.shape.begin(), q.shape.end() - 1);
  src_shape.insert(src_shape.begin() + q.source_axis, q.shape.back());
  const auto src_strides = contiguous_strides(src_shape);
  std::vector<int64_t> stored_strides;
  for (int d = 0; d < rank; ++d)
    if (d != q.source_axis) stored_strides.push_back(src_strides[d]);
  const auto offsets = row_offsets_of(std::span(q.shape).first(rank - 1), stored_strides, rank - 1);
  const int64_t col_stride = src_strides[q.source_axis];

  std::vector<float> out(offsets.size() * q.cols());
  for (size_t r = 0; r < offsets.size(); ++r)
    for (size_t c = 0; c < q.cols(); ++c) {
      const float s = decode_scale(f.scale, q.scale_code(r, c / f.block));
      const float e = f.elem.decode(q.code(r, c));
      // E8M0: e * s is exact. NVFP4: e * s is exact (at most 5 significant bits); one rounding in the divide.
      out[offsets[r] + int64_t(c) * col_stride] = f.tensor_scale ? e * s / q.tensor_scale : e * s;
    }
  return out;
}

}  // namespace mxattn
