// Scale codecs and rules: E8M0, UE4M3, RCEIL, FLOOR, NVFP4.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mxattn/format/format.h"

namespace mxattn {
namespace {

TEST(Scale, E8M0Decode) {
  EXPECT_EQ(decode_e8m0(127), 1.0f);
  EXPECT_EQ(decode_e8m0(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(decode_e8m0(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(decode_e8m0(0xFF)));
}

TEST(Scale, UE4M3Decode) {
  EXPECT_EQ(decode_ue4m3(0x38), 1.0f);
  EXPECT_EQ(decode_ue4m3(0x7E), 448.0f);
  EXPECT_EQ(decode_ue4m3(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(decode_ue4m3(0x7F)));
}

TEST(Scale, RceilPicksSmallestPowerOfTwoThatFits) {
  EXPECT_EQ(kMxfp4.block_scale(6.0f, false).code, 127u);       // 6/6 = 1 = 2^0
  EXPECT_EQ(kMxfp4.block_scale(6.5f, false).code, 128u);       // 6.5/6 > 1: round up
  EXPECT_EQ(kMxfp4.block_scale(3.0f, false).code, 127u - 1);   // 3/6 = 2^-1
  EXPECT_EQ(kMxfp8E4M3.block_scale(448.0f, false).code, 127u);
  EXPECT_EQ(kMxfp8E4M3.block_scale(449.0f, false).code, 128u);
  // All-zero block: the smallest scale, 2^-127.
  EXPECT_EQ(kMxfp4.block_scale(0.0f, false).code, 0u);
  EXPECT_EQ(kMxfp4.block_scale(0.0f, false).mult, std::ldexp(1.0f, 127));
  // Never clips: the scaled block maximum stays within the element's range (up to the rounding of
  // amax * (1/max_elem) in float, one part in 2^23).
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> ex(-100.0f, 100.0f);
  for (const Format& f : {kMxfp4, kMxfp8E4M3, kMxfp6E2M3, kMxint8, kMxfp8E5M2}) {
    for (int i = 0; i < 20000; ++i) {
      const float amax = std::exp2(ex(rng));
      const BlockScale s = f.block_scale(amax, false);
      ASSERT_LE(double(amax) * s.mult, double(f.elem.max_value()) * (1 + 0x1p-22)) << format_name(f) << " " << amax;
      // ... and is the smallest such power of two.
      ASSERT_GT(double(amax) * s.mult * 2, double(f.elem.max_value()) * (1 - 0x1p-22)) << format_name(f) << " " << amax;
    }
  }
}

TEST(Scale, FloorUsesTheExponentOfAmax) {
  Format f = kMxfp4;
  f.rule = ScaleRule::Floor;
  EXPECT_EQ(f.block_scale(1.0f, false).code, 127u - 2);  // 2^(0 - emax) with emax = 2
  EXPECT_EQ(f.block_scale(7.9f, false).code, 127u);      // 2^(2 - 2): 7.9 then clips to 6
  EXPECT_EQ(f.elem.encode(7.9f * f.block_scale(7.9f, false).mult), f.elem.max_code());
  EXPECT_EQ(f.block_scale(std::ldexp(1.0f, -140), false).code, 0u);  // clamped at 2^-127
  EXPECT_EQ(f.block_scale(0.0f, false).code, 0u);
  Format g = kMxfp8E4M3;
  g.rule = ScaleRule::Floor;
  EXPECT_EQ(g.block_scale(1.5f, false).code, 127u - 8);
  EXPECT_EQ(floor_log2(std::ldexp(1.0f, -140)), -140);
  EXPECT_EQ(floor_log2(std::ldexp(1.75f, -130)), -130);
  EXPECT_EQ(floor_log2(3.99f), 1);
}

TEST(Scale, NonFiniteBlocksGetNanScales) {
  for (const Format& f : {kMxfp4, kMxfp8E4M3, kNvfp4}) {
    const BlockScale s = f.block_scale(1.0f, true, 1.0f);
    EXPECT_EQ(s.code, f.scale == ScaleType::E8M0 ? 0xFFu : 0x7Fu);
    EXPECT_TRUE(std::isnan(decode_scale(f.scale, s.code)));
  }
}

TEST(Scale, Nvfp4TwoLevel) {
  EXPECT_EQ(nvfp4_tensor_scale(2688.0f, kE2M1), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(0.0f, kE2M1), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(INFINITY, kE2M1), 1.0f);
  EXPECT_EQ(nvfp4_tensor_scale(1.0f, kE2M1), 2688.0f);
  EXPECT_EQ(nvfp4_tensor_scale(1e-45f, kE2M1), std::numeric_limits<float>::max());
  // S_enc = 1: the block scale is e4m3(amax / 6), rounded to nearest.
  BlockScale s = kNvfp4.block_scale(6.0f, false, 1.0f);
  EXPECT_EQ(s.code, 0x38u);
  EXPECT_EQ(s.mult, 1.0f);
  s = kNvfp4.block_scale(6.0f * 1.0624f, false, 1.0f);  // 1.0624 is nearer 1.0 than 1.125
  EXPECT_EQ(s.code, 0x38u);
  s = kNvfp4.block_scale(6.0f * 1.07f, false, 1.0f);
  EXPECT_EQ(s.code, 0x39u);
  // A block whose scale underflows to zero encodes zeros.
  s = kNvfp4.block_scale(1e-12f, false, 1.0f);
  EXPECT_EQ(s.code, 0u);
  EXPECT_EQ(s.mult, 0.0f);
  // The tensor's amax block lands on 448 * 6 / 6 = 448, the largest UE4M3.
  const float S = nvfp4_tensor_scale(37.0f, kE2M1);
  EXPECT_EQ(kNvfp4.block_scale(37.0f, false, S).code, 0x7Eu);
}

TEST(Scale, Ue4m3RulesWithoutTensorScale) {
  Format up{kE2M1, 16, ScaleType::UE4M3, ScaleRule::Rceil, false};
  Format down = up;
  down.rule = ScaleRule::Floor;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> ex(-6.0f, 8.0f);
  for (int i = 0; i < 5000; ++i) {
    const float amax = std::exp2(ex(rng));
    const float su = decode_ue4m3(up.block_scale(amax, false).code);
    const float sd = decode_ue4m3(down.block_scale(amax, false).code);
    EXPECT_GE(double(su) * 6, double(amax) * (1 - 0x1p-22)) << amax;  // RCEIL: amax fits
    EXPECT_LE(double(sd) * 4, double(amax)) << amax;                  // FLOOR: s <= amax / 2^emax
  }
  // FLOOR stops at the smallest non-zero UE4M3 rather than zeroing a small block (E5M2: emax 15).
  Format e5{kE5M2, 32, ScaleType::UE4M3, ScaleRule::Floor, false};
  EXPECT_EQ(e5.block_scale(1.0f, false).code, 1u);
  EXPECT_EQ(e5.block_scale(0.0f, false).code, 0u);
}

}  // namespace
}  // namespace mxattn
