// Launch of the decode kernel for one head dim, dispatching on K's and V's element widths and block sizes.
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

template <int D, class KF, class VF>
DecodeVariant decode_variant() {
  using T = DecodeTraits<D, KF, VF>;
  static_assert(sizeof(DecodeShared<T>) <= 232448, "shared memory of a block");
  return {reinterpret_cast<const void*>(&decode_kernel<D, KF, VF>), T::kThreads, sizeof(DecodeShared<T>)};
}

// K and V of one element width and block: the fast codecs (E2M1, E4M3) where both are that element (E2M1 with
// UE4M3 scales on both through FP16), each tensor through its own table otherwise.
template <int D, int Block>
DecodeVariant select_same(const Format& kf, const Format& vf) {
  const Element &k = kf.elem, &v = vf.elem;
  const bool same = k == v;
  if (same && k == Element::minifloat(2, 1) && kf.scale == ScaleType::UE4M3 && vf.scale == ScaleType::UE4M3)
    return decode_variant<D, CacheCodec<Codec::E2M1Ue4m3, 4, Block>, CacheCodec<Codec::E2M1Ue4m3, 4, Block>>();
  if (same && k == Element::minifloat(2, 1) && Block == 32 && kf.scale == ScaleType::E8M0 && vf.scale == ScaleType::E8M0)
    return decode_variant<D, CacheCodec<Codec::E2M1E8m0, 4, 32>, CacheCodec<Codec::E2M1E8m0, 4, 32>>();
  if (same && k == Element::minifloat(2, 1))
    return decode_variant<D, CacheCodec<Codec::E2M1, 4, Block>, CacheCodec<Codec::E2M1, 4, Block>>();
  if (same && k == e4m3()) return decode_variant<D, CacheCodec<Codec::E4M3, 8, Block>, CacheCodec<Codec::E4M3, 8, Block>>();
  if (k.bits == 4) return decode_variant<D, CacheCodec<Codec::Lut, 4, Block>, CacheCodec<Codec::Lut, 4, Block>>();
  if (k.bits == 6) return decode_variant<D, CacheCodec<Codec::Lut, 6, Block>, CacheCodec<Codec::Lut, 6, Block>>();
  return decode_variant<D, CacheCodec<Codec::Lut, 8, Block>, CacheCodec<Codec::Lut, 8, Block>>();
}

// K and V in formats of different widths or blocks (a wider K than V, say): each one of the codecs of
// the named formats, MxCodecs (mxfp8's E4M3 / 32, mxfp6's 6-bit table / 32, mxfp4's E2M1 / 32 with E8M0 scales, nvfp4's
// E2M1 / 16 with UE4M3 scales), compiled for every pair. Null where a format is none of them.
using Mxfp8Codec = CacheCodec<Codec::E4M3, 8, 32>;
using Mxfp6Codec = CacheCodec<Codec::Lut, 6, 32>;
using Mxfp4Codec = CacheCodec<Codec::E2M1E8m0, 4, 32>;
using Nvfp4Codec = CacheCodec<Codec::E2M1Ue4m3, 4, 16>;

// Which of the four a format decodes with: 0..3, or -1.
inline int mixed_codec_index(const Format& f) {
  if (f.elem == e4m3() && f.block == 32) return 0;
  if (f.elem.bits == 6 && f.block == 32) return 1;
  if (f.elem == Element::minifloat(2, 1) && f.block == 32 && f.scale == ScaleType::E8M0) return 2;
  if (f.elem == Element::minifloat(2, 1) && f.block == 16 && f.scale == ScaleType::UE4M3) return 3;
  return -1;
}

template <int D, class KF>
DecodeVariant select_mixed_v(const Format& v) {
  switch (mixed_codec_index(v)) {
    case 0: return decode_variant<D, KF, Mxfp8Codec>();
    case 1: return decode_variant<D, KF, Mxfp6Codec>();
    case 2: return decode_variant<D, KF, Mxfp4Codec>();
    case 3: return decode_variant<D, KF, Nvfp4Codec>();
    default: return {};
  }
}

template <int D>
DecodeVariant select_decode(const PagedKv& kv) {
  const Format &k = kv.k.format, &v = kv.v.format;
  if (k.elem.bits == v.elem.bits && k.block == v.block)
    return k.block == 16 ? select_same<D, 16>(k, v) : select_same<D, 32>(k, v);
  switch (mixed_codec_index(k)) {
    case 0: return select_mixed_v<D, Mxfp8Codec>(v);
    case 1: return select_mixed_v<D, Mxfp6Codec>(v);
    case 2: return select_mixed_v<D, Mxfp4Codec>(v);
    case 3: return select_mixed_v<D, Nvfp4Codec>(v);
    default: return {};
  }
}

}  // namespace mxattn::kernels
