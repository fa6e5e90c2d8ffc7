// `mxattn probe` on the GPU: every sm_90 tensor-core family the probe knows, measured one-hot (probe/probe.h)
// and held against the maps the kernels use. A difference fails with the slots that differ.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "mxattn/probe/probe.h"

namespace mxattn::probe {
namespace {

bool sm90() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major == 9 && minor == 0;
}

class GpuProbe : public ::testing::TestWithParam<int> {};

TEST_P(GpuProbe, MeasuredMapIsTheLibrarys) {
  if (!sm90()) GTEST_SKIP() << "the families are sm_90's (wgmma); needs an sm_90 GPU";
  const Family& f = sm90_families()[GetParam()];
  const Discovery d = discover(f, gpu_runner());
  ASSERT_TRUE(d.errors.empty()) << f.name << ": " << d.errors.front();
  for (size_t i = 0; i < d.diffs.size() && i < 10; ++i) ADD_FAILURE() << f.name << ": " << d.diffs[i];
  EXPECT_TRUE(d.diffs.empty()) << d.diffs.size() << " slots differ";
  const Map lib = library_map(f);
  EXPECT_TRUE(d.found.a == lib.a && d.found.b == lib.b && d.found.c == lib.c);
  EXPECT_EQ(d.jobs, f.a_slots() + f.b_slots() + (f.m + f.n) * f.k * f.k);
}

// The GPU runner itself, on one job a slot whose place is known: A's slot 0 (lane or thread 0, register 0,
// part 0: row 0, k 0 in every family's map) against B all ones lights exactly row 0 of D, N values of 1.
TEST_P(GpuProbe, OneHotRunLightsOneRow) {
  if (!sm90()) GTEST_SKIP() << "needs an sm_90 GPU";
  const Family& f = sm90_families()[GetParam()];
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

INSTANTIATE_TEST_SUITE_P(Families, GpuProbe, ::testing::Range(0, int(sm90_families().size())),
                         [](const ::testing::TestParamInfo<int>& i) {
                           std::string name = sm90_families()[i.param].name;
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace mxattn::probe
