// RoadBlock's tile and metadata equations (seeds/003, Fig. 2) against the paper's own numbers.
#include "mxattn/explore/roadblock.h"

#include <gtest/gtest.h>

#include "mxattn/format/format.h"

namespace mxattn::explore {
namespace {

// NVFP4 (d = 4, w = 8, k = 16) at NT = 32, worked through by hand from equations 2-13:
// tile_cap 256, l_g 8, tileM = tileN = tileK = 16 registers, 128 FP4 elements along K, 8 blocks,
// 64 scale bits per row, A and B 1024 bits each, 2048 in all, 64 bits = two registers per thread.
TEST(Roadblock, Nvfp4AtThirtyTwoThreadsIsThePapersSixtyFourBits) {
  const RoadblockTiles t = roadblock_tiles(32, 4, 8, 16);
  EXPECT_EQ(t.tile_cap, 256);
  EXPECT_EQ(t.lg, 8);
  EXPECT_EQ(t.tile_m, 16);
  EXPECT_EQ(t.tile_n, 16);
  EXPECT_EQ(t.tile_k, 16);
  EXPECT_DOUBLE_EQ(t.tile_k_elems, 128);
  EXPECT_DOUBLE_EQ(t.blocks_k, 8);
  EXPECT_DOUBLE_EQ(t.scale_bits_k, 64);
  EXPECT_DOUBLE_EQ(t.a_metadata_bits, 1024);
  EXPECT_DOUBLE_EQ(t.b_metadata_bits, 1024);
  EXPECT_DOUBLE_EQ(t.total_metadata_bits, 2048);
  EXPECT_DOUBLE_EQ(t.per_thread_metadata_bits, 64);
  EXPECT_EQ(t.registers(), 2);  // the paper's f8, f9
}

// The format descriptor feeds the same numbers: NVFP4's element and scale widths and block size.
TEST(Roadblock, Nvfp4FromTheFormatDescriptor) {
  const RoadblockTiles t = roadblock_tiles(32, kNvfp4.elem.bits, kNvfp4.scale_bits(), kNvfp4.block);
  EXPECT_DOUBLE_EQ(t.per_thread_metadata_bits, 64);
}

// (4), (5), (10): tile shapes for every NT the paper sweeps; tileN = tileM where l_g is even.
TEST(Roadblock, TileShapesPerThreadCount) {
  struct Expect {
    int nt, cap, lg, m, n, k;
  };
  for (const Expect& e : {Expect{4, 32, 5, 8, 4, 4}, Expect{8, 64, 6, 8, 8, 8}, Expect{16, 128, 7, 16, 8, 8},
                          Expect{32, 256, 8, 16, 16, 16}}) {
    const RoadblockTiles t = roadblock_tiles(e.nt, 4, 8, 16);
    EXPECT_EQ(t.tile_cap, e.cap) << "NT=" << e.nt;
    EXPECT_EQ(t.lg, e.lg) << "NT=" << e.nt;
    EXPECT_EQ(t.tile_m, e.m) << "NT=" << e.nt;
    EXPECT_EQ(t.tile_n, e.n) << "NT=" << e.nt;
    EXPECT_EQ(t.tile_k, e.k) << "NT=" << e.nt;
    EXPECT_EQ(t.tile_m * t.tile_k, t.tile_cap) << "A fills the register budget, NT=" << e.nt;
  }
}

// (9)-(13): the step-by-step values agree with the paper's closed forms 512w/(dk) and 384w/(dk)
// and with (9) A = 256 w NT / (d k), for every element width, block size and NT of the sweep.
TEST(Roadblock, StepByStepMatchesClosedForms) {
  for (int nt : kRoadblockThreadsPerWarp)
    for (int d : {4, 6, 8})
      for (int k : {8, 16, 32, 64, 128}) {
        const RoadblockTiles t = roadblock_tiles(nt, d, 8, k);
        EXPECT_NEAR(t.per_thread_metadata_bits, roadblock_per_thread_closed_form(nt, d, 8, k), 1e-12)
            << "NT=" << nt << " d=" << d << " k=" << k;
        EXPECT_NEAR(t.a_metadata_bits, 256.0 * 8 * nt / (d * k), 1e-9) << "NT=" << nt << " d=" << d << " k=" << k;
      }
}

TEST(Roadblock, Nvfp4AcrossThreadCountsAndMxfp8) {
  EXPECT_DOUBLE_EQ(roadblock_tiles(4, 4, 8, 16).per_thread_metadata_bits, 48);
  EXPECT_DOUBLE_EQ(roadblock_tiles(8, 4, 8, 16).per_thread_metadata_bits, 64);
  EXPECT_DOUBLE_EQ(roadblock_tiles(16, 4, 8, 16).per_thread_metadata_bits, 48);
  // MXFP8 (d = 8, k = 32): a quarter of NVFP4's metadata: 512 * 8 / 256 = 16 bits, one register.
  const RoadblockTiles mx8 = roadblock_tiles(32, 8, 8, 32);
  EXPECT_DOUBLE_EQ(mx8.per_thread_metadata_bits, 16);
  EXPECT_EQ(mx8.registers(), 1);
  // At NT = 4 an MXFP8 block (32 elements) is longer than tileK (4 registers = 16 elements):
  // half a block per tile, its scale reused over two K steps.
  EXPECT_DOUBLE_EQ(roadblock_tiles(4, 8, 8, 32).blocks_k, 0.5);
}

static_assert(roadblock_tiles(32, 4, 8, 16).per_thread_metadata_bits == 64);
static_assert(roadblock_tiles(32, 4, 8, 16).registers() == 2);

}  // namespace
}  // namespace mxattn::explore
