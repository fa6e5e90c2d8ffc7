// Dequantize: packed codes + block scales -> FP32/FP16/BF16, as reference/quantize.cpp's dequantize:
// x = e * s, or e * s / S_enc with a tensor scale, then one rounding to the output type. A thread
// takes 16 consecutive codes of a row (2 * bits bytes, one 16-byte load for 8-bit codes). The element
// values come from a shared-memory table filled by Element::decode, the scales from decode_scale.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "mxattn/format/format.h"
#include "mxattn/kernels/quantize_kernels.h"
#include "mxattn/kernels/tensor_io.h"

namespace mxattn::kernels {
namespace {

constexpr int kThreads = 256;

template <DType T>
struct Output;
template <>
struct Output<DType::F32> {
  using type = float;
  __device__ static uint32_t pack2(float lo, float hi) = delete;
};
template <>
struct Output<DType::BF16> {
  using type = __nv_bfloat16;
  __device__ static uint32_t pack2(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};
template <>
struct Output<DType::F16> {
  using type = __half;
  __device__ static uint32_t pack2(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <DType T>
__device__ __forceinline__ typename Output<T>::type convert(float v) {
  if constexpr (T == DType::F32) return v;
  else if constexpr (T == DType::BF16) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}

// Code i (of 16) from the bit stream in words[].
template <int kBits>
__device__ __forceinline__ uint32_t unpack16(const uint32_t (&words)[4], int i, int bits) {
  const int n = kBits ? kBits : bits;
  const int bit = i * n;
  uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (bit / 32 == j) lo = words[j];
    if (bit / 32 + 1 == j) hi = words[j];
  }
  const uint64_t window = (uint64_t(hi) << 32 | lo) >> (bit % 32);
  return uint32_t(window) & ((1u << n) - 1);
}

template <DType T, int kBits>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(const DequantizeParams p) {
  __shared__ float table[256];
  const int bits = kBits ? kBits : p.format.elem.bits;
  for (int i = threadIdx.x; i < (1 << bits); i += kThreads) table[i] = p.format.elem.decode(uint32_t(i));
  __syncthreads();

  const uint32_t item = blockIdx.x * kThreads + threadIdx.x;
  if (item >= p.items) return;
  uint32_t r, g;
  if (p.by_columns) {
    p.rows_div.divmod(item, g, r);
  } else {
    p.groups_div.divmod(item, r, g);
  }

  const int64_t byte0 = int64_t(g) * 2 * bits;
  uint32_t words[4];
  load_bytes(p.codes + int64_t(r) * p.row_bytes + byte0, int(std::min<int64_t>(2 * bits, p.row_bytes - byte0)), words);

  const int block = p.format.block;
  const int64_t c0 = int64_t(g) * kGroup;
  const uint32_t b0 = uint32_t(c0 / block);
  const float s0 = decode_scale(p.format.scale, p.scales[scale_offset(p.layout, r, b0, p.blocks)]);
  const float s1 = block < kGroup && b0 + 1 < p.blocks
                       ? decode_scale(p.format.scale, p.scales[scale_offset(p.layout, r, b0 + 1, p.blocks)])
                       : s0;
  const bool two_level = p.format.tensor_scale;
  const float s_enc = two_level ? *p.tensor_scale : 1.0f;

  float v[kGroup];
#pragma unroll
  for (int i = 0; i < kGroup; ++i) {
    const float e = table[unpack16<kBits>(words, i, bits)];
    const float s = block < kGroup && i >= 8 ? s1 : s0;
    v[i] = two_level ? e * s / s_enc : e * s;
  }

  using Out = typename Output<T>::type;
  Out* y = static_cast<Out*>(p.y) + p.row.offset(r);
  const int valid = int(std::min<int64_t>(kGroup, p.cols - c0));
  if (p.vec_store && valid == kGroup) {
    uint4* dst = reinterpret_cast<uint4*>(y + c0);
    if constexpr (T == DType::F32) {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        __stcs(dst + q, make_uint4(float_bits(v[4 * q]), float_bits(v[4 * q + 1]), float_bits(v[4 * q + 2]),
                                   float_bits(v[4 * q + 3])));
    } else {
#pragma unroll
      for (int q = 0; q < 2; ++q)
        __stcs(dst + q, make_uint4(Output<T>::pack2(v[8 * q], v[8 * q + 1]), Output<T>::pack2(v[8 * q + 2], v[8 * q + 3]),
                                   Output<T>::pack2(v[8 * q + 4], v[8 * q + 5]),
                                   Output<T>::pack2(v[8 * q + 6], v[8 * q + 7])));
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kGroup; ++i)
    if (i < valid) y[(c0 + i) * p.col_stride] = convert<T>(v[i]);
}

template <DType T>
cudaError_t launch(const DequantizeParams& p, cudaStream_t stream) {
  if (p.items == 0) return cudaSuccess;
  const uint32_t grid = (p.items + kThreads - 1) / kThreads;
  switch (p.format.elem.bits) {
    case 8: dequantize_kernel<T, 8><<<grid, kThreads, 0, stream>>>(p); break;
    case 6: dequantize_kernel<T, 6><<<grid, kThreads, 0, stream>>>(p); break;
    case 4: dequantize_kernel<T, 4><<<grid, kThreads, 0, stream>>>(p); break;
    default: dequantize_kernel<T, 0><<<grid, kThreads, 0, stream>>>(p); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_dequantize(const DequantizeParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case DType::F32: return launch<DType::F32>(p, stream);
    case DType::F16: return launch<DType::F16>(p, stream);
    default: return launch<DType::BF16>(p, stream);
  }
}

}  // namespace mxattn::kernels
