// The NVFP4 tensor-scale pass (amax over the tensor, then S_enc = nvfp4_tensor_scale(amax)) and the
// scale-layout conversion kernels.
#include <cuda_runtime.h>

#include <algorithm>

#include "mxattn/format/scale.h"
#include "mxattn/kernels/dependent_launch.h"
#include "mxattn/kernels/launchable.h"
#include "mxattn/kernels/quantize_kernels.h"
#include "mxattn/kernels/tensor_io.h"
#include "mxattn/ptx/griddep.h"

namespace mxattn::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // 16-element groups in flight per thread

template <DType T>
__global__ void __launch_bounds__(kThreads) amax_kernel(const AmaxParams p, uint32_t* amax_bits) {
  constexpr int W = Input<T>::kWords;
  uint32_t key = 0;
  const uint32_t stride = gridDim.x * kThreads * kUnroll;
  for (uint64_t base = uint64_t(blockIdx.x) * kThreads * kUnroll + threadIdx.x; base < p.items; base += stride) {
    uint32_t w[kUnroll][W];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t item = base + u * kThreads;
      if (item < p.items) {
        uint32_t r, g;
        p.groups_div.divmod(uint32_t(item), r, g);
        load_group<T, true>(p.x, p.row.offset(r), int64_t(g) * kGroup, p.cols, p.col_stride, p.vec_load, w[u]);
      } else {
#pragma unroll
        for (int j = 0; j < W; ++j) w[u][j] = 0;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) key = max(key, abs_key_ignoring_nan<T>(w[u]));
  }
  ptx::griddep_launch_dependents();  // (the tensor-scale kernel: it waits for this grid's end)
  // Every value is non-negative and not NaN: float order is the order of the bits.
  uint32_t bits = float_bits(Input<T>::key_to_float(key));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, o));
  __shared__ uint32_t warp_max[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = bits;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < kThreads / 32; ++i) bits = max(bits, warp_max[i]);
    atomicMax(amax_bits, bits);
  }
}

// A programmatic dependent of the amax kernel, and the quantize kernels of this one: they start their loads
// while it runs and wait for it before they read the tensor scale.
__global__ void tensor_scale_kernel(float* value, Element elem) {
  ptx::griddep_launch_dependents();
  ptx::griddep_wait();
  *value = nvfp4_tensor_scale(*value, elem);
}

// One thread per destination byte.
__global__ void __launch_bounds__(kThreads)
    convert_scale_layout_kernel(const uint8_t* src, ScaleLayout from, uint8_t* dst, ScaleLayout to, ScaleShape shape,
                                size_t dst_bytes) {
  for (size_t o = size_t(blockIdx.x) * kThreads + threadIdx.x; o < dst_bytes; o += size_t(gridDim.x) * kThreads) {
    size_t r, c;
    if (to == ScaleLayout::Tiled128x4) {
      const RowCol rc = tiled_position(o, shape.cols);
      r = rc.r, c = rc.c;
    } else {
      r = o / shape.cols, c = o % shape.cols;
    }
    dst[o] = r < shape.rows && c < shape.cols ? src[scale_offset(from, r, c, shape.cols)] : uint8_t(0);
  }
}

DeviceInfo device() {
  DeviceInfo d;
  if (current_device(&d) != cudaSuccess || d.sms <= 0) d.sms = 132;
  return d;
}

template <DType T>
cudaError_t launch_amax_kernel(const AmaxParams& p, uint32_t* out, cudaStream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(amax_kernel<T>);
  const Launchable l = launchable(kernel, kThreads, 0);
  if (l.error != cudaSuccess) return l.error;
  // One wave of resident CTAs (60 registers: four an SM; a grid of eight an SM ran as two waves, one drain more).
  const uint64_t per_block = uint64_t(kThreads) * kUnroll;
  const uint32_t grid = uint32_t(std::min<uint64_t>((p.items + per_block - 1) / per_block,
                                                    uint64_t(l.sms) * std::max(1, l.blocks_per_sm)));
  amax_kernel<T><<<grid, kThreads, 0, stream>>>(p, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_amax(const AmaxParams& p, float* amax, cudaStream_t stream) {
  if (p.items == 0) return cudaSuccess;
  auto* out = reinterpret_cast<uint32_t*>(amax);
  switch (p.dtype) {
    case DType::F32: return launch_amax_kernel<DType::F32>(p, out, stream);
    case DType::F16: return launch_amax_kernel<DType::F16>(p, out, stream);
    default: return launch_amax_kernel<DType::BF16>(p, out, stream);
  }
}

cudaError_t launch_tensor_scale_from_amax(float* value, const Element& elem, cudaStream_t stream) {
  const cudaLaunchConfig_t cfg = dependent_launch(dim3(1), 1, 0, stream, device().major >= 9);
  return cudaLaunchKernelEx(&cfg, tensor_scale_kernel, value, elem);
}

cudaError_t launch_convert_scale_layout(const uint8_t* src, ScaleLayout from, uint8_t* dst, ScaleLayout to,
                                        ScaleShape shape, cudaStream_t stream) {
  const size_t bytes = scale_bytes(to, shape);
  if (bytes == 0) return cudaSuccess;
  const uint32_t grid = uint32_t(std::min<size_t>((bytes + kThreads - 1) / kThreads, size_t(device().sms) * 16));
  convert_scale_layout_kernel<<<grid, kThreads, 0, stream>>>(src, from, dst, to, shape, bytes);
  return cudaGetLastError();
}

}  // namespace mxattn::kernels
