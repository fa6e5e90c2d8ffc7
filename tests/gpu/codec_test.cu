// The fast element encoders of kernels/codecs.h against Element::encode on every input they take:
// every non-NaN float, and for the packed BF16 -> E2M1 route every bf16 times every power of two it is
// used with.
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
  cudaMemcpy(d.data(), &init, sizeof init, cudaMemcpyHostToDevice);
  compare_all_floats<R><<<132 * 16, 256>>>(d.data());
  CUDA_ASSERT(cudaGetLastError());
  CUDA_ASSERT(cudaDeviceSynchronize());
  const Counts c = d.download()[0];
  std::printf("  %s: %llu non-NaN mismatches, %llu NaN inputs coded differently (NaN blocks take Element::encode)\n",
              name, c.mismatches, c.nan_mismatches);
  EXPECT_EQ(c.mismatches, 0ull) << name << ": first mismatching inputs 0x" << std::hex << c.first[0] << " 0x"
                                << c.first[1] << " 0x" << c.first[2] << " 0x" << c.first[3];
}

// ---- The packed BF16 -> E2M1 route of the fp4 quantize kernel (codecs.h) ----------------------------

struct PackedCounts {
  unsigned long long checked, mismatches;
  uint32_t first[4];  // (input bits, and for the MX test the scale exponent << 16), 0xffffffff unused
};

__device__ void record_mismatch(PackedCounts* out, uint32_t what) {
  const unsigned long long slot = atomicAdd(&out->mismatches, 1ull);
  if (slot < 4) out->first[slot] = what;
}

// MX: v = x * 2^k for every finite bf16 x and every E8M0 scale the kernel sends this way (k in
// [-126, 124]) with |v| <= 6 (RCEIL) or |v| < 8 (FLOOR, codes clamped at 7). Underflow included: for
// large -k most products fall below 2^-126, and subnormal x are among the inputs. A thread encodes the
// eight elements x0 + i (or +0 where |v| is out of range), so every lane and nibble position is used.
template <bool kFloor>
__global__ void compare_packed_mx(PackedCounts* out) {
  constexpr Element e2m1 = Element::minifloat(2, 1);
  const int k = 124 - int(blockIdx.y);
  const kernels::E2M1Pow2 s = kernels::e2m1_pow2(k);
  const float mult = pow2f(k);
  const uint32_t x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (x0 >= 0x10000u) return;
  uint32_t x[8];
  unsigned long long n = 0;
  for (int i = 0; i < 8; ++i) {
    x[i] = x0 + i;
    const float v = fabsf(bits_float(x[i] << 16)) * mult;  // NaN and Inf fail both tests
    if (!(kFloor ? v < 8.0f : v <= 6.0f)) x[i] = 0;
    n += x[i] == x0 + i;
  }
  uint32_t mag[4], sign[4];
  for (int j = 0; j < 4; ++j) {
    sign[j] = x[2 * j] | x[2 * j + 1] << 16;
    mag[j] = kernels::e2m1x2_magnitude(sign[j] & kernels::kBf16x2Abs, s);
    if (kFloor) mag[j] = kernels::min_u16x2(mag[j], 0x00070007u);
  }
  const uint32_t packed = kernels::pack_e2m1x8(mag, sign);
  for (int i = 0; i < 8; ++i)
    if (((packed >> (4 * i)) & 0xF) != e2m1.encode(bits_float(x[i] << 16) * mult))
      record_mismatch(out, x[i] | uint32_t(k + 127) << 16);
  atomicAdd(&out->checked, n);
}

// NVFP4: every non-NaN float product v, rounded to odd bf16, clamped at 6, encoded with k = 0.
__global__ void compare_packed_round_to_odd(PackedCounts* out) {
  constexpr Element e2m1 = Element::minifloat(2, 1);
  unsigned long long n = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x * 8;
  for (uint64_t u = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 8; u < (uint64_t(1) << 32); u += stride) {
    uint32_t mag[4], sign[4];
    for (int j = 0; j < 4; ++j) {
      sign[j] = kernels::bf16x2_round_to_odd(bits_float(uint32_t(u) + 2 * j), bits_float(uint32_t(u) + 2 * j + 1));
      mag[j] = kernels::e2m1x2_magnitude(kernels::min_u16x2(sign[j] & kernels::kBf16x2Abs, kernels::kBf16x2Six),
                                         kernels::e2m1_pow2(0));
    }
    const uint32_t packed = kernels::pack_e2m1x8(mag, sign);
    for (int i = 0; i < 8; ++i) {
      const float v = bits_float(uint32_t(u) + i);
      if (v != v) continue;
      ++n;
      if (((packed >> (4 * i)) & 0xF) != e2m1.encode(v)) record_mismatch(out, uint32_t(u) + i);
    }
  }
  atomicAdd(&out->checked, n);
}

template <typename Launch>
void check_packed(const char* name, unsigned long long want_checked, Launch launch) {
  DeviceBuffer<PackedCounts> d(1);
  PackedCounts init{0, 0, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
  cudaMemcpy(d.data(), &init, sizeof init, cudaMemcpyHostToDevice);
  launch(d.data());
  CUDA_ASSERT(cudaGetLastError());
  CUDA_ASSERT(cudaDeviceSynchronize());
  const PackedCounts c = d.download()[0];
  std::printf("  %s: %llu codes compared, %llu mismatches\n", name, c.checked, c.mismatches);
  if (want_checked) EXPECT_GE(c.checked, want_checked) << name;
  EXPECT_EQ(c.mismatches, 0ull) << name << ": first mismatches 0x" << std::hex << c.first[0] << " 0x" << c.first[1]
                                << " 0x" << c.first[2] << " 0x" << c.first[3];
}

TEST(GpuCodecs, PackedE2M1OfBf16TimesPow2EqualsEncode) {
  const dim3 grid(0x10000 / 8 / 256, 124 + 126 + 1);
  check_packed("e2m1 packed, x * 2^k, |v| <= 6", 8000000ull,
               [&](PackedCounts* p) { compare_packed_mx<false><<<grid, 256>>>(p); });
  check_packed("e2m1 packed, x * 2^k, |v| < 8, clamped", 8000000ull,
               [&](PackedCounts* p) { compare_packed_mx<true><<<grid, 256>>>(p); });
}

TEST(GpuCodecs, PackedE2M1OfRoundToOddEqualsEncodeOnEveryFloat) {
  check_packed("e2m1 packed, round to odd", (1ull << 32) - (1ull << 24),
               [&](PackedCounts* p) { compare_packed_round_to_odd<<<132 * 16, 256>>>(p); });
}

TEST(GpuCodecs, CvtE4M3EqualsEncodeOnEveryFloat) { check<FastRoute::CvtE4M3>("e4m3 cvt"); }
TEST(GpuCodecs, CvtE5M2EqualsEncodeOnEveryFloat) { check<FastRoute::CvtE5M2>("e5m2 cvt"); }
TEST(GpuCodecs, FmaE2M1EqualsEncodeOnEveryFloat) { check<FastRoute::FmaE2M1>("e2m1 fma"); }

}  // namespace
}  // namespace mxattn::test
