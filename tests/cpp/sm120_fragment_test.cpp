// The sm_120a prefill kernel's operand maps (kernels/attention/sm120/fragment.h) on a simulated warp: each
// lane's registers and scale registers assembled from byte tiles as the kernel assembles them, run through the
// CPU model of the block-scaled instruction (probe/probe.h mma_model: the library's fragment and scale-lane
// maps), against FP64 math on the decoded values. Lanes whose scale registers the instruction does not read
// hold a NaN scale (E8M0 0xFF): were one read, the result would be NaN.
#include "mxattn/kernels/attention/sm120/fragment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "mxattn/probe/probe.h"

namespace mxattn::frag::sm120 {
namespace {

constexpr uint32_t kNanScale = 0xFF;

uint32_t load32(const std::vector<uint8_t>& tile, int row_bytes, RowCol at) {
  uint32_t x;
  std::memcpy(&x, &tile[at.row * row_bytes + at.col], 4);
  return x;
}

// A random finite code of element e (not E4M3's NaNs, not E5M2's infinities and NaNs).
uint32_t random_code(const Element& e, std::mt19937& rng) {
  for (;;) {
    const uint32_t c = rng() & ((1u << e.bits) - 1);
    if (std::isfinite(e.decode(c))) return c;
  }
}
double scale_value(uint32_t b) { return std::ldexp(1.0, int(b) - 127); }

const probe::Family& mx_family() { return *probe::find_family("mma.m16n8k32.mxf8f6f4.e4m3"); }

// Each of a warp's accumulators d (mma_c: row, and column col0 + its column) against the FP64 sum of
// term(row, column, k) over k < terms. The model rounds D to FP32 after each of its k-steps: at most
// `roundings` x 2^-24 of the terms' magnitude.
template <class Term>
void expect_warp(const float (&d)[32][4], int col0, int terms, int roundings, Term term) {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg) {
      const RowCol rc = mma_c(lane, reg);
      double want = 0, mag = 0;
      for (int k = 0; k < terms; ++k) {
        const double x = term(rc.row, col0 + rc.col, k);
        want += x, mag += std::fabs(x);
      }
      EXPECT_NEAR(d[lane][reg], want, roundings * 0x1p-24 * mag + 1e-30) << "lane " << lane << " reg " << reg;
    }
}

// S = Q K^T over D = 128 (4 k-steps), 16 rows x 16 keys (2 key tiles), Q and K of the given elements.
void check_qk(const Element& qe, const Element& ke, uint32_t seed) {
  constexpr int kRows = 16, kKeys = 16, kD = 128;
  std::mt19937 rng(seed);
  std::vector<uint32_t> qc(kRows * kD), kc(kKeys * kD), qs(kRows * kD / 32), ks(kKeys * kD / 32);
  std::vector<uint8_t> qt(kRows * kD), kt(kKeys * kD);  // the byte tiles
  for (int i = 0; i < kRows * kD; ++i) qt[i] = mma_byte(qe.bits, qc[i] = random_code(qe, rng));
  for (int i = 0; i < kKeys * kD; ++i) kt[i] = mma_byte(ke.bits, kc[i] = random_code(ke, rng));
  for (auto& s : qs) s = 120 + rng() % 15;
  for (auto& s : ks) s = 120 + rng() % 15;
  for (int j = 0; j < kKeys / 8; ++j) {
    float d[32][4] = {};
    for (int step = 0; step < kD / 32; ++step) {
      probe::WarpRegs r;
      for (int lane = 0; lane < 32; ++lane) {
        for (int reg = 0; reg < 4; ++reg) r.a[lane][reg] = load32(qt, kD, qk_a_at(lane, reg, step));
        for (int reg = 0; reg < 2; ++reg) r.b[lane][reg] = load32(kt, kD, qk_b_at(lane, reg, j, step));
        const int row = scale_a_row(lane), col = scale_b_col(lane);
        r.sa[lane] = row >= 0 ? qs[row * kD / 32 + step] : kNanScale;
        r.sb[lane] = col >= 0 ? ks[(8 * j + col) * kD / 32 + step] : kNanScale;
      }
      probe::mma_model(mx_family(), qe, ke, ScaleType::E8M0, r, d);
    }
    expect_warp(d, 8 * j, kD, kD / 32, [&](int row, int key, int c) {
      return qe.decode(qc[row * kD + c]) * scale_value(qs[row * kD / 32 + c / 32]) * ke.decode(kc[key * kD + c]) *
             scale_value(ks[key * kD / 32 + c / 32]);
    });
  }
}

TEST(Sm120Fragment, QkOfEveryByteElement) {
  check_qk(kE4M3, kE4M3, 1);
  check_qk(kE5M2, kE5M2, 2);
  check_qk(kE2M3, kE2M3, 3);
  check_qk(kE3M2, kE3M2, 4);
  check_qk(kE2M1, kE2M1, 5);
  check_qk(kE4M3, kE2M1, 6);  // kind::mxf8f6f4 takes Q and K of different elements
}

// S = Q K^T of packed E2M1 (kind::mxf4nvf4, m16n8k64): NVFP4's UE4M3 scales per 16 channels (4X) and MXFP4's
// UE8M0 per 32 (2X), D = 128 (2 k-steps), 16 rows x 16 keys; tiles packed as in memory.
void check_qk4(const char* family, ScaleType type, int block, uint32_t seed) {
  constexpr int kRows = 16, kKeys = 16, kD = 128;
  const int per_row = kD / block, per_step = 64 / block;  // scales a row, and a k-step
  std::mt19937 rng(seed);
  std::vector<uint32_t> qc(kRows * kD), kc(kKeys * kD), qs(kRows * per_row), ks(kKeys * per_row);
  std::vector<uint8_t> qt(kRows * kD / 2, 0), kt(kKeys * kD / 2, 0);
  for (int i = 0; i < kRows * kD; ++i) qt[i / 2] |= uint8_t((qc[i] = rng() & 15) << (4 * (i % 2)));
  for (int i = 0; i < kKeys * kD; ++i) kt[i / 2] |= uint8_t((kc[i] = rng() & 15) << (4 * (i % 2)));
  // UE4M3 0.5 (0x30) to 28 (0x5E), no NaN; UE8M0 near 2^0.
  for (auto* v : {&qs, &ks})
    for (auto& x : *v) x = type == ScaleType::UE4M3 ? 0x30 + rng() % 0x2F : 120 + rng() % 15;
  const probe::Family& f = *probe::find_family(family);
  auto scale_word = [&](const std::vector<uint32_t>& sc, int row, int step) {
    uint32_t w = 0;
    for (int b = 0; b < per_step; ++b) w |= sc[row * per_row + step * per_step + b] << (8 * b);
    return w;
  };
  for (int j = 0; j < kKeys / 8; ++j) {
    float d[32][4] = {};
    for (int step = 0; step < kD / 64; ++step) {
      probe::WarpRegs r;
      for (int lane = 0; lane < 32; ++lane) {
        for (int reg = 0; reg < 4; ++reg) r.a[lane][reg] = load32(qt, kD / 2, qk4_a_at(lane, reg, step));
        for (int reg = 0; reg < 2; ++reg) r.b[lane][reg] = load32(kt, kD / 2, qk4_b_at(lane, reg, j, step));
        const int row = scale_a_row(lane), col = scale_b_col(lane);
        r.sa[lane] = row >= 0 ? scale_word(qs, row, step) : 0xFFFFFFFFu;
        r.sb[lane] = col >= 0 ? scale_word(ks, 8 * j + col, step) : 0xFFFFFFFFu;
      }
      probe::mma_model(f, kE2M1, kE2M1, type, r, d);
    }
    SCOPED_TRACE(family);
    expect_warp(d, 8 * j, kD, kD / 64, [&](int row, int key, int c) {
      return kE2M1.decode(qc[row * kD + c]) * decode_scale(type, qs[row * per_row + c / block]) *
             kE2M1.decode(kc[key * kD + c]) * decode_scale(type, ks[key * per_row + c / block]);
    });
  }
}

TEST(Sm120Fragment, QkOfPackedE2m1) {
  check_qk4("mma.m16n8k64.mxf4nvf4.ue4m3", ScaleType::UE4M3, 16, 11);  // NVFP4
  check_qk4("mma.m16n8k64.mxf4nvf4.ue8m0", ScaleType::E8M0, 32, 12);   // MXFP4
}

// O = P V over 64 keys (2 k-steps) and 16 channels (2 channel tiles): P from S's accumulators (16 rows x 64
// keys, in [0, 1]) stored times 2^8 as E4M3 with the scale 2^-8, V blocked along the keys.
void check_pv(const Element& ve, uint32_t seed) {
  constexpr int kRows = 16, kKeys = 64, kCh = 16;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> p(kRows * kKeys);
  for (auto& x : p) x = unit(rng) * unit(rng);  // spread over several binades
  std::vector<uint32_t> vc(kKeys * kCh), vs(kCh * kKeys / 32);
  std::vector<uint8_t> vt(kCh * kKeys);  // V^T, each 32-key group in slot order
  for (int key = 0; key < kKeys; ++key)
    for (int ch = 0; ch < kCh; ++ch) vt[ch * kKeys + vt_column(key)] = mma_byte(ve.bits, vc[key * kCh + ch] = random_code(ve, rng));
  for (auto& s : vs) s = 120 + rng() % 15;
  // S's accumulators of this warp: acc[lane][key tile][reg] = P at mma_c.
  auto p_at = [&](int lane, int key_tile, int reg) {
    const RowCol rc = mma_c(lane, reg);
    return p[rc.row * kKeys + 8 * key_tile + rc.col];
  };
  for (int i = 0; i < kCh / 8; ++i) {
    float d[32][4] = {};
    for (int kk = 0; kk < kKeys / 32; ++kk) {
      probe::WarpRegs r;
      for (int lane = 0; lane < 32; ++lane) {
        for (int reg = 0; reg < 4; ++reg)
          for (int byte = 0; byte < 4; ++byte) {
            const Acc src = p_source(reg, byte, kk);
            r.a[lane][reg] |= kE4M3.encode(p_at(lane, src.key_tile, src.reg) * kPOffset) << (8 * byte);
          }
        for (int reg = 0; reg < 2; ++reg) r.b[lane][reg] = load32(vt, kKeys, pv_b_at(lane, reg, i, kk));
        r.sa[lane] = scale_a_row(lane) >= 0 ? kPScale : kNanScale;
        const int col = scale_b_col(lane);
        r.sb[lane] = col >= 0 ? vs[(8 * i + col) * kKeys / 32 + kk] : kNanScale;
      }
      probe::mma_model(mx_family(), kE4M3, ve, ScaleType::E8M0, r, d);
    }
    expect_warp(d, 8 * i, kKeys, kKeys / 32, [&](int row, int ch, int key) {
      const double pq = kE4M3.decode(kE4M3.encode(p[row * kKeys + key] * kPOffset)) / kPOffset;
      return pq * ve.decode(vc[key * kCh + ch]) * scale_value(vs[ch * kKeys / 32 + key / 32]);
    });
  }
}

TEST(Sm120Fragment, PvOfEveryByteElement) {
  for (const Element& e : {kE4M3, kE5M2, kE2M3, kE3M2, kE2M1}) check_pv(e, 7 + e.bits);
}

// The maps against their own definitions: V^T's columns are a permutation of each 32-key group, and P's bytes
// cover each of S's accumulators of a k-step once.
TEST(Sm120Fragment, MapsArePermutations) {
  std::vector<int> seen(64, 0);
  for (int key = 0; key < 64; ++key) ++seen[vt_column(key)];
  for (int c = 0; c < 64; ++c) EXPECT_EQ(seen[c], 1) << c;
  for (int key = 0; key < 64; ++key) EXPECT_EQ(vt_column(key) / 32, key / 32);
  for (int kk = 0; kk < 2; ++kk) {
    std::vector<int> used(4 * 4, 0);
    for (int reg = 0; reg < 4; ++reg)
      for (int byte = 0; byte < 4; ++byte) {
        const Acc a = p_source(reg, byte, kk);
        ASSERT_TRUE(a.key_tile >= 4 * kk && a.key_tile < 4 * kk + 4);
        ++used[(a.key_tile - 4 * kk) * 4 + a.reg];
      }
    for (int u : used) EXPECT_EQ(u, 1);
  }
}

}  // namespace
}  // namespace mxattn::frag::sm120
