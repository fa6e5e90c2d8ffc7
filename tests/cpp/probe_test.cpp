// `mxattn probe`'s analysis (probe/probe.h) on CPU models of the instructions: the library's own maps come
// back whole, and a model whose layout differs from the library's in one place is caught there.
#include "mxattn/probe/probe.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace mxattn::probe {
namespace {

// Slots of `map` whose coordinates are read (not {-1, -1}): the first two with different rows and columns.
std::pair<int, int> two_slots(const std::vector<Coord>& map) {
  int first = -1;
  for (int s = 0; s < int(map.size()); ++s) {
    if (map[s].row < 0) continue;
    if (first < 0) first = s;
    else if (map[s].row != map[first].row && map[s].col != map[first].col) return {first, s};
  }
  return {-1, -1};
}

TEST(Probe, FamiliesAreWholeMaps) {
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    EXPECT_EQ(find_family(f.name), &f);
    const Map lib = library_map(f);
    // Every element of A, B and D has exactly one slot; shared-memory slots outside the k-step are unread.
    auto check = [](const std::vector<Coord>& map, int rows, int cols) {
      std::set<std::pair<int, int>> seen;
      for (const Coord& c : map)
        if (c.row >= 0) {
          EXPECT_TRUE(c.row < rows && c.col >= 0 && c.col < cols);
          EXPECT_TRUE(seen.insert({c.row, c.col}).second) << c.row << "," << c.col;
        }
      EXPECT_EQ(seen.size(), size_t(rows * cols));
    };
    check(lib.a, f.m, f.k);
    check(lib.b, f.k, f.n);
    check(lib.c, f.m, f.n);
  }
  EXPECT_EQ(find_family("mma.m16n8k8.tf32"), nullptr);
  // What an H200 and an sm_120 GPU run.
  std::vector<std::string> h200, sm120;
  for (const Family* f : families_for(90)) h200.push_back(f->name);
  for (const Family* f : families_for(120)) sm120.push_back(f->name);
  EXPECT_EQ(h200.size(), 17u);   // mma.sync BF16 and E4M3, and the Hopper kernel's 15 wgmma shapes
  EXPECT_EQ(sm120.size(), 13u);  // mma.sync BF16 and E4M3, and the eleven block-scaled
  EXPECT_EQ(sm120[2], "mma.m16n8k32.mxf8f6f4.e4m3");
  // Each wgmma shape the Hopper kernel issues (hopper/mainloop.h, hopper/traits.h tiles) is probed.
  for (const char* name : {"wgmma.m64n128k32.e4m3.ss", "wgmma.m64n256k32.e4m3.ss.sw64", "wgmma.m64n192k32.e4m3.ss.sw64",
                           "wgmma.m64n64k32.e4m3.ss", "wgmma.m64n64k32.e4m3.rs", "wgmma.m64n128k32.e4m3.rs",
                           "wgmma.m64n136k32.e4m3.rs", "wgmma.m64n256k32.e4m3.rs.sw64", "wgmma.m64n8k32.e4m3.rs",
                           "wgmma.m64n8k32.e4m3.rs.sw64", "wgmma.m64n64k16.bf16.rs", "wgmma.m64n128k16.bf16.rs",
                           "wgmma.m64n256k16.bf16.rs", "wgmma.m64n8k16.bf16.rs"})
    EXPECT_NE(find_family(name), nullptr) << name;
  // and each block-scaled kind the sm_120a kernel issues: S on each element, P (E4M3) V on each.
  for (const char* name : {"mma.m16n8k32.mxf8f6f4.e5m2", "mma.m16n8k32.mxf8f6f4.e3m2", "mma.m16n8k32.mxf8f6f4.e4m3.e2m1",
                           "mma.m16n8k32.mxf8f6f4.e4m3.e5m2"})
    EXPECT_NE(find_family(name), nullptr) << name;
  const Family& mixed = *find_family("mma.m16n8k32.mxf8f6f4.e4m3.e2m3");
  EXPECT_EQ(mixed.a_one, 0x38u);
  EXPECT_EQ(mixed.b_one, 0x08u);
  EXPECT_STREQ(mixed.ptx, "mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e2m3.f32.ue8m0");
}

// Each family's code of 1.0 is 1.0 in its elements, in its container (bits 5:2 of a byte for E2M1 in mxf8f6f4).
TEST(Probe, CodesOfOneAreOne) {
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    for (int side = 0; side < 2; ++side) {
      const OperandSlots& o = side ? f.b : f.a;
      const Element& e = side ? f.b_elem : f.a_elem;
      const uint32_t one = side ? f.b_one : f.a_one;
      const int width = o.smem ? 8 * o.elem_bytes : 32 / o.parts;
      const uint32_t code = width == 8 && e.bits == 4 ? one >> 2 : one;
      EXPECT_EQ(e.decode(code), 1.0f) << (side ? "B" : "A");
      EXPECT_LT(one, 1ull << width);
    }
  }
}

// The values round on the model of the library's own maps: no error but D's rounding to FP32; on a model with two slots of an operand
// swapped, or an element read as another type, the error is whole products and over the bar.
TEST(Probe, ValuesRoundCatchesWhatOneHotCannot) {
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    const ValueCheck same = check_values(f, model_value_runner(library_map(f)), 3, 7);
    EXPECT_TRUE(same.ok()) << same.error << " " << same.worst;
    EXPECT_LE(same.worst, 0x1p-24);  // the runner's D in FP32: half an ulp of |D| <= sum |products|
    EXPECT_EQ(same.draws, 3);
    Map m = library_map(f);
    const auto [s, t] = two_slots(m.a);
    std::swap(m.a[s], m.a[t]);
    const ValueCheck swapped = check_values(f, model_value_runner(m), 3, 7);
    EXPECT_GT(swapped.worst, swapped.bar);
  }
  // An instruction that read E5M2 codes as E4M3 (kind::mxf8f6f4's type fields swapped): same layout, other values.
  const Family& f = *find_family("mma.m16n8k32.mxf8f6f4.e5m2");
  Family as_e4m3 = f;
  as_e4m3.a_elem = as_e4m3.b_elem = kE4M3;
  const ValueRunner misread = [&](const Family&, const std::vector<Operands>& xs, std::vector<float>& d) {
    d.clear();
    for (const Operands& x : xs)
      for (double v : model_values(as_e4m3, library_map(f), x)) d.push_back(float(v));
    return Status::success();
  };
  EXPECT_FALSE(check_values(f, misread, 3, 7).ok());
  // and one whose 4-bit codes sat in bits 3:0 of the byte instead of 5:2.
  const Family& e2m1 = *find_family("mma.m16n8k32.mxf8f6f4.e2m1");
  const ValueRunner low_bits = [&](const Family&, const std::vector<Operands>& xs, std::vector<float>& d) {
    d.clear();
    for (Operands x : xs) {
      for (uint32_t& w : x.a) w = (w >> 2) & 0x0F0F0F0Fu;  // the model then reads bits 5:2 of the moved codes
      for (uint32_t& w : x.b) w = (w >> 2) & 0x0F0F0F0Fu;
      for (double v : model_values(e2m1, library_map(e2m1), x)) d.push_back(float(v));
    }
    return Status::success();
  };
  EXPECT_FALSE(check_values(e2m1, low_bits, 3, 7).ok());
}

// Block-scaled: a scale byte on another row (column) or k block than the library says is reported there; one
// that scales two rows is no map.
TEST(Probe, ScaleLanesAreChecked) {
  for (const char* name : {"mma.m16n8k32.mxf8f6f4.e2m1", "mma.m16n8k64.mxf4nvf4.ue4m3"}) {
    SCOPED_TRACE(name);
    const Family& f = *find_family(name);
    Map m = library_map(f);
    std::swap(m.sa[0], m.sa[4]);  // lanes 0 and 1, byte 0: rows 0 and 8 swapped
    Discovery d = discover(f, model_runner(m));
    ASSERT_TRUE(d.errors.empty()) << d.errors.front();
    ASSERT_EQ(d.diffs.size(), 2u);
    EXPECT_EQ(d.diffs[0].rfind("A scale lane 0 byte 0: measured (8, 0), the library's (0, 0)", 0), 0u) << d.diffs[0];

    m = library_map(f);
    m.sb[0] = {};  // lane 0's byte 0 not read: column 0's first k block keeps scale 1
    d = discover(f, model_runner(m));
    ASSERT_TRUE(d.errors.empty()) << d.errors.front();
    ASSERT_EQ(d.diffs.size(), 1u);
    EXPECT_NE(d.diffs[0].find("B scale lane 0 byte 0: measured not read"), std::string::npos) << d.diffs[0];
  }
  const Family& f = *find_family("mma.m16n8k64.mxf4nvf4.ue8m0");
  Map m = library_map(f);
  m.sa[8] = {m.sa[0].row, 1};  // lane 2 byte 0 (unread) made to scale row 0's second block too: two bytes, one place
  const Discovery d = discover(f, model_runner(m));
  EXPECT_TRUE(d.errors.empty());
  ASSERT_FALSE(d.diffs.empty());
  EXPECT_NE(d.diffs[0].find("A scale lane 2 byte 0"), std::string::npos) << d.diffs[0];
}

TEST(Probe, ModelOfTheLibrarysMapsComesBackWhole) {
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    const Map lib = library_map(f);
    const Discovery d = discover(f, model_runner(lib));
    EXPECT_TRUE(d.errors.empty()) << d.errors.front();
    EXPECT_TRUE(d.diffs.empty()) << d.diffs.front();
    EXPECT_TRUE(d.found.a == lib.a && d.found.b == lib.b && d.found.c == lib.c);
    // Rounds 1 and 2, then round 3: (read A slots + read B slots) x K pairs; block-scaled, round 4: each
    // scale byte of A and of B against K one-hot slots.
    EXPECT_EQ(d.jobs, f.a_slots() + f.b_slots() + (f.m + f.n) * f.k * f.k + (f.scale.vec ? 2 * kScaleSlots * f.k : 0));
    EXPECT_TRUE(d.found.sa == lib.sa && d.found.sb == lib.sb);
  }
}

// Rows, columns or k renamed together in A, B and D are the same instruction: the probe cannot tell, and
// must not report it.
TEST(Probe, ConsistentRenamingIsTheSameInstruction) {
  const Family& f = *find_family("mma.m16n8k16.bf16");
  Map m = library_map(f);
  for (Coord& c : m.a) c = {(c.row + 3) % f.m, (c.col + 5) % f.k};
  for (Coord& c : m.b) c = {(c.row + 5) % f.k, (c.col + 1) % f.n};
  for (Coord& c : m.c) c = {(c.row + 3) % f.m, (c.col + 1) % f.n};
  EXPECT_TRUE(discover(f, model_runner(m)).ok());
}

// One slot in another place than the library's map says: reported as that slot's difference.
TEST(Probe, ASwappedPairIsReportedAtItsSlots) {
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    const Map lib = library_map(f);
    for (int op = 0; op < 3; ++op) {
      Map m = lib;
      std::vector<Coord>& v = op == 0 ? m.a : op == 1 ? m.b : m.c;
      const auto [s, t] = two_slots(v);
      ASSERT_GE(t, 0);
      std::swap(v[s], v[t]);
      const Discovery d = discover(f, model_runner(m));
      EXPECT_TRUE(d.errors.empty());
      ASSERT_FALSE(d.diffs.empty()) << "operand " << op;
      const char* name = op == 0 ? "A " : op == 1 ? "B " : "D ";
      for (const std::string& diff : d.diffs) EXPECT_EQ(diff.rfind(name, 0), 0u) << diff;
      EXPECT_EQ(d.found.a.size(), lib.a.size());
    }
  }
}

// A slot that is not read, or read twice, is not a map: the probe says what broke.
TEST(Probe, BrokenLayoutsAreErrors) {
  const Family& f = *find_family("wgmma.m64n64k32.e4m3.rs");
  Map m = library_map(f);
  m.a[5] = m.a[6];  // two slots on one element, none on another
  Discovery d = discover(f, model_runner(m));
  ASSERT_FALSE(d.errors.empty());
  EXPECT_NE(d.errors.front().find("other than 0 and 1"), std::string::npos) << d.errors.front();

  m = library_map(f);
  m.c[7] = {};  // an accumulator that never lights up
  d = discover(f, model_runner(m));
  ASSERT_FALSE(d.errors.empty());
  EXPECT_NE(d.errors.front().find("slot"), std::string::npos) << d.errors.front();
}

TEST(Probe, GridsAndSvgShowTheMap) {
  const Family& f = *find_family("mma.m16n8k16.bf16");
  const Discovery d = discover(f, model_runner(library_map(f)));
  const std::string text = grids(f, d.found, 0, 0);
  // A's row 0: lanes 0 0 1 1 2 2 3 3 0 0 1 1 ... (fragment.h mma_a: (g, 2t + h + 8 (r / 2)))
  EXPECT_NE(text.find("     0    0    0    1    1    2    2    3    3    0    0    1    1    2    2    3    3"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("D (16 x 8, registers): register"), std::string::npos);
  const std::string pic = svg(f, d);
  EXPECT_EQ(pic.rfind("<svg", 0), 0u);
  EXPECT_NE(pic.find("matches the library's maps"), std::string::npos);
  EXPECT_EQ(pic.find("stroke=\"red\""), std::string::npos);

  Map m = library_map(f);
  std::swap(m.c[0], m.c[5]);
  const Discovery bad = discover(f, model_runner(m));
  EXPECT_NE(svg(f, bad).find("stroke=\"red\""), std::string::npos);
  // The shared-memory grids name the tile's chunks.
  const Family& ss = *find_family("wgmma.m64n64k32.e4m3.ss");
  EXPECT_NE(grids(ss, library_map(ss), 8, 8).find("16-byte chunk"), std::string::npos);
}

}  // namespace
}  // namespace mxattn::probe
