// Launch of the decode kernel for one head dim, dispatching on element width and block size.
// src/kernels/decode_attention_d{64,128,256}.cu instantiate it, so the variants compile in parallel.
#pragma once
#include <cuda_runtime.h>

#include "mxattn/kernels/attention/decode_kernel.h"

namespace mxattn::kernels {

template <int D, Codec C, int Bits, int Block>
cudaError_t launch_decode_variant(const DecodeParams& p, int m_tiles, cudaStream_t stream) {
  const size_t smem = sizeof(DecodeShared<DecodeTraits<D, Bits, Block>>);
  const cudaError_t e =
      cudaFuncSetAttribute(decode_kernel<D, C, Bits, Block>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (e != cudaSuccess) return e;
  const dim3 grid(p.splits, m_tiles, p.batch * p.cache.heads_kv);
  decode_kernel<D, C, Bits, Block><<<grid, 128, smem, stream>>>(p);
  return cudaGetLastError();
}

template <int D, int Block>
cudaError_t launch_decode_block(const DecodeParams& p, int m_tiles, cudaStream_t stream) {
  const Element e = p.cache.k.format.elem;
  const bool same = p.cache.v.format.elem == e;  // the fast codecs need K and V in one element type
  if (same && e == Element::minifloat(2, 1)) return launch_decode_variant<D, Codec::E2M1, 4, Block>(p, m_tiles, stream);
  if (same && e == e4m3()) return launch_decode_variant<D, Codec::E4M3, 8, Block>(p, m_tiles, stream);
  if (e.bits == 4) return launch_decode_variant<D, Codec::Lut, 4, Block>(p, m_tiles, stream);
  if (e.bits == 6) return launch_decode_variant<D, Codec::Lut, 6, Block>(p, m_tiles, stream);
  return launch_decode_variant<D, Codec::Lut, 8, Block>(p, m_tiles, stream);
}

template <int D>
cudaError_t launch_decode(const DecodeParams& p, int m_tiles, cudaStream_t stream) {
  return p.cache.k.format.block == 16 ? launch_decode_block<D, 16>(p, m_tiles, stream)
                                      : launch_decode_block<D, 32>(p, m_tiles, stream);
}

}  // namespace mxattn::kernels
