// Scale codecs (E8M0, UE4M3) and the scale rules of DESIGN.md §2 (RCEIL, FLOOR, NVFP4).
#pragma once
#include <cstdint>

#include "mxattn/format/bits.h"
#include "mxattn/format/element.h"

namespace mxattn {

enum class ScaleType : uint8_t { E8M0, UE4M3 };
enum class ScaleRule : uint8_t {
  Rceil,  // X = 2^ceil(log2(amax / max_elem)); never clips (cuDNN, cuBLAS, Transformer Engine)
  Floor,  // X = 2^(floor(log2(amax)) - emax_elem); may clip the block maximum (OCP MX v1.0 §6.3)
  Nvfp4,  // two-level: FP32 tensor scale S_enc and UE4M3 block scales (Transformer Engine)
};

inline constexpr uint8_t kE8M0Nan = 0xFF;
// The E4M3 codec behind UE4M3 scales; a function, since namespace-scope objects are host-only in CUDA.
MXATTN_HD constexpr Element e4m3() { return Element::minifloat(4, 3, Specials::NanOnly); }
inline constexpr uint8_t kUE4M3Nan = 0x7F;

// E8M0: 2^(b - 127), no sign, no zero; 0xFF is NaN.
MXATTN_HD float decode_e8m0(uint32_t b) { return b == kE8M0Nan ? quiet_nan() : pow2f(int(b) - 127); }

// UE4M3: a positive E4M3; 0x7F is NaN.
MXATTN_HD float decode_ue4m3(uint32_t b) { return e4m3().decode(b & 0x7F); }

MXATTN_HD float decode_scale(ScaleType t, uint32_t b) {
  return t == ScaleType::E8M0 ? decode_e8m0(b) : decode_ue4m3(b);
}

// E8M0 code of 2^ceil(log2 f) for f >= 0, read off the bits of f; 2^-127 (0x00) at the bottom,
// 2^127 (0xFE) at the top. This is Transformer Engine's float_to_e8m0.
MXATTN_HD uint32_t e8m0_rceil(float f) {
  const uint32_t u = float_bits(f);
  uint32_t e = (u >> 23) & 0xFF;
  const uint32_t m = u & 0x7fffffu;
  if (m > 0 && e != 0xFE && !(e == 0 && m <= 0x400000u)) ++e;  // 0x400000 is 2^-127 itself
  return e;
}

// floor(log2 a) for finite a > 0, subnormals included.
MXATTN_HD int floor_log2(float a) {
  const uint32_t u = float_bits(a) & 0x7fffffffu;
  if (u >= 0x00800000u) return int(u >> 23) - 127;
  int k = 22;
  while (!((u >> k) & 1u)) --k;
  return k - 149;
}

// Smallest (up) or largest (!up) UE4M3 code bounding f >= 0; saturates at 448.
MXATTN_HD uint32_t ue4m3_directed(float f, bool up) {
  uint32_t c = e4m3().encode(f);
  const float v = e4m3().decode(c);
  if (up && v < f && c < e4m3().max_code()) ++c;
  if (!up && v > f) --c;
  return c;
}

// The block's scale code and the factor its elements are multiplied by before encoding.
struct BlockScale {
  uint32_t code;
  float mult;
};

// The E8M0 scale of a finite block from its amax, given the element's 1 / max_value (RCEIL) and emax (FLOOR);
// choose_block_scale's E8M0 rules. (Kernels of an element known at run time pass the two precomputed: a division
// and a decode a block cost the custom formats' kernels a quarter of their speed at blocks of 16.)
MXATTN_HD BlockScale e8m0_block_scale(float amax, ScaleRule rule, float inv_max_elem, int emax) {
  int b;
  if (rule == ScaleRule::Floor) {
    b = amax == 0.0f ? 0 : floor_log2(amax) - emax + 127;
    b = b < 0 ? 0 : (b > 254 ? 254 : b);
  } else {
    b = int(e8m0_rceil(amax * inv_max_elem));
  }
  return {uint32_t(b), pow2f(127 - b)};
}

// amax: the largest |x| of the block; nonfinite: the block holds a NaN or an Inf.
// tensor_scale: S_enc of the NVFP4 rule (1 otherwise).
MXATTN_HD BlockScale choose_block_scale(float amax, bool nonfinite, const Element& elem, ScaleType type,
                                        ScaleRule rule, float tensor_scale) {
  if (nonfinite) return {type == ScaleType::E8M0 ? kE8M0Nan : kUE4M3Nan, quiet_nan()};
  const float max_elem = elem.max_value();
  if (type == ScaleType::E8M0) return e8m0_block_scale(amax, rule, 1.0f / max_elem, elem.emax());
  // UE4M3 scales: the NVFP4 rule rounds to nearest; RCEIL rounds up, FLOOR down (of amax / 2^emax,
  // at least the smallest non-zero scale).
  uint32_t c;
  if (rule == ScaleRule::Nvfp4) {
    c = e4m3().encode(amax * tensor_scale / max_elem);
  } else if (rule == ScaleRule::Rceil) {
    c = ue4m3_directed(amax * (1.0f / max_elem), true);
  } else {
    // Rounded down, but never to a zero scale for a non-zero block: that would decode it to zeros
    // (E8M0 FLOOR likewise stops at its smallest scale).
    c = ue4m3_directed(amax * pow2f(-elem.emax()), false);
    if (c == 0 && amax > 0.0f) c = 1;
  }
  const float s = decode_ue4m3(c);
  // Capped at FLT_MAX: for tensors whose amax is below ~1e-35, S_enc / s overflows, and 0 * Inf
  // would turn zeros into NaN.
  const float max_float = bits_float(0x7f7fffffu);
  const float mult = s > 0.0f ? tensor_scale / s : 0.0f;
  return {c, mult < max_float ? mult : max_float};
}

// S_enc of the NVFP4 rule from the tensor's amax: 448 * max_elem / amax, 1 where amax is 0.
MXATTN_HD float nvfp4_tensor_scale(float amax_tensor, const Element& elem) {
  const float max_float = bits_float(0x7f7fffffu);
  float s = (448.0f * elem.max_value()) / amax_tensor;
  s = s < max_float ? s : max_float;
  return (amax_tensor == 0.0f || s == 0.0f) ? 1.0f : s;
}

}  // namespace mxattn
