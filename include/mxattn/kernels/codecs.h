// Element encoders for the GPU kernels.
//
// Every code the kernels write comes from Element::encode (format/element.h), either directly or
// through a faster route that a GPU test (tests/gpu/codec_test.cu) compares with Element::encode on
// all 2^32 - 2^24 non-NaN floats:
//   E4M3, E5M2: the conversion instruction cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (sm_89+).
//   E2M1:       Hopper has no FP4 conversion; RNE onto the grid {0, .5, 1, 1.5, 2, 3, 4, 6} by
//               scaling to a quantum of 1 and adding 1.5 * 2^23 (one FMA), then a table-free code.
// NaN inputs are outside that equivalence (the instruction keeps a NaN's sign); the kernels send any
// block that can produce a NaN product through Element::encode.
#pragma once
#include <cstdint>

#include "mxattn/format/bits.h"
#include "mxattn/format/element.h"

namespace mxattn::kernels {

// cvt.rn.satfinite.e4m3x2.f32 d, a, b: d = {e4m3(a) << 8 | e4m3(b)}; PTX ISA 8.1 "cvt"; sm_89+.
__device__ __forceinline__ uint32_t cvt_rn_satfinite_e4m3x2_f32(float hi, float lo) {
  uint16_t d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

// cvt.rn.satfinite.e5m2x2.f32 d, a, b: d = {e5m2(a) << 8 | e5m2(b)}; PTX ISA 8.1 "cvt"; sm_89+.
__device__ __forceinline__ uint32_t cvt_rn_satfinite_e5m2x2_f32(float hi, float lo) {
  uint16_t d;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

// E2M1 code of v, equal to kE2M1.encode(v) for every non-NaN v. E2M1's quantum is 0.5 below 2,
// 1 in [2, 4) and 2 from 4: adding magic = 1.5 * 2^23 * quantum rounds |v| to its quantum (RNE, one
// FADD), and the code is that count plus 2 per binade above the first. No branch, no table.
MXATTN_HD uint32_t e2m1_encode_fma(float v) {
  const float a = fminf(fabsf(v), 8.0f);  // beyond 6 everything saturates; keeps the sum in range
  const uint32_t ea = float_bits(a) >> 23;
  const uint32_t e = ea > 127u ? ea : 127u;  // biased exponent, at least that of 1.0
  const float magic = bits_float((e << 23) + ((22u << 23) | 0x400000u));  // 1.5 * 2^23 * 2^(e - 128)
  const uint32_t code = float_bits(a + magic) - float_bits(magic) + 2 * (e - 127);
  return ((float_bits(v) >> 28) & 0x8u) | (code < 7u ? code : 7u);
}

enum class FastRoute : uint8_t { None, CvtE4M3, CvtE5M2, FmaE2M1 };

// A compile-time element: the compiler folds its fields into Element::encode.
#define MXATTN_STATIC_ELEMENT(Name, expr, fast_route)                                   \
  struct Name {                                                                         \
    MXATTN_HD static constexpr Element elem() { return expr; }                          \
    static constexpr int kBits = 1 + (expr).exp_bits + (expr).man_bits;                 \
    static constexpr bool kStatic = true;                                               \
    static constexpr FastRoute kFast = fast_route;                                      \
    MXATTN_HD Element element() const { return elem(); }                                \
    MXATTN_HD int bits() const { return kBits; }                                        \
  };

MXATTN_STATIC_ELEMENT(CodecE2M1, Element::minifloat(2, 1), FastRoute::FmaE2M1)
MXATTN_STATIC_ELEMENT(CodecE2M3, Element::minifloat(2, 3), FastRoute::None)
MXATTN_STATIC_ELEMENT(CodecE3M2, Element::minifloat(3, 2), FastRoute::None)
MXATTN_STATIC_ELEMENT(CodecE4M3, Element::minifloat(4, 3, Specials::NanOnly), FastRoute::CvtE4M3)
MXATTN_STATIC_ELEMENT(CodecE5M2, Element::minifloat(5, 2, Specials::Ieee), FastRoute::CvtE5M2)
#undef MXATTN_STATIC_ELEMENT

struct CodecInt8 {
  MXATTN_HD static constexpr Element elem() { return Element::integer(8); }
  static constexpr int kBits = 8;
  static constexpr bool kStatic = true;
  static constexpr FastRoute kFast = FastRoute::None;
  MXATTN_HD Element element() const { return elem(); }
  MXATTN_HD int bits() const { return kBits; }
};

// Any element (custom EeMm, INTn), read from the kernel's parameters.
struct CodecRuntime {
  Element e;
  static constexpr int kBits = 0;
  static constexpr bool kStatic = false;
  static constexpr FastRoute kFast = FastRoute::None;
  MXATTN_HD Element element() const { return e; }
  MXATTN_HD int bits() const { return e.bits; }
};

// Codes of 16 consecutive elements v[i] (scaled already), packed as the little-endian bit stream of
// pack.h into 2 * bits bytes: words[0] holds elements 0.., bits [32j, 32j + 32) in words[j].
// `fast`: take the codec's fast route. The caller guarantees that no v[i] is NaN and that v[i] is
// +0 for i >= valid (the fast routes encode +0 as code 0 and skip the masking).
template <typename Codec>
__device__ __forceinline__ void encode_pack16(const Codec& codec, const float (&v)[16], int valid, bool fast,
                                              uint32_t (&words)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) words[j] = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (Codec::kFast == FastRoute::CvtE4M3 || Codec::kFast == FastRoute::CvtE5M2) {
    if (fast) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float* x = &v[4 * j];
        const uint32_t lo = Codec::kFast == FastRoute::CvtE4M3 ? cvt_rn_satfinite_e4m3x2_f32(x[1], x[0])
                                                               : cvt_rn_satfinite_e5m2x2_f32(x[1], x[0]);
        const uint32_t hi = Codec::kFast == FastRoute::CvtE4M3 ? cvt_rn_satfinite_e4m3x2_f32(x[3], x[2])
                                                               : cvt_rn_satfinite_e5m2x2_f32(x[3], x[2]);
        words[j] = lo | hi << 16;
      }
      return;
    }
  }
#endif
  if constexpr (Codec::kFast == FastRoute::FmaE2M1) {
    if (fast) {
#pragma unroll
      for (int i = 0; i < 16; ++i) words[i / 8] |= e2m1_encode_fma(v[i]) << (4 * (i % 8));
      return;
    }
  }
  const Element e = codec.element();
  if constexpr (Codec::kStatic) {
    constexpr int n = Codec::kBits;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t c = i < valid ? e.encode(v[i]) : 0u;
      const int bit = i * n;  // compile-time after unrolling
      words[bit / 32] |= c << (bit % 32);
      if (bit % 32 + n > 32) words[bit / 32 + 1] |= c >> (32 - bit % 32);
    }
  } else {
    const int n = e.bits;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t c = i < valid ? e.encode(v[i]) : 0u;
      const int bit = i * n;
      // Register arrays must be indexed by constants: select the word instead of indexing it.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (bit / 32 == j) words[j] |= c << (bit % 32);
        if (bit % 32 + n > 32 && bit / 32 + 1 == j) words[j] |= c >> (32 - bit % 32);
      }
    }
  }
}

}  // namespace mxattn::kernels
