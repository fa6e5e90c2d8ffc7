// Launch of the decode kernel for one head dim, dispatching on element width and block size.
// src/kernels/decode_attention_d{64,128,256}.cu instantiate it, so the variants compile in parallel.
#pragma once
#include <cuda_runtime.h>

#include "mxattn/kernels/attention/decode_kernel.h"

namespace mxattn::kernels {

template <int D, int Bits, int Block>
cudaError_t launch_decode_variant(const DecodeParams& p, int m_tiles, cudaStream_t stream) {
  const size_t smem = sizeof(DecodeShared<D>);
  const cudaError_t e =
      cudaFuncSetAttribute(decode_kernel<D, Bits, Block>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (e != cudaSuccess) return e;
  const dim3 grid(p.splits, m_tiles, p.batch * p.cache.heads_kv);
  decode_kernel<D, Bits, Block><<<grid, 128, smem, stream>>>(p);
  return cudaGetLastError();
}

template <int D>
cudaError_t launch_decode(const DecodeParams& p, int m_tiles, cudaStream_t stream) {
  const int bits = p.cache.k.format.elem.bits, block = p.cache.k.format.block;
  if (block == 16) {
    if (bits == 4) return launch_decode_variant<D, 4, 16>(p, m_tiles, stream);
    if (bits == 6) return launch_decode_variant<D, 6, 16>(p, m_tiles, stream);
    return launch_decode_variant<D, 8, 16>(p, m_tiles, stream);
  }
  if (bits == 4) return launch_decode_variant<D, 4, 32>(p, m_tiles, stream);
  if (bits == 6) return launch_decode_variant<D, 6, 32>(p, m_tiles, stream);
  return launch_decode_variant<D, 8, 32>(p, m_tiles, stream);
}

}  // namespace mxattn::kernels
