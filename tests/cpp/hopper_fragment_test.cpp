// The Hopper prefill kernel's layout maps (kernels/attention/hopper/fragment.h): each against its
// inverse, the P V key order against the A fragment, and the swizzled tile against the swizzle rule.
#include <gtest/gtest.h>

#include <set>

#include "mxattn/kernels/attention/hopper/fragment.h"

namespace mxattn::frag {
namespace {

TEST(HopperFragment, AccumulatorMapIsABijection) {
  for (int n : {64, 128, 256}) {
    std::set<std::pair<int, int>> seen;
    for (int thread = 0; thread < 128; ++thread)
      for (int r = 0; r < n / 2; ++r) {
        const WgRowCol rc = wgmma_acc(thread, r);
        ASSERT_TRUE(rc.row >= 0 && rc.row < 64 && rc.col >= 0 && rc.col < n);
        seen.insert({rc.row, rc.col});
        const WgOwner o = wgmma_acc_owner(rc.row, rc.col);
        EXPECT_EQ(o.thread, thread);
        EXPECT_EQ(o.reg, r);
      }
    EXPECT_EQ(seen.size(), size_t(64 * n));
  }
}

// An A-fragment map (thread, register, element of the register) -> (row, k) of the 64 x K step, against its
// inverse: every element lands on its own place, and the owner map finds it.
template <class Map, class Owner>
void check_a_fragment(int k_extent, int per_reg, Map map, Owner owner) {
  std::set<std::pair<int, int>> seen;
  for (int thread = 0; thread < 128; ++thread)
    for (int reg = 0; reg < 4; ++reg)
      for (int e = 0; e < per_reg; ++e) {
        const WgRowCol rc = map(thread, reg, e);
        ASSERT_TRUE(rc.row >= 0 && rc.row < 64 && rc.col >= 0 && rc.col < k_extent);
        seen.insert({rc.row, rc.col});
        const WgOwner o = owner(rc.row, rc.col);
        EXPECT_EQ(o.thread, thread);
        EXPECT_EQ(o.reg, per_reg * reg + e);
      }
  EXPECT_EQ(seen.size(), size_t(64 * k_extent));
}

TEST(HopperFragment, EightBitAFragmentIsABijection) { check_a_fragment(32, 4, wgmma_a8, wgmma_a8_owner); }

TEST(HopperFragment, SixteenBitAFragmentIsABijection) { check_a_fragment(16, 2, wgmma_a16, wgmma_a16_owner); }

// The exact mode's BF16 P (softmax.h pack_p_bf16): register `reg`, half h of k16 step kk holds key 16 kk +
// its column, in natural order, from the accumulator of the same thread that pack_p_bf16 reads.
TEST(HopperFragment, BF16PFromAccumulatorsInKeyOrder) {
  for (int thread = 0; thread < 128; ++thread)
    for (int kk = 0; kk < 8; ++kk)
      for (int reg = 0; reg < 4; ++reg)
        for (int half = 0; half < 2; ++half) {
          const WgRowCol a = wgmma_a16(thread, reg, half);
          const WgOwner o = wgmma_acc_owner(a.row, 16 * kk + a.col);
          EXPECT_EQ(o.thread, thread);
          // pack_p_bf16: block 2 kk + reg / 2, accumulators 2 (reg % 2) and + 1
          EXPECT_EQ(o.reg, 4 * (2 * kk + reg / 2) + 2 * (reg % 2) + half);
        }
}

// The kernel packs P from S's accumulators (softmax.h, pack_p): A register `reg`, byte b of k-step kk
// holds the accumulator of row wgmma_a8(...).row at key 32 kk + pv_slot_key(slot). That accumulator
// must be one the same thread holds, in the register pack_p reads.
TEST(HopperFragment, PFromAccumulatorsNeedsNoLaneExchange) {
  for (int thread = 0; thread < 128; ++thread)
    for (int kk = 0; kk < 4; ++kk)
      for (int reg = 0; reg < 4; ++reg)
        for (int byte = 0; byte < 4; ++byte) {
          const WgRowCol a = wgmma_a8(thread, reg, byte);  // (row, slot)
          const int key = 32 * kk + pv_slot_key(a.col);
          const WgOwner o = wgmma_acc_owner(a.row, key);
          EXPECT_EQ(o.thread, thread);
          // pack_p: block i + 2 (reg / 2) + (byte / 2), accumulator q = 2 (reg % 2) + byte % 2
          const int blk = 4 * kk + 2 * (reg / 2) + byte / 2, q = 2 * (reg % 2) + byte % 2;
          EXPECT_EQ(o.reg, 4 * blk + q);
        }
}

TEST(HopperFragment, PvKeyOrderIsABijectionWithinSixteenKeyChunks) {
  for (int slot = 0; slot < 32; ++slot) {
    const int key = pv_slot_key(slot);
    ASSERT_TRUE(key >= 0 && key < 32);
    EXPECT_EQ(pv_key_slot(key), slot);
    EXPECT_EQ(key / 16, slot / 16);  // a 16-byte chunk of keys stays in its chunk (producer.h)
  }
  // The producer's byte shuffle: chunk bytes 0 1 8 9 | 2 3 10 11 | 4 5 12 13 | 6 7 14 15.
  const int shuffle[16] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
  for (int s = 0; s < 16; ++s) EXPECT_EQ(pv_slot_key(s), shuffle[s]);
}

// The swizzle as wgmma applies it: address bits [4, 4 + B) ^= bits [7, 7 + B), B = 3 (128 B) or 2
// (64 B), on offsets within a panel. Every 16-byte chunk of the tile lands on its own place.
template <int Rows, int Cols>
void check_tile() {
  using Tile = KMajorTile<Rows, Cols>;
  const int b = Tile::kWidth == 128 ? 3 : 2;
  std::set<uint32_t> seen;
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; c += 16) {
      const uint32_t off = Tile::offset(r, c);
      ASSERT_LT(off, uint32_t(Tile::kBytes));
      EXPECT_EQ(off % 16, 0u);
      seen.insert(off);
      const uint32_t panel = uint32_t(c / Tile::kWidth) * Rows * Tile::kWidth;
      const uint32_t lin = uint32_t(r * Tile::kWidth + c % Tile::kWidth);
      const uint32_t mask = (1u << b) - 1;
      EXPECT_EQ(off - panel, lin ^ (((lin >> 7) & mask) << 4));
      // The descriptor of row group r / 8 at contraction byte c starts at the unswizzled address.
      EXPECT_EQ(Tile::desc_offset(r - r % 8, c - c % 32), panel + uint32_t((r - r % 8) * Tile::kWidth) + (c % Tile::kWidth) / 32 * 32);
    }
  EXPECT_EQ(seen.size(), size_t(Rows * Cols / 16));
}

TEST(HopperFragment, SwizzledTilesCoverEveryChunkOnce) {
  check_tile<128, 128>();  // Q or K at D = 128
  check_tile<128, 64>();   // D = 64: 64-byte swizzle
  check_tile<64, 256>();   // K at D = 256: two 128-byte panels
  check_tile<256, 64>();   // V^T at D = 256 (64 keys)
}

// O's stage (kernels/attention/hopper/epilogue.h): stmatrix k of a warp stores accumulator blocks 2k and
// 2k + 1 of its 16 rows as they sit in the threads' registers, and each lane's row address is its row of
// stmatrix 0 with the chunk bits flipped by 2k % 8, in panel 2k / 8 of the 128-byte swizzled stage.
template <int D>
void check_o_stage() {
  using Tile = KMajorTile<64, 2 * D>;
  std::set<uint32_t> rows_seen;
  for (int warp = 0; warp < 4; ++warp)
    for (int k = 0; k < D / 16; ++k)
      for (int lane = 0; lane < 32; ++lane) {
        const WgRowCol at = stmatrix_acc_row(warp, lane, k);
        // Matrix j = lane / 8, its row lane % 8: element n of that row is held by thread 4 * (lane % 8) + n / 2 of
        // the warp, in its register j (two 16-bit halves: accumulators 4i + 2r and + 1, i = 2k + j / 2, r = j % 2).
        const int j = lane / 8, i = 2 * k + j / 2, r = j % 2;
        for (int n = 0; n < 8; ++n) {
          const WgOwner o = wgmma_acc_owner(at.row, at.col + n);
          EXPECT_EQ(o.thread, 32 * warp + 4 * (lane % 8) + n / 2);
          EXPECT_EQ(o.reg, 4 * i + 2 * r + n % 2);
        }
        const WgRowCol at0 = stmatrix_acc_row(warp, lane, 0);
        const uint32_t xor_form = (Tile::offset(at0.row, 2 * at0.col) ^ uint32_t((2 * k % 8) << 4)) + 2 * k / 8 * Tile::kPanelBytes;
        EXPECT_EQ(xor_form, Tile::offset(at.row, 2 * at.col)) << "warp " << warp << " lane " << lane << " k " << k;
        rows_seen.insert(Tile::offset(at.row, 2 * at.col));
      }
  // A matrix's 8 rows (one phase of the store) in 8 different groups of 4 banks: no bank conflicts.
  for (int k = 0; k < D / 16; ++k)
    for (int j = 0; j < 4; ++j) {
      std::set<uint32_t> groups;
      for (int l = 8 * j; l < 8 * j + 8; ++l) {
        const WgRowCol at = stmatrix_acc_row(0, l, k);
        groups.insert(Tile::offset(at.row, 2 * at.col) % 128 / 16);
      }
      EXPECT_EQ(groups.size(), 8u);
    }
  EXPECT_EQ(rows_seen.size(), size_t(64 * D / 8));  // every 16-byte piece of the stage once
}

TEST(HopperFragment, OStageRowsOfStmatrix) {
  check_o_stage<64>();
  check_o_stage<128>();
}

}  // namespace
}  // namespace mxattn::frag
