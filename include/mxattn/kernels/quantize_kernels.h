// Kernel parameters and launch entry points of the quantize / dequantize / amax / scale-layout
// kernels (src/kernels/). The api layer validates arguments and fills these; nothing here checks.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "mxattn/format/format.h"
#include "mxattn/kernels/fast_div.h"
#include "mxattn/layout/scale_layout.h"

namespace mxattn::kernels {

enum class DType : uint8_t { F32, F16, BF16 };

// Elements a thread loads, encodes and stores together along a row: 16 codes fill 2 * bits bytes
// whatever the width, so every group starts on a byte; 16 BF16 inputs are two 16-byte loads.
inline constexpr int kGroup = 16;
// Elements a quantize thread takes along a row: 64 bytes of input, 32 16-bit elements (one MX block, two
// NVFP4 blocks) or 16 F32 ones; a chunk's codes are whole bytes (16 x bits bits at least).
MXATTN_HD constexpr int chunk_elems(DType t) { return t == DType::F32 ? 16 : 32; }
inline constexpr int kMaxRowDims = 7;

// Row number -> offset (in elements) of the row's first element. The axes are the source tensor's
// axes other than the block axis, collapsed where they are contiguous, outermost first.
struct RowIndex {
  int dims = 1;
  FastDivmod extent[kMaxRowDims];  // extent[0] is never divided by
  int64_t stride[kMaxRowDims] = {};

  MXATTN_HD int64_t offset(uint32_t r) const {
    int64_t off = 0;
#pragma unroll
    for (int d = kMaxRowDims - 1; d > 0; --d) {
      if (d < dims) {
        uint32_t q, rem;
        extent[d].divmod(r, q, rem);
        off += int64_t(rem) * stride[d];
        r = q;
      }
    }
    return off + int64_t(r) * stride[0];
  }
};

// Which kernel encodes blocks along a contiguous axis (mxattn::RowsKernel, api/quantize.h, documents it).
enum class RowsKernel : uint8_t { Auto, Direct, Staged };

struct QuantizeParams {
  const void* x = nullptr;
  DType dtype = DType::F32;
  RowIndex row;
  uint32_t rows = 0;
  uint32_t rows_ext = 0;  // rows, or rows padded to 128 for the tiled layout: pad rows write zero scales
  int64_t cols = 0, col_stride = 1;
  uint32_t blocks = 0;    // per row
  // Along rows (the block axis contiguous): a thread per chunk of chunk_elems(dtype) columns, lanes
  // threads a block when the block is longer than a chunk; chunks are padded to a multiple of lanes so
  // a block never straddles warps. Item = row * chunks_padded + chunk.
  uint32_t chunks = 0;
  uint32_t lanes = 1;
  FastDivmod chunks_padded;
  // Along columns (the block axis strided, prefill V): a thread per block, rows fastest so that
  // neighbouring threads read neighbouring addresses. Item = block * rows_ext + row.
  bool by_columns = false;
  FastDivmod rows_ext_div;
  uint32_t items = 0;
  bool vec_load = false;  // col_stride 1 and every row's first element 16-byte aligned
  uint8_t* codes = nullptr;
  int64_t row_bytes = 0;
  uint8_t* scales = nullptr;
  ScaleLayout layout = ScaleLayout::RowMajor;
  Format format;
  const float* tensor_scale = nullptr;  // S_enc on the device where format.tensor_scale
  // UE4M3 scales: ue4m3_factor(format.elem, format.rule) and format.elem.max_value() (codecs.h
  // ue4m3_block_code's operands); launch_quantize sets them from format.
  float ue4m3_factor = 1.0f, elem_max = 1.0f;
  bool fast_codecs = true;
  RowsKernel rows_kernel = RowsKernel::Auto;
  // Launched as a programmatic dependent of launch_tensor_scale_from_amax (the pass ahead of it in the stream):
  // its blocks start while that pass drains and wait for it before they read tensor_scale.
  bool after_amax = false;
};

struct DequantizeParams {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  const float* tensor_scale = nullptr;
  int64_t row_bytes = 0;
  ScaleLayout layout = ScaleLayout::RowMajor;
  Format format;
  uint32_t blocks = 0;
  void* y = nullptr;
  DType dtype = DType::F32;
  RowIndex row;  // of the output
  uint32_t rows = 0;
  int64_t cols = 0, col_stride = 1;
  uint32_t groups = 0;
  bool by_columns = false;  // output strided along the block axis: rows fastest
  FastDivmod groups_div, rows_div;
  uint32_t items = 0;
  bool vec_store = false;
};

struct AmaxParams {
  const void* x = nullptr;
  DType dtype = DType::F32;
  RowIndex row;
  uint32_t rows = 0;
  int64_t cols = 0, col_stride = 1;
  uint32_t groups = 0;
  FastDivmod groups_div;
  uint32_t items = 0;
  bool vec_load = false;
};

// Each returns the launch's error (cudaGetLastError).
cudaError_t launch_quantize(const QuantizeParams& p, cudaStream_t stream);
cudaError_t launch_dequantize(const DequantizeParams& p, cudaStream_t stream);
// *amax_bits must be zero before: the kernel atomically maxes the float bits of |x| into it.
cudaError_t launch_amax(const AmaxParams& p, float* amax, cudaStream_t stream);
// In place: *value = nvfp4_tensor_scale(*value, elem); on sm_90+ a programmatic dependent of the amax kernel,
// and the quantize launch after it one of this (QuantizeParams::after_amax).
cudaError_t launch_tensor_scale_from_amax(float* value, const Element& elem, cudaStream_t stream);
cudaError_t launch_convert_scale_layout(const uint8_t* src, ScaleLayout from, uint8_t* dst, ScaleLayout to,
                                        ScaleShape shape, cudaStream_t stream);

}  // namespace mxattn::kernels
