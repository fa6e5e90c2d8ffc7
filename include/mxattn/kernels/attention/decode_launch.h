// Launch of the decode kernel for one head dim, dispatching on element width and block size.
// src/kernels/decode_attention_d{64,128,256}.cu instantiate it, so the variants compile in parallel.
#pragma once
#include <cuda_runtime.h>

#include "mxattn/kernels/attention/decode_kernel.h"

namespace mxattn::kernels {

// The kernel variant for a cache's formats, its block size and dynamic shared memory: the host
// sizes the split grid from its occupancy, then launches it.
struct DecodeVariant {
  const void* kernel = nullptr;
  int threads = 0;
  size_t smem = 0;
};

template <int D, Codec C, int Bits, int Block>
DecodeVariant decode_variant() {
  using T = DecodeTraits<D, Bits, Block>;
  static_assert(sizeof(DecodeShared<T>) <= 232448, "shared memory of a block");
  return {reinterpret_cast<const void*>(&decode_kernel<D, C, Bits, Block>), T::kThreads, sizeof(DecodeShared<T>)};
}

template <int D, int Block>
DecodeVariant select_decode_block(const PagedKv& kv) {
  const Element e = kv.k.format.elem;
  const bool same = kv.v.format.elem == e;  // the fast codecs need K and V in one element type
  if (same && e == Element::minifloat(2, 1)) return decode_variant<D, Codec::E2M1, 4, Block>();
  if (same && e == e4m3()) return decode_variant<D, Codec::E4M3, 8, Block>();
  if (e.bits == 4) return decode_variant<D, Codec::Lut, 4, Block>();
  if (e.bits == 6) return decode_variant<D, Codec::Lut, 6, Block>();
  return decode_variant<D, Codec::Lut, 8, Block>();
}

template <int D>
DecodeVariant select_decode(const PagedKv& kv) {
  return kv.k.format.block == 16 ? select_decode_block<D, 16>(kv) : select_decode_block<D, 32>(kv);
}

}  // namespace mxattn::kernels
