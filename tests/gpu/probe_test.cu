// `mxattn probe` on the GPU: every tensor-core family the probe knows that this GPU runs (on the H200 the 17
// of sm_90; on an sm_120 GPU also the block-scaled ones), measured one-hot (probe/probe.h) and held against the
// maps the kernels use, then run on random codes against the CPU model. A difference fails with the slots that
// differ.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "mxattn/probe/probe.h"

namespace mxattn::probe {
namespace {

class GpuProbe : public ::testing::TestWithParam<int> {};

TEST_P(GpuProbe, MeasuredMapIsTheLibrarys) {
  const Family& f = families()[GetParam()];
  if (!f.runs_on(gpu_compute_capability())) GTEST_SKIP() << f.name << " does not run on this GPU";
  const Discovery d = discover(f, gpu_runner());
  ASSERT_TRUE(d.errors.empty()) << f.name << ": " << d.errors.front();
  for (size_t i = 0; i < d.diffs.size() && i < 10; ++i) ADD_FAILURE() << f.name << ": " << d.diffs[i];
  EXPECT_TRUE(d.diffs.empty()) << d.diffs.size() << " slots differ";
  const Map lib = library_map(f);
  EXPECT_TRUE(d.found.a == lib.a && d.found.b == lib.b && d.found.c == lib.c && d.found.sa == lib.sa &&
              d.found.sb == lib.sb);
}

// The values round: the instruction on random codes (and scales) against the model of its documented semantics
// over the library's maps (probe.h check_values).
TEST_P(GpuProbe, ValuesAreTheModels) {
  const Family& f = families()[GetParam()];
  if (!f.runs_on(gpu_compute_capability())) GTEST_SKIP() << f.name << " does not run on this GPU";
  const ValueCheck v = check_values(f, gpu_value_runner(), 64, std::random_device{}());
  ASSERT_TRUE(v.error.empty()) << v.error;
  EXPECT_EQ(v.draws, 64);
  EXPECT_LE(v.worst, v.bar) << f.name;
  std::printf("%s: largest |D - model| / sum |products| over 64 draws: %.3g\n", f.name, v.worst);
}

// The GPU runner itself, on one job a slot whose place is known: A's slot 0 (lane or thread 0, register 0,
// part 0: row 0, k 0 in every family's map) against B all ones lights exactly row 0 of D, N values of 1.
TEST_P(GpuProbe, OneHotRunLightsOneRow) {
  const Family& f = families()[GetParam()];
  if (!f.runs_on(gpu_compute_capability())) GTEST_SKIP() << f.name << " does not run on this GPU";
  const Map lib = library_map(f);
  int slot = 0;
  while (!(lib.a[slot] == Coord{0, 0})) ++slot;
  std::vector<Result> res;
  std::vector<uint32_t> masks;
  ASSERT_TRUE(gpu_runner()(f, {{slot, kAll}, {kAll, kAll}}, res, &masks).ok);
  EXPECT_EQ(res[0].nonzero, f.n);
  EXPECT_EQ(res[0].bad, 0);
  for (int s = 0; s < f.c_slots(); ++s) EXPECT_EQ(masks[s / 32] >> (s % 32) & 1u, lib.c[s].row == 0 ? 1u : 0u) << s;
  // Everything ones: each of D's M x N values is K.
  EXPECT_EQ(res[1].nonzero, f.m * f.n);
  EXPECT_EQ(res[1].bad, f.m * f.n);
}

INSTANTIATE_TEST_SUITE_P(Families, GpuProbe, ::testing::Range(0, int(families().size())),
                         [](const ::testing::TestParamInfo<int>& i) {
                           std::string name = families()[i.param].name;
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace mxattn::probe
