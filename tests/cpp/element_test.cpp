// Element codecs: every code, the rounding boundaries, and an independent brute-force encoder.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mxattn/format/element.h"
#include "mxattn/format/format.h"

namespace mxattn {
namespace {

const std::vector<Element> kAll = {kE2M1, kE2M3, kE3M2, kE4M3, kE5M2, kInt8,
                                   Element::minifloat(3, 3), Element::minifloat(1, 2), Element::minifloat(4, 1),
                                   Element::integer(4), Element::integer(2)};

bool is_nan_code(const Element& e, uint32_t c) { return std::isnan(e.decode(c)); }

// Independent reference: the nearest finite code by exhaustive search, ties to the even code,
// after saturating |x| to the largest finite value.
uint32_t brute_force_encode(const Element& e, float x) {
  const float lim = e.max_value();
  const double xs = std::fmin(std::fmax(double(x), -double(lim)), double(lim));
  uint32_t best = 0;
  double best_err = INFINITY;
  for (uint32_t c = 0; c < (1u << e.bits); ++c) {
    const float v = e.decode(c);
    if (!std::isfinite(v) || (e.is_int() && c == e.sign_bit())) continue;
    if (!e.is_int() && v == 0.0f && std::signbit(v) != std::signbit(x)) continue;  // zero keeps its sign
    const double err = std::fabs(double(v) - xs);
    // Ties: the even code; among INTn codes that is the even integer.
    if (err < best_err || (err == best_err && (c & 1u) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return best;
}

TEST(Element, NamedMaxima) {
  EXPECT_EQ(kE2M1.max_value(), 6.0f);
  EXPECT_EQ(kE2M3.max_value(), 7.5f);
  EXPECT_EQ(kE3M2.max_value(), 28.0f);
  EXPECT_EQ(kE4M3.max_value(), 448.0f);
  EXPECT_EQ(kE5M2.max_value(), 57344.0f);
  EXPECT_EQ(kInt8.max_value(), 127.0f / 64.0f);
  EXPECT_EQ(kE2M1.emax(), 2);
  EXPECT_EQ(kE4M3.emax(), 8);
  EXPECT_EQ(kE5M2.emax(), 15);
  EXPECT_EQ(kE3M2.emax(), 4);
  EXPECT_EQ(kInt8.emax(), 0);
}

TEST(Element, E2M1Magnitudes) {
  const float want[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (uint32_t c = 0; c < 8; ++c) {
    EXPECT_EQ(kE2M1.decode(c), want[c]) << "code " << c;
    EXPECT_EQ(kE2M1.decode(c | 8), -want[c]) << "code " << (c | 8);
  }
}

TEST(Element, SpecialCodes) {
  EXPECT_TRUE(std::isnan(kE4M3.decode(0x7F)));
  EXPECT_TRUE(std::isnan(kE4M3.decode(0xFF)));
  EXPECT_EQ(kE4M3.decode(0x7E), 448.0f);
  EXPECT_EQ(kE5M2.decode(0x7C), INFINITY);
  EXPECT_EQ(kE5M2.decode(0xFC), -INFINITY);
  EXPECT_TRUE(std::isnan(kE5M2.decode(0x7E)));
  EXPECT_EQ(kInt8.decode(0x81), -127.0f / 64.0f);
}

TEST(Element, EveryCodeReencodesToItself) {
  for (const Element& e : kAll) {
    for (uint32_t c = 0; c < (1u << e.bits); ++c) {
      const float v = e.decode(c);
      const uint32_t back = e.encode(v);
      if (is_nan_code(e, c)) {
        EXPECT_EQ(back, e.nan_code()) << element_name(e) << " code " << c;
      } else if (e.is_int() && c == e.sign_bit()) {
        EXPECT_EQ(back, e.sign_bit() | 1u) << "int -2^(n-1) is unused and saturates to -(2^(n-1)-1)";
      } else if (std::isinf(v)) {
        EXPECT_EQ(back, (c & e.sign_bit()) | e.max_code()) << element_name(e) << ": Inf saturates";
      } else {
        EXPECT_EQ(back, c) << element_name(e) << " code " << c << " value " << v;
      }
    }
  }
}

TEST(Element, RoundingBoundaries) {
  for (const Element& e : kAll) {
    std::vector<std::pair<float, uint32_t>> pos;  // finite non-negative values in increasing order
    for (uint32_t c = 0; c <= e.max_code(); ++c) pos.push_back({e.decode(c), c});
    for (size_t i = 0; i + 1 < pos.size(); ++i) {
      const auto [a, ca] = pos[i];
      const auto [b, cb] = pos[i + 1];
      const float mid = (a + b) / 2;  // exact: both have few significant bits
      const uint32_t even = (ca & 1u) == 0 ? ca : cb;
      for (float sign : {1.0f, -1.0f}) {
        const uint32_t s = sign < 0 ? e.sign_bit() : 0u;
        const auto with_sign = [&](uint32_t c) { return (e.is_int() && sign < 0) ? ((~c + 1) & ((1u << e.bits) - 1)) : (c | s); };
        EXPECT_EQ(e.encode(sign * mid), with_sign(even)) << element_name(e) << " tie at " << sign * mid;
        EXPECT_EQ(e.encode(sign * std::nextafter(mid, 0.0f)), with_sign(ca)) << element_name(e) << " below " << mid;
        EXPECT_EQ(e.encode(sign * std::nextafter(mid, INFINITY)), with_sign(cb)) << element_name(e) << " above " << mid;
      }
    }
    // Saturation: past the largest value, huge values and Inf all give the largest value.
    const float mx = e.max_value();
    const uint32_t top = e.max_code();
    const uint32_t neg_top = e.is_int() ? (e.sign_bit() | 1u) : (e.sign_bit() | top);
    for (float big : {mx * 1.25f, mx * 4.0f, 1e30f, INFINITY}) {
      EXPECT_EQ(e.encode(big), top) << element_name(e) << " " << big;
      EXPECT_EQ(e.encode(-big), neg_top) << element_name(e) << " " << -big;
    }
    // Below half the smallest subnormal: zero, with its sign for minifloats.
    const float tiny = std::ldexp(1.0f, e.min_subnormal_exp());
    EXPECT_EQ(e.encode(tiny / 2), 0u) << element_name(e) << ": half the smallest subnormal ties to zero";
    EXPECT_EQ(e.encode(std::nextafter(tiny / 2, 1.0f)), 1u) << element_name(e);
    EXPECT_EQ(e.encode(1e-30f), 0u);
    EXPECT_EQ(e.encode(-0.0f), e.is_int() ? 0u : e.sign_bit()) << element_name(e) << ": signed zero";
    EXPECT_EQ(e.encode(NAN), e.nan_code()) << element_name(e);
  }
  EXPECT_EQ(kE4M3.nan_code(), 0x7Fu);
  EXPECT_EQ(kE5M2.nan_code(), 0x7Eu);
  EXPECT_EQ(kE2M1.nan_code(), 0x8u);
}

TEST(Element, RandomAgainstBruteForce) {
  std::mt19937 rng(12345);
  for (const Element& e : kAll) {
    std::lognormal_distribution<float> mag(std::log(e.max_value()) - 2.0f, 2.5f);
    int mismatches = 0;
    for (int i = 0; i < 4000; ++i) {
      const float x = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
      const uint32_t want = brute_force_encode(e, x), got = e.encode(x);
      if (want != got && ++mismatches <= 5)
        ADD_FAILURE() << element_name(e) << " x=" << x << " want " << want << " got " << got;
    }
  }
}

}  // namespace
}  // namespace mxattn
