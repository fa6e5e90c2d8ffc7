// GPU quantization, dequantization and scale-layout conversion: host launchers.
//
// Pointers are device memory; shapes and strides count elements (strides >= 0, any order). The
// quantized tensor is stored exactly as the CPU reference's QuantizedTensor (reference/quantize.h):
// rows of packed codes, block axis last, each row padded to whole bytes; for a block axis that is
// not the last one (prefill V [B,S,H,D] blocked along S) the rows are the other axes in source order,
// so V is written [B,H,D,S]. Scales are row-major [rows, blocks] or 128x4 tiled (padding zeroed).
// Every launcher only enqueues work on `stream`; none synchronizes.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "mxattn/api/status.h"
#include "mxattn/format/format.h"
#include "mxattn/kernels/quantize_kernels.h"
#include "mxattn/layout/scale_layout.h"

namespace mxattn {

using DType = kernels::DType;  // F32, F16, BF16
size_t dtype_bytes(DType t);
const char* dtype_name(DType t);  // f32, f16, bf16
std::optional<DType> parse_dtype(std::string_view name);

inline constexpr int kMaxRank = 8;

// Sizes of a quantized tensor.
struct QuantizedGeometry {
  std::vector<int64_t> stored_shape;  // the other axes in source order, then the block axis
  int block_axis = -1;                // in the source order, normalized to [0, rank)
  size_t rows = 0, cols = 0;          // cols: the block axis' extent
  size_t row_bytes = 0;               // packed_bytes(cols, bits)
  size_t blocks_per_row = 0;
  size_t code_bytes = 0;   // rows * row_bytes
  size_t scale_bytes = 0;  // in the chosen layout, padding included
  ScaleShape scale_shape() const { return {rows, blocks_per_row}; }
};
// Fails naming the argument when the shape or the block axis is invalid.
Status quantized_geometry(std::span<const int64_t> shape, int block_axis, const Format& format, ScaleLayout layout,
                          QuantizedGeometry* out);

// Device buffers of a quantized tensor.
struct QuantizedBuffers {
  uint8_t* codes = nullptr;       // code_bytes
  uint8_t* scales = nullptr;      // scale_bytes
  float* tensor_scale = nullptr;  // one float, S_enc; only formats with a tensor scale use it
};
struct QuantizedConstBuffers {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  const float* tensor_scale = nullptr;
  QuantizedConstBuffers() = default;
  QuantizedConstBuffers(const uint8_t* c, const uint8_t* s, const float* t) : codes(c), scales(s), tensor_scale(t) {}
  QuantizedConstBuffers(const QuantizedBuffers& b) : codes(b.codes), scales(b.scales), tensor_scale(b.tensor_scale) {}
};

enum class TensorScale : uint8_t {
  Compute,  // an amax pass over the input writes S_enc = nvfp4_tensor_scale(amax) to *tensor_scale
  Given,    // *tensor_scale already holds S_enc (a KV cache appending with the scale it started with)
};

// The kernel for blocks along a contiguous axis. Staged takes a contiguous tensor whose rows are whole
// 64-byte chunks (32 16-bit or 16 F32 elements), with 16-byte aligned input and codes, in 16 KB tiles through
// shared memory, the next tile's copies in flight while one is encoded; Direct loads each thread's chunk and
// encodes it. Auto: Staged where it applies and the tensor gives it a wave of CTAs (from about 64-100 MiB of
// input on an H200, by the kernel's CTAs an SM: bench/quantize_notes.md), else Direct. Staged where it does not
// apply runs Direct.
using RowsKernel = kernels::RowsKernel;  // Auto, Direct, Staged

struct QuantizeOptions {
  TensorScale tensor_scale = TensorScale::Compute;
  RowsKernel rows_kernel = RowsKernel::Auto;
  // E4M3 and E5M2 through the cvt.rn.satfinite instruction, E2M1 through FMA rounding: tests check both
  // against Element::encode on every non-NaN float, and blocks that can produce NaN always take
  // Element::encode. false: Element::encode for every element (slower, same bits).
  bool fast_codecs = true;
};

// x: a tensor of `dtype` with `shape` and `strides` (empty: contiguous); blocks of format.block
// elements along `block_axis` (negative counts from the end).
Status quantize(const void* x, DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides,
                int block_axis, const Format& format, ScaleLayout layout, const QuantizedBuffers& out,
                cudaStream_t stream, const QuantizeOptions& options = {});

// The inverse: y gets the decoded values (e * s, or e * s / S_enc), rounded to `dtype`, in the source
// tensor's shape (strides: empty = contiguous).
Status dequantize(const QuantizedConstBuffers& in, const Format& format, ScaleLayout layout, void* y, DType dtype,
                  std::span<const int64_t> shape, std::span<const int64_t> strides, int block_axis,
                  cudaStream_t stream);

// *amax = the largest |x| (NaN ignored, as fmaxf), and the NVFP4 tensor scale computed from it.
Status tensor_amax(const void* x, DType dtype, std::span<const int64_t> shape, std::span<const int64_t> strides,
                   float* amax, cudaStream_t stream);
Status nvfp4_tensor_scale(const void* x, DType dtype, std::span<const int64_t> shape,
                          std::span<const int64_t> strides, const Format& format, float* s_enc, cudaStream_t stream);

// Scale layouts, both ways; dst holds scale_bytes(to, shape) bytes, padding written as zeros.
Status convert_scale_layout(const uint8_t* src, ScaleLayout from, uint8_t* dst, ScaleLayout to, ScaleShape shape,
                            cudaStream_t stream);

}  // namespace mxattn
