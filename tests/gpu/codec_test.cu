// The fast element encoders of kernels/codecs.h against Element::encode on every non-NaN float.
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu_test_util.h"
#include "mxattn/kernels/codecs.h"

namespace mxattn::test {
namespace {

using kernels::FastRoute;

struct Counts {
  unsigned long long mismatches;
  unsigned long long nan_mismatches;
  uint32_t first[4];  // first mismatching inputs (bits), 0xffffffff unused
};

template <FastRoute R>
__global__ void compare_all_floats(Counts* out) {
  constexpr Element e = R == FastRoute::CvtE4M3   ? Element::minifloat(4, 3, Specials::NanOnly)
                        : R == FastRoute::CvtE5M2 ? Element::minifloat(5, 2, Specials::Ieee)
                                                  : Element::minifloat(2, 1);
  unsigned long long bad = 0, bad_nan = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t u = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < (uint64_t(1) << 32); u += stride) {
    const float v = bits_float(uint32_t(u));
    uint32_t fast;
    if constexpr (R == FastRoute::CvtE4M3) fast = kernels::cvt_rn_satfinite_e4m3x2_f32(0.0f, v) & 0xff;
    else if constexpr (R == FastRoute::CvtE5M2) fast = kernels::cvt_rn_satfinite_e5m2x2_f32(0.0f, v) & 0xff;
    else fast = kernels::e2m1_encode_fma(v);
    if (fast == e.encode(v)) continue;
    if (v != v) {
      ++bad_nan;
      continue;
    }
    ++bad;
    const unsigned long long slot = atomicAdd(&out->mismatches, 1ull);
    if (slot < 4) out->first[slot] = uint32_t(u);
  }
  atomicAdd(&out->nan_mismatches, bad_nan);
  (void)bad;
}

template <FastRoute R>
void check(const char* name) {
  DeviceBuffer<Counts> d(1);
  Counts init{0, 0, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
  cudaMemcpy(d.ptr, &init, sizeof init, cudaMemcpyHostToDevice);
  compare_all_floats<R><<<132 * 16, 256>>>(d.ptr);
  CUDA_ASSERT(cudaGetLastError());
  CUDA_ASSERT(cudaDeviceSynchronize());
  const Counts c = d.download()[0];
  std::printf("  %s: %llu non-NaN mismatches, %llu NaN inputs coded differently (NaN blocks take Element::encode)\n",
              name, c.mismatches, c.nan_mismatches);
  EXPECT_EQ(c.mismatches, 0ull) << name << ": first mismatching inputs 0x" << std::hex << c.first[0] << " 0x"
                                << c.first[1] << " 0x" << c.first[2] << " 0x" << c.first[3];
}

TEST(GpuCodecs, CvtE4M3EqualsEncodeOnEveryFloat) { check<FastRoute::CvtE4M3>("e4m3 cvt"); }
TEST(GpuCodecs, CvtE5M2EqualsEncodeOnEveryFloat) { check<FastRoute::CvtE5M2>("e5m2 cvt"); }
TEST(GpuCodecs, FmaE2M1EqualsEncodeOnEveryFloat) { check<FastRoute::FmaE2M1>("e2m1 fma"); }

}  // namespace
}  // namespace mxattn::test
