// Packing of FP4/FP6 codes, the FP4 container, and the 128x4 tiled scale layout of seeds/001.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "mxattn/format/element.h"
#include "mxattn/format/pack.h"
#include "mxattn/layout/scale_layout.h"

namespace mxattn {
namespace {

TEST(Pack, Fp4EvenElementInLowNibble) {
  uint8_t b[1] = {0};
  pack_code(b, 0, 4, kE2M1.encode(1.0f));   // 0x2
  pack_code(b, 1, 4, kE2M1.encode(-6.0f));  // 0xF
  EXPECT_EQ(b[0], 0xF2);
  EXPECT_EQ(unpack_code(b, 0, 4), 0x2u);
  EXPECT_EQ(unpack_code(b, 1, 4), 0xFu);
}

TEST(Pack, Fp6FourInThreeBytesLittleEndian) {
  const uint32_t c[4] = {0x01, 0x3F, 0x15, 0x2A};
  uint8_t b[3] = {0, 0, 0};
  for (int i = 0; i < 4; ++i) pack_code(b, i, 6, c[i]);
  const uint32_t word = c[0] | c[1] << 6 | c[2] << 12 | c[3] << 18;
  EXPECT_EQ(b[0], word & 0xFF);
  EXPECT_EQ(b[1], (word >> 8) & 0xFF);
  EXPECT_EQ(b[2], (word >> 16) & 0xFF);
  EXPECT_EQ(packed_bytes(4, 6), 3u);
  EXPECT_EQ(packed_bytes(5, 6), 4u);
  EXPECT_EQ(packed_bytes(3, 4), 2u);
}

TEST(Pack, RoundTripEveryWidth) {
  std::mt19937 rng(1);
  for (int bits = 2; bits <= 8; ++bits) {
    const size_t n = 77;
    std::vector<uint32_t> codes(n);
    std::vector<uint8_t> buf(packed_bytes(n, bits), 0xA5);  // packing must not depend on old contents
    for (auto& c : codes) c = rng() & ((1u << bits) - 1);
    for (size_t i = 0; i < n; ++i) pack_code(buf.data(), i, bits, codes[i]);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(unpack_code(buf.data(), i, bits), codes[i]) << bits << " " << i;
  }
}

TEST(Pack, Fp4Container) {
  EXPECT_EQ(fp4_to_container8(kE2M1.encode(1.0f)), 0x08);  // seeds/000: 1.0 is 0x08, nibble in bits 5..2
  for (uint32_t c = 0; c < 16; ++c) EXPECT_EQ(fp4_from_container8(fp4_to_container8(c)), c);
}

TEST(Layout, TiledOffsetsAndInverse) {
  for (size_t cols : {1u, 3u, 4u, 6u, 9u}) {
    const ScaleShape shape{300, cols};
    const size_t bytes = scale_bytes(ScaleLayout::Tiled128x4, shape);
    EXPECT_EQ(bytes, 384 * tiled_cols(cols));
    std::vector<int> hits(bytes, 0);
    for (size_t r = 0; r < tiled_rows(shape.rows); ++r)
      for (size_t c = 0; c < tiled_cols(cols); ++c) {
        const size_t off = tiled_offset(r, c, cols);
        ASSERT_LT(off, bytes);
        ++hits[off];
        const RowCol rc = tiled_position(off, cols);
        ASSERT_EQ(rc.r, r);
        ASSERT_EQ(rc.c, c);
      }
    for (int h : hits) ASSERT_EQ(h, 1);  // a bijection onto the padded buffer
  }
}

TEST(Layout, WorkedExample4x2) {
  // seeds/001: scales [4, 2] = {a..h}, padded to [128, 4] and tiled into one 512-byte tile.
  const uint8_t src[8] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
  std::vector<uint8_t> tiled(scale_bytes(ScaleLayout::Tiled128x4, {4, 2}), 0xEE);
  ASSERT_EQ(tiled.size(), 512u);
  convert_scale_layout(src, ScaleLayout::RowMajor, tiled.data(), ScaleLayout::Tiled128x4, {4, 2});
  std::vector<uint8_t> want(512, 0);
  want[0] = 'a', want[1] = 'b';    // offset 0-3: row 0
  want[16] = 'c', want[17] = 'd';  // offset 16-19: row 1
  want[32] = 'e', want[33] = 'f';  // offset 32-35: row 2
  want[48] = 'g', want[49] = 'h';  // offset 48-51: row 3
  EXPECT_EQ(tiled, want);
  EXPECT_EQ(tiled_position(4, 2).r, 32u);   // offset 4-7: row 32
  EXPECT_EQ(tiled_position(12, 2).r, 96u);  // offset 12-15: row 96
  EXPECT_EQ(tiled_position(20, 2).r, 33u);  // offset 20-23: row 33
}

TEST(Layout, MultiTileOrderIsRowMajor) {
  // seeds/001: [256, 8] scales make 2 x 2 tiles stored A (rows 0-127, cols 0-3), B (cols 4-7), C, D.
  EXPECT_EQ(tiled_offset(0, 4, 8), 512u);
  EXPECT_EQ(tiled_offset(128, 0, 8), 1024u);
  EXPECT_EQ(tiled_offset(128, 4, 8), 1536u);
  EXPECT_EQ(scale_bytes(ScaleLayout::Tiled128x4, {500, 6}), 512u * 8);   // MXFP8 M=500, K=192
  EXPECT_EQ(scale_bytes(ScaleLayout::Tiled128x4, {500, 12}), 512u * 12);  // NVFP4 M=500, K=192
}

TEST(Layout, RoundTripsPaddedAndUnpadded) {
  std::mt19937 rng(9);
  for (ScaleShape shape : {ScaleShape{128, 4}, ScaleShape{256, 8}, ScaleShape{1, 1}, ScaleShape{130, 5},
                           ScaleShape{500, 6}, ScaleShape{77, 12}}) {
    std::vector<uint8_t> rm(shape.rows * shape.cols);
    for (auto& x : rm) x = uint8_t(1 + rng() % 255);  // non-zero, so padding is told apart
    std::vector<uint8_t> tiled(scale_bytes(ScaleLayout::Tiled128x4, shape), 0xCD), back(rm.size(), 0);
    convert_scale_layout(rm.data(), ScaleLayout::RowMajor, tiled.data(), ScaleLayout::Tiled128x4, shape);
    convert_scale_layout(tiled.data(), ScaleLayout::Tiled128x4, back.data(), ScaleLayout::RowMajor, shape);
    EXPECT_EQ(back, rm);
    size_t zeros = 0;
    for (uint8_t x : tiled) zeros += x == 0;
    EXPECT_EQ(zeros, tiled.size() - rm.size()) << "padding must be zero-filled";
  }
}

}  // namespace
}  // namespace mxattn
