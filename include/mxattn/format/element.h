// Element codecs: minifloats EeMm and integers INTn, up to 8 bits, with the exact rules of DESIGN.md §2.
//
// Encoding is round-to-nearest-even and saturating: finite values beyond the largest finite value,
// and Inf, become that value with their sign. NaN becomes the format's NaN code where it has one
// (E4M3 0x7F, E5M2 0x7E); formats without NaN give the negative-zero code, as ml_dtypes does
// (INTn gives 0). Inside a block this never hides a NaN: the block's scale is NaN then (scale.h).
#pragma once
#include <cmath>
#include <cstdint>

#include "mxattn/format/bits.h"

namespace mxattn {

enum class ElementKind : uint8_t { Float, Int };

// How a minifloat spends its top codes.
enum class Specials : uint8_t {
  None,     // every code is finite: E2M1, E2M3, E3M2 and custom EeMm
  NanOnly,  // S.1111.111 is NaN, no Inf: E4M3
  Ieee,     // the all-ones exponent holds Inf and NaN: E5M2
};

struct Element {
  ElementKind kind = ElementKind::Float;
  uint8_t bits = 0;      // total width, sign included
  uint8_t exp_bits = 0;  // 0 for INTn
  uint8_t man_bits = 0;  // bits - 1 for INTn
  Specials specials = Specials::None;

  MXATTN_HD static constexpr Element minifloat(int e, int m, Specials s = Specials::None) {
    return Element{ElementKind::Float, uint8_t(1 + e + m), uint8_t(e), uint8_t(m), s};
  }
  MXATTN_HD static constexpr Element integer(int n) {
    return Element{ElementKind::Int, uint8_t(n), 0, uint8_t(n - 1), Specials::None};
  }

  constexpr bool operator==(const Element&) const = default;

  MXATTN_HD constexpr bool is_int() const { return kind == ElementKind::Int; }
  MXATTN_HD constexpr int bias() const { return (1 << (exp_bits - 1)) - 1; }
  MXATTN_HD constexpr uint32_t sign_bit() const { return 1u << (bits - 1); }
  MXATTN_HD constexpr uint32_t mag_mask() const { return sign_bit() - 1; }

  // Largest magnitude code that is finite.
  MXATTN_HD constexpr uint32_t max_code() const {
    if (is_int()) return mag_mask();
    switch (specials) {
      case Specials::NanOnly: return mag_mask() - 1;
      case Specials::Ieee: return ((1u << exp_bits) - 1) * (1u << man_bits) - 1;
      default: return mag_mask();
    }
  }
  MXATTN_HD constexpr uint32_t nan_code() const {
    if (is_int()) return 0;
    switch (specials) {
      case Specials::NanOnly: return mag_mask();                           // S.1111.111
      case Specials::Ieee: return ((1u << exp_bits) - 1) << man_bits | (1u << (man_bits - 1));  // quiet
      default: return sign_bit();                                          // -0, as ml_dtypes
    }
  }

  // Unbiased exponent of the largest finite value: OCP MX's emax_elem (0 for INTn).
  MXATTN_HD constexpr int emax() const {
    if (is_int()) return 0;
    return int(max_code() >> man_bits) - bias();
  }
  // Smallest non-zero magnitude: 2^(1 - bias - m) for minifloats, 2^-(n-2) for INTn.
  MXATTN_HD constexpr int min_subnormal_exp() const { return is_int() ? -(bits - 2) : 1 - bias() - man_bits; }

  MXATTN_HD float decode(uint32_t code) const {
    const bool neg = (code & sign_bit()) != 0;
    if (is_int()) {
      const int v = neg ? int(code) - int(1u << bits) : int(code & mag_mask());
      return float(v) * pow2f(-(bits - 2));
    }
    const uint32_t mag = code & mag_mask();
    const uint32_t e = mag >> man_bits, f = mag & ((1u << man_bits) - 1);
    if (specials == Specials::NanOnly && mag == mag_mask()) return quiet_nan();
    if (specials == Specials::Ieee && e == (1u << exp_bits) - 1)
      return f ? quiet_nan() : (neg ? -INFINITY : INFINITY);
    const float v = e == 0 ? float(f) * pow2f(1 - bias() - man_bits)
                           : float(f + (1u << man_bits)) * pow2f(int(e) - bias() - man_bits);
    return neg ? -v : v;
  }

  MXATTN_HD float max_value() const { return decode(max_code()); }

  MXATTN_HD uint32_t encode(float x) const {
    const uint32_t u = float_bits(x);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return nan_code();
    if (is_int()) return encode_int(x);
    const uint32_t sign = (u >> 31) ? sign_bit() : 0u;
    if (a == 0x7f800000u) return sign | max_code();

    // |x| = mant * 2^(E - 23) with a 24-bit significand (float subnormals: E = -126, no hidden bit).
    const bool normal = a >= 0x00800000u;
    const int E = normal ? int(a >> 23) - 127 : -126;
    const uint32_t mant = (a & 0x007fffffu) | (normal ? 0x00800000u : 0u);
    if (E > emax() + 1) return sign | max_code();

    // Quantum of the target at this magnitude: 2^(max(E, emin) - m). Drop the bits below it, RNE.
    const int emin = 1 - bias();
    const int e_eff = E < emin ? emin : E;
    const int drop = 23 - man_bits + (e_eff - E);  // >= 16 since man_bits <= 7
    uint32_t q = 0;
    if (drop <= 24) {
      q = mant >> drop;
      const uint32_t rem = mant & ((1u << drop) - 1), half = 1u << (drop - 1);
      if (rem > half || (rem == half && (q & 1u))) ++q;
    }
    // q counts quanta: normals q in [2^m, 2^(m+1)], subnormals q in [0, 2^m]. A carry out of the
    // significand lands in the exponent field by itself.
    uint32_t code = (uint32_t(e_eff + bias() - 1) << man_bits) + q;
    if (code > max_code()) code = max_code();
    return sign | code;
  }

 private:
  MXATTN_HD uint32_t encode_int(float x) const {
    const float lim = float(mag_mask());  // symmetric: -2^(n-1) is never produced
    float r = rintf(x * pow2f(bits - 2));  // exact scaling, then ties-to-even
    r = r > lim ? lim : (r < -lim ? -lim : r);
    return uint32_t(int(r)) & ((1u << bits) - 1);
  }
};

inline constexpr Element kE2M1 = Element::minifloat(2, 1);
inline constexpr Element kE2M3 = Element::minifloat(2, 3);
inline constexpr Element kE3M2 = Element::minifloat(3, 2);
inline constexpr Element kE4M3 = Element::minifloat(4, 3, Specials::NanOnly);
inline constexpr Element kE5M2 = Element::minifloat(5, 2, Specials::Ieee);
inline constexpr Element kInt8 = Element::integer(8);

}  // namespace mxattn
