// Host launchers: validate, describe the tensor to the kernels (rows of the block axis, with the
// other axes collapsed where contiguous), launch.
#include "mxattn/api/quantize.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "mxattn/format/pack.h"
#include "mxattn/kernels/quantize_kernels.h"

namespace mxattn {

static_assert(int(DType::F32) == int(kernels::DType::F32) && int(DType::BF16) == int(kernels::DType::BF16));

size_t dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    default: return "bf16";
  }
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32" || name == "fp32") return DType::F32;
  if (name == "f16" || name == "float16" || name == "fp16" || name == "half") return DType::F16;
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  return std::nullopt;
}

namespace {

constexpr uint64_t kMaxIndex = 0xffffffffu;  // kernels index rows and 16-element groups in 32 bits

std::string dims_string(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

kernels::DType to_kernel(DType t) { return kernels::DType(uint8_t(t)); }

// Shape, strides and block axis checked and normalized.
struct Checked {
  std::vector<int64_t> shape, strides;
  int axis = 0;
};

Status check_tensor(const char* what, const void* ptr, DType dtype, std::span<const int64_t> shape,
                    std::span<const int64_t> strides, int block_axis, Checked* out) {
  const std::string w = what;
  const int rank = int(shape.size());
  if (rank < 1 || rank > kMaxRank)
    return Status::error("shape: rank " + std::to_string(rank) + " of " + w + " must be 1.." + std::to_string(kMaxRank));
  for (int d = 0; d < rank; ++d)
    if (shape[d] < 0) return Status::error("shape: " + w + " shape " + dims_string(shape) + " has a negative extent");
  if (!strides.empty() && int(strides.size()) != rank)
    return Status::error("strides: " + w + " has " + std::to_string(strides.size()) + " strides for rank " +
                         std::to_string(rank));
  for (int64_t s : strides)
    if (s < 0) return Status::error("strides: " + w + " strides " + dims_string(strides) + " must be >= 0");
  int axis = block_axis < 0 ? block_axis + rank : block_axis;
  if (axis < 0 || axis >= rank)
    return Status::error("block_axis: " + std::to_string(block_axis) + " out of range for rank " + std::to_string(rank));
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16) return Status::error("dtype: unknown");
  int64_t count = 1;
  for (int64_t e : shape) count *= e;
  if (count > 0 && !ptr) return Status::error(w + ": null pointer");
  if (reinterpret_cast<uintptr_t>(ptr) % dtype_bytes(dtype) != 0)
    return Status::error("alignment: " + w + " must be aligned to its element size (" +
                         std::to_string(dtype_bytes(dtype)) + " bytes for " + dtype_name(dtype) + ")");
  out->shape.assign(shape.begin(), shape.end());
  out->strides = strides.empty() ? std::vector<int64_t>(rank) : std::vector<int64_t>(strides.begin(), strides.end());
  if (strides.empty()) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; --d) out->strides[d] = s, s *= std::max<int64_t>(shape[d], 1);
  }
  out->axis = axis;
  return Status::success();
}

Status check_format(const Format& f) {
  const Element& e = f.elem;
  const bool elem_ok = e.is_int() ? (e.bits >= 2 && e.bits <= 8 && e.man_bits == e.bits - 1)
                                  : (e.exp_bits >= 1 && e.bits == 1 + e.exp_bits + e.man_bits && e.bits <= 8 &&
                                     e.man_bits <= 7);
  if (!elem_ok) return Status::error("format: element " + element_name(e) + " is not a valid EeMm or INTn");
  if (f.block != 8 && f.block != 16 && f.block != 32 && f.block != 64 && f.block != 128)
    return Status::error("format: block " + std::to_string(f.block) + " must be 8, 16, 32, 64 or 128");
  if (f.tensor_scale && (f.scale != ScaleType::UE4M3 || f.rule != ScaleRule::Nvfp4))
    return Status::error("format: a tensor scale needs UE4M3 scales and the NVFP4 rule");
  if (f.rule == ScaleRule::Nvfp4 && !f.tensor_scale)
    return Status::error("format: the NVFP4 rule needs a tensor scale");
  return Status::success();
}

// The axes other than `axis`, in source order, without extent-1 axes and with contiguous
// neighbours merged; at least one axis.
kernels::RowIndex row_index(const Checked& t, uint32_t* rows_out) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // extent, stride
  for (int d = 0; d < int(t.shape.size()); ++d) {
    if (d == t.axis || t.shape[d] == 1) continue;
    if (!dims.empty() && dims.back().second == t.strides[d] * t.shape[d]) {
      dims.back() = {dims.back().first * t.shape[d], t.strides[d]};
    } else {
      dims.push_back({t.shape[d], t.strides[d]});
    }
  }
  if (dims.empty()) dims.push_back({1, 0});
  kernels::RowIndex ix;
  ix.dims = int(dims.size());
  uint64_t rows = 1;
  for (int d = 0; d < ix.dims; ++d) {
    ix.extent[d] = kernels::FastDivmod(uint32_t(std::max<int64_t>(dims[d].first, 1)));
    ix.stride[d] = dims[d].second;
    rows *= uint64_t(dims[d].first);
  }
  *rows_out = uint32_t(rows);
  return ix;
}

uint64_t product_except(const Checked& t, int axis) {
  uint64_t n = 1;
  for (int d = 0; d < int(t.shape.size()); ++d)
    if (d != axis) n *= uint64_t(t.shape[d]);
  return n;
}

bool rows_aligned16(const void* base, const kernels::RowIndex& ix, size_t elem_bytes) {
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0) return false;
  for (int d = 0; d < ix.dims; ++d)
    if (ix.extent[d].divisor > 1 && (ix.stride[d] * int64_t(elem_bytes)) % 16 != 0) return false;
  return true;
}

Status cuda_status(const char* what, cudaError_t e) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(std::string(what) + ": CUDA error: " + cudaGetErrorString(e));
}

Status amax_into(const Checked& t, const void* x, DType dtype, float* amax, cudaStream_t stream) {
  // The whole tensor as rows of its last axis (the amax does not care about blocks).
  Checked all = t;
  all.axis = int(t.shape.size()) - 1;
  kernels::AmaxParams p;
  p.x = x;
  p.dtype = to_kernel(dtype);
  p.row = row_index(all, &p.rows);
  p.cols = t.shape[all.axis];
  p.col_stride = t.strides[all.axis];
  // A contiguous tensor collapses to one long row: more parallel groups, same bytes.
  if (p.row.dims == 1 && p.row.stride[0] == p.cols * p.col_stride && p.col_stride == 1) {
    p.cols *= p.rows;
    p.rows = 1;
    p.row.stride[0] = 0;
    p.row.extent[0] = kernels::FastDivmod(1);
  }
  const uint64_t groups = (uint64_t(p.cols) + kernels::kGroup - 1) / kernels::kGroup;
  if (groups * p.rows > kMaxIndex) return Status::error("shape: tensor too large for the amax pass");
  p.groups = uint32_t(groups);
  p.groups_div = kernels::FastDivmod(std::max<uint32_t>(p.groups, 1));
  p.items = uint32_t(groups * p.rows);
  p.vec_load = p.col_stride == 1 && rows_aligned16(x, p.row, dtype_bytes(dtype));
  if (auto s = cuda_status("tensor_amax", cudaMemsetAsync(amax, 0, sizeof(float), stream)); !s) return s;
  return cuda_status("tensor_amax", kernels::launch_amax(p, amax, stream));
}

}  // namespace

Status quantized_geometry(std::span<const int64_t> shape, int block_axis, const Format& format, ScaleLayout layout,
                          QuantizedGeometry* out) {
  Checked t;
  static const float dummy = 0;
  if (auto s = check_tensor("x", &dummy, DType::F32, shape, {}, block_axis, &t); !s) return s;
  if (auto s = check_format(format); !s) return s;
  QuantizedGeometry g;
  g.block_axis = t.axis;
  for (int d = 0; d < int(shape.size()); ++d)
    if (d != t.axis) g.stored_shape.push_back(shape[d]);
  g.stored_shape.push_back(shape[t.axis]);
  g.rows = product_except(t, t.axis);
  g.cols = size_t(shape[t.axis]);
  g.row_bytes = packed_bytes(g.cols, format.elem.bits);
  g.blocks_per_row = (g.cols + format.block - 1) / format.block;
  g.code_bytes = g.rows * g.row_bytes;
  g.scale_bytes = scale_bytes(layout, g.scale_shape());
  *out = std::move(g);
  return Status::success();
}

Status quantize(const void* x, DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides,
                int block_axis, const Format& format, ScaleLayout layout, const QuantizedBuffers& out,
                cudaStream_t stream, const QuantizeOptions& options) {
  Checked t;
  if (auto s = check_tensor("x", x, dtype, shape, strides, block_axis, &t); !s) return s;
  if (auto s = check_format(format); !s) return s;
  QuantizedGeometry geo;
  if (auto s = quantized_geometry(shape, block_axis, format, layout, &geo); !s) return s;
  if (geo.code_bytes > 0 && !out.codes) return Status::error("codes: null pointer");
  if (geo.scale_bytes > 0 && !out.scales) return Status::error("scales: null pointer");
  if (format.tensor_scale) {
    if (!out.tensor_scale) return Status::error("tensor_scale: null pointer (the format has a tensor scale)");
    if (reinterpret_cast<uintptr_t>(out.tensor_scale) % 4 != 0)
      return Status::error("alignment: tensor_scale must be 4-byte aligned");
  }

  kernels::QuantizeParams p;
  p.x = x;
  p.dtype = to_kernel(dtype);
  p.row = row_index(t, &p.rows);
  p.rows = uint32_t(geo.rows);
  if (geo.rows > kMaxIndex / 2) return Status::error("shape: too many rows (" + std::to_string(geo.rows) + ")");
  p.rows_ext = layout == ScaleLayout::Tiled128x4 ? uint32_t(tiled_rows(geo.rows)) : p.rows;
  p.cols = int64_t(geo.cols);
  p.col_stride = t.strides[t.axis];
  p.blocks = uint32_t(geo.blocks_per_row);
  p.codes = out.codes;
  p.row_bytes = int64_t(geo.row_bytes);
  p.scales = out.scales;
  p.layout = layout;
  p.format = format;
  p.tensor_scale = out.tensor_scale;
  p.fast_codecs = options.fast_codecs;
  p.rows_kernel = options.rows_kernel;
  p.by_columns = p.col_stride != 1 && geo.cols > 1;
  if (p.by_columns) {
    const uint64_t items = uint64_t(p.blocks) * p.rows_ext;
    if (items > kMaxIndex) return Status::error("shape: tensor too large (" + std::to_string(items) + " blocks)");
    p.items = uint32_t(items);
    p.rows_ext_div = kernels::FastDivmod(std::max<uint32_t>(p.rows_ext, 1));
  } else {
    p.col_stride = 1;
    const int chunk = kernels::chunk_elems(p.dtype);
    p.chunks = uint32_t((geo.cols + chunk - 1) / chunk);
    p.lanes = uint32_t(std::max(1, format.block / chunk));
    const uint64_t padded = round_up(p.chunks, p.lanes);
    const uint64_t items = padded * p.rows_ext;
    if (items > kMaxIndex) return Status::error("shape: tensor too large (" + std::to_string(items) + " chunks)");
    p.items = uint32_t(items);
    p.chunks_padded = kernels::FastDivmod(uint32_t(std::max<uint64_t>(padded, 1)));
    p.vec_load = rows_aligned16(x, p.row, dtype_bytes(dtype));
  }

  if (format.tensor_scale && options.tensor_scale == TensorScale::Compute) {
    if (auto s = amax_into(t, x, dtype, out.tensor_scale, stream); !s) return s;
    if (auto s = cuda_status("quantize", kernels::launch_tensor_scale_from_amax(out.tensor_scale, format.elem, stream)); !s)
      return s;
    p.after_amax = true;
  }
  return cuda_status("quantize", kernels::launch_quantize(p, stream));
}

Status dequantize(const QuantizedConstBuffers& in, const Format& format, ScaleLayout layout, void* y, DType dtype,
                  std::span<const int64_t> shape, std::span<const int64_t> strides, int block_axis,
                  cudaStream_t stream) {
  Checked t;
  if (auto s = check_tensor("y", y, dtype, shape, strides, block_axis, &t); !s) return s;
  if (auto s = check_format(format); !s) return s;
  QuantizedGeometry geo;
  if (auto s = quantized_geometry(shape, block_axis, format, layout, &geo); !s) return s;
  if (geo.code_bytes > 0 && !in.codes) return Status::error("codes: null pointer");
  if (geo.scale_bytes > 0 && !in.scales) return Status::error("scales: null pointer");
  if (format.tensor_scale && !in.tensor_scale)
    return Status::error("tensor_scale: null pointer (the format has a tensor scale)");
  if (geo.rows > kMaxIndex / 2) return Status::error("shape: too many rows (" + std::to_string(geo.rows) + ")");

  kernels::DequantizeParams p;
  p.codes = in.codes;
  p.scales = in.scales;
  p.tensor_scale = in.tensor_scale;
  p.row_bytes = int64_t(geo.row_bytes);
  p.layout = layout;
  p.format = format;
  p.blocks = uint32_t(geo.blocks_per_row);
  p.y = y;
  p.dtype = to_kernel(dtype);
  p.row = row_index(t, &p.rows);
  p.rows = uint32_t(geo.rows);
  p.cols = int64_t(geo.cols);
  p.col_stride = t.strides[t.axis];
  p.groups = uint32_t((geo.cols + kernels::kGroup - 1) / kernels::kGroup);
  const uint64_t items = uint64_t(p.groups) * p.rows;
  if (items > kMaxIndex) return Status::error("shape: tensor too large (" + std::to_string(items) + " groups)");
  p.items = uint32_t(items);
  p.by_columns = p.col_stride != 1 && geo.cols > 1;
  p.groups_div = kernels::FastDivmod(std::max<uint32_t>(p.groups, 1));
  p.rows_div = kernels::FastDivmod(std::max<uint32_t>(p.rows, 1));
  p.vec_store = !p.by_columns && p.col_stride == 1 && rows_aligned16(y, p.row, dtype_bytes(dtype));
  return cuda_status("dequantize", kernels::launch_dequantize(p, stream));
}

Status tensor_amax(const void* x, DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides,
                   float* amax, cudaStream_t stream) {
  Checked t;
  if (auto s = check_tensor("x", x, dtype, shape, strides, -1, &t); !s) return s;
  if (!amax) return Status::error("amax: null pointer");
  return amax_into(t, x, dtype, amax, stream);
}

Status nvfp4_tensor_scale(const void* x, DType dtype, std::span<const int64_t> shape,
                          std::span<const int64_t> strides, const Format& format, float* s_enc, cudaStream_t stream) {
  if (auto s = tensor_amax(x, dtype, shape, strides, s_enc, stream); !s) return s;
  return cuda_status("nvfp4_tensor_scale", kernels::launch_tensor_scale_from_amax(s_enc, format.elem, stream));
}

Status convert_scale_layout(const uint8_t* src, ScaleLayout from, uint8_t* dst, ScaleLayout to, ScaleShape shape,
                            cudaStream_t stream) {
  if (shape.rows > kMaxIndex / 2 || shape.cols > kMaxIndex / 2) return Status::error("shape: scale shape too large");
  if (scale_bytes(to, shape) > 0 && (!src || !dst)) return Status::error(!src ? "src: null pointer" : "dst: null pointer");
  return cuda_status("convert_scale_layout", kernels::launch_convert_scale_layout(src, from, dst, to, shape, stream));
}

}  // namespace mxattn
