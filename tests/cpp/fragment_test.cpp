// Fragment maps of mma.sync m16n8k16 and the decode kernel's operand permutations: each map is a
// bijection onto its tile and agrees with its inverse. (The hardware check is the structured
// identity case of tests/gpu/attention_test.cu.)
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

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

// The decode stage layout is a bijection on each tile, for every cache row width the kernel takes.
TEST(Fragment, DecodeStageLayoutIsABijection) {
  for (bool ldm : {false, true})
  for (int d : {64, 128, 256})
    for (int bits : {4, 6, 8}) {
      const int row_bytes = d * bits / 8;
      std::set<int> seen;
      for (int off = 0; off < 32 * row_bytes; ++off) {
        const int at = stage_offset(row_bytes, off, ldm);
        ASSERT_TRUE(at >= 0 && at < 32 * row_bytes) << row_bytes << " " << off;
        seen.insert(at);
        EXPECT_EQ(at >> 4 << 4 | (off & 15), at) << "bytes of a 16-byte chunk stay together";
      }
      EXPECT_EQ(seen.size(), size_t(32 * row_bytes)) << "row_bytes " << row_bytes;
      // Rows 8m + x sit where row x does, 8m rows further (the kernel adds 8m rows to a lane's offsets).
      for (int off = 0; off < 8 * row_bytes; ++off)
        for (int m = 1; m < 4; ++m)
          ASSERT_EQ(stage_offset(row_bytes, off + 8 * m * row_bytes, ldm), stage_offset(row_bytes, off, ldm) + 8 * m * row_bytes)
              << "row_bytes " << row_bytes << " off " << off;
    }
}

// Shared-memory wavefronts of one warp-wide load: `size` bytes per lane (4, 8 or 16; the kernel splits a
// lane's range into the widest aligned units) in phases of 128 bytes (32, 16 or 8 lanes); a phase
// costs as many wavefronts as the most distinct 4-byte words any one of the 32 banks serves.
int wavefronts(const std::vector<int>& addr, int size) {
  const int per_phase = 128 / size;
  int total = 0;
  for (int p = 0; p < 32; p += per_phase) {
    std::map<int, std::set<int>> bank_words;
    for (int lane = p; lane < p + per_phase; ++lane)
      for (int w = addr[lane] / 4; w < (addr[lane] + size) / 4; ++w) bank_words[w % 32].insert(w);
    int most = 0;
    for (const auto& [bank, words] : bank_words) most = std::max(most, int(words.size()));
    total += most;
  }
  return total;
}

// Every fragment read of the decode kernel (K: 4 key tiles, V: 2 PV steps x 4 slots) costs the
// minimum number of wavefronts for 4- and 8-bit codes at head_dim 64, 128 and 256, except 256-byte
// rows (8-bit, head_dim 256), where no swizzle of this family that is the same every 8 rows does
// better than twice the minimum.
TEST(Fragment, DecodeStageReadsAreConflictFree) {
  for (int d : {64, 128, 256})
    for (int bits : {4, 8}) {
      const int row_bytes = d * bits / 8, k_bytes = row_bytes / 4, v_bytes = row_bytes / 8;
      auto check = [&](int bytes, auto row_and_offset, const char* what) {
        const int unit = std::min(16, bytes & -bytes);  // widest power of two dividing the range
        for (int u = 0; u < bytes / unit; ++u) {
          std::vector<int> addr(32);
          for (int lane = 0; lane < 32; ++lane) {
            const auto [row, off] = row_and_offset(lane);
            addr[lane] = stage_offset(row_bytes, row * row_bytes + off + u * unit);
          }
          EXPECT_EQ(wavefronts(addr, unit), 32 * unit / 128 * (row_bytes == 256 ? 2 : 1))
              << what << " D " << d << " bits " << bits << " unit " << u;
        }
      };
      for (int j = 0; j < 4; ++j)
        check(k_bytes, [&](int lane) { return std::pair{decode_k_row(j, lane / 4), lane % 4 * k_bytes}; }, "K");
      for (int kk = 0; kk < 2; ++kk)
        for (int r = 0; r < 4; ++r)
          check(v_bytes, [&](int lane) { return std::pair{decode_v_key(kk, r, lane % 4), lane / 4 * v_bytes}; }, "V");
    }
}

// The layout for kernels that read V by ldmatrix (decode_traits.h kVFold): an 8x8 matrix is 8 consecutive rows'
// same 16-byte chunk (one block of 32 E2M1 codes of 8 keys) and takes one wavefront; K's fragment reads above stay
// at the minimum, for E2M1 rows (32, 64, 128 bytes) and the 8-bit K rows that a mixed pair puts beside them.
TEST(Fragment, DecodeStageLdmatrixReadsAreConflictFree) {
  for (int d : {64, 128, 256}) {
    const int row_bytes = d / 2;
    for (int k0 = 0; k0 < 32; k0 += 8)
      for (int c = 0; c < row_bytes / 16; ++c) {
        std::vector<int> addr(32);
        for (int lane = 0; lane < 32; ++lane) addr[lane] = stage_offset(row_bytes, (k0 + lane % 8) * row_bytes + 16 * c, true);
        addr.resize(8);  // a phase: one matrix, 8 rows of 16 bytes
        std::set<int> chunks;
        for (int a : addr) chunks.insert(a / 16 % 8);
        EXPECT_EQ(chunks.size(), 8u) << "D " << d << " keys " << k0 << " chunk " << c;
      }
    for (int bits : {4, 8}) {
      const int kb = d * bits / 8, k_bytes = kb / 4, unit = std::min(16, k_bytes & -k_bytes);
      for (int j = 0; j < 4; ++j)
        for (int u = 0; u < k_bytes / unit; ++u) {
          std::vector<int> addr(32);
          for (int lane = 0; lane < 32; ++lane)
            addr[lane] = stage_offset(kb, decode_k_row(j, lane / 4) * kb + lane % 4 * k_bytes + u * unit, true);
          EXPECT_EQ(wavefronts(addr, unit), 32 * unit / 128 * (kb == 256 ? 2 : 1)) << "K D " << d << " bits " << bits;
        }
    }
  }
}

}  // namespace
}  // namespace mxattn::frag
