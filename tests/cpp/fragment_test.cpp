// Fragment maps of mma.sync m16n8k16 and the decode kernel's operand permutations: each map is a
// bijection onto its tile and agrees with its inverse. (The hardware check is the structured
// identity case of tests/gpu/attention_test.cu.)
#include <gtest/gtest.h>

#include <set>

#include "mxattn/kernels/attention/fragment.h"

namespace mxattn::frag {
namespace {

TEST(Fragment, MmaAIsABijectionWithItsInverse) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const RowCol rc = mma_a(lane, reg, half);
        ASSERT_TRUE(rc.row >= 0 && rc.row < 16 && rc.col >= 0 && rc.col < 16);
        seen.insert({rc.row, rc.col});
        const LaneReg o = mma_a_owner(rc.row, rc.col);
        EXPECT_EQ(o.lane, lane);
        EXPECT_EQ(o.reg, reg);
        EXPECT_EQ(o.half, half);
      }
  EXPECT_EQ(seen.size(), 256u);
  static_assert(mma_a(5, 3, 1).row == 9 && mma_a(5, 3, 1).col == 11);  // lane 5: g 1, t 1
}

TEST(Fragment, MmaBIsABijectionWithItsInverse) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 2; ++reg)
      for (int half = 0; half < 2; ++half) {
        const RowCol kn = mma_b(lane, reg, half);
        ASSERT_TRUE(kn.row >= 0 && kn.row < 16 && kn.col >= 0 && kn.col < 8);
        seen.insert({kn.row, kn.col});
        const LaneReg o = mma_b_owner(kn.row, kn.col);
        EXPECT_EQ(o.lane, lane);
        EXPECT_EQ(o.reg, reg);
        EXPECT_EQ(o.half, half);
      }
  EXPECT_EQ(seen.size(), 128u);
}

TEST(Fragment, MmaCIsABijectionWithItsInverse) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg) {
      const RowCol rc = mma_c(lane, reg);
      seen.insert({rc.row, rc.col});
      const LaneReg o = mma_c_owner(rc.row, rc.col);
      EXPECT_EQ(o.lane, lane);
      EXPECT_EQ(o.reg, reg);
    }
  EXPECT_EQ(seen.size(), 128u);
}

// ldmatrix.x4 hands register j the 8x8 matrix whose rows lanes 8j..8j+7 addressed; lane l gets row
// l/4, columns 2(l%4), 2(l%4)+1. The addresses must make that the A fragment (and two B fragments).
TEST(Fragment, LdmatrixAddressesProduceTheMmaFragments) {
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 4; ++j)
      for (int half = 0; half < 2; ++half) {
        const RowCol base = ldmatrix_a_addr(8 * j + lane / 4);  // the lane that addressed this row
        const RowCol want = mma_a(lane, j, half);
        EXPECT_EQ(base.row, want.row);
        EXPECT_EQ(base.col + 2 * (lane % 4) + half, want.col);

        const RowCol nb = ldmatrix_b2_addr(8 * j + lane / 4);  // [n][k] tile rows
        const int ntile = j / 2, reg = j % 2;
        const RowCol kn = mma_b(lane, reg, half);
        EXPECT_EQ(nb.row, 8 * ntile + kn.col);
        EXPECT_EQ(nb.col + 2 * (lane % 4) + half, kn.row);
      }
}

TEST(Fragment, DecodePermutationsAreBijections) {
  for (int D : {64, 128, 256}) {
    std::set<int> qk, pv;
    for (int ks = 0; ks < D / 16; ++ks)
      for (int kappa = 0; kappa < 16; ++kappa) {
        const int d = qk_channel(D, ks, kappa);
        ASSERT_TRUE(d >= 0 && d < D);
        qk.insert(d);
        const StepSlot back = qk_channel_slot(D, d);
        EXPECT_EQ(back.kstep, ks);
        EXPECT_EQ(back.kappa, kappa);
      }
    // Lane t holds D/4 consecutive channels: a 16-byte load of 8-bit codes per 16 channels.
    for (int t = 0; t < 4; ++t)
      for (int ks = 0; ks < D / 16; ++ks)
        for (int p = 0; p < 4; ++p) {
          const int kappa = 2 * t + p % 2 + 8 * (p / 2);
          EXPECT_EQ(qk_channel(D, ks, kappa), t * (D / 4) + 4 * ks + p);
        }
    for (int i = 0; i < D / 8; ++i)
      for (int n = 0; n < 8; ++n) {
        const int d = pv_channel(D, i, n);
        pv.insert(d);
        const TileCol back = pv_channel_slot(D, d);
        EXPECT_EQ(back.ntile, i);
        EXPECT_EQ(back.n, n);
      }
    std::set<int> pvt;
    for (int i = 0; i < D / 16; ++i)
      for (int m = 0; m < 16; ++m) {
        const int d = pvt_channel(D, i, m);
        ASSERT_TRUE(d >= 0 && d < D);
        pvt.insert(d);
        const TileRow back = pvt_channel_slot(D, d);
        EXPECT_EQ(back.mtile, i);
        EXPECT_EQ(back.m, m);
      }
    // Swapped P V: lane g holds D/8 consecutive channels, m-tile i at its channels 2i (m = g), 2i+1 (g+8).
    for (int g = 0; g < 8; ++g)
      for (int i = 0; i < D / 16; ++i) {
        EXPECT_EQ(pvt_channel(D, i, g), g * (D / 8) + 2 * i);
        EXPECT_EQ(pvt_channel(D, i, g + 8), g * (D / 8) + 2 * i + 1);
      }
    EXPECT_EQ(int(qk.size()), D);
    EXPECT_EQ(int(pv.size()), D);
    EXPECT_EQ(int(pvt.size()), D);
  }
}

}  // namespace
}  // namespace mxattn::frag
