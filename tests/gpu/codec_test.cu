// The fast element encoders of kernels/codecs.h against Element::encode on every input they take:
// every non-NaN float (fma_encode for every element, the conversion instructions), for the pair routes
// every bf16 and fp16 times every power of two they are used with and (NVFP4, UE4M3 custom formats) every
// float below the element's range rounded to odd; the NVFP4 block scale code (corrected-reciprocal divide
// by 6) on every float, and the UE4M3 block scale code of the other formats on every amax.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_test_util.h"
#include "mxattn/format/format.h"
#include "mxattn/kernels/codecs.h"

namespace mxattn::test {
namespace {

using kernels::FastRoute;

struct Counts {
  unsigned long long mismatches;
  unsigned long long nan_mismatches;
  uint32_t first[4];  // first mismatching inputs (bits), 0xffffffff unused
};

// R's element is E4M3 or E5M2 for the conversion instructions, `e` for fma_encode.
template <FastRoute R>
__global__ void compare_all_floats(Element e, Counts* out) {
  unsigned long long bad = 0, bad_nan = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t u = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < (uint64_t(1) << 32); u += stride) {
    const float v = bits_float(uint32_t(u));
    uint32_t fast;
    if constexpr (R == FastRoute::CvtE4M3) fast = ptx::cvt_rn_satfinite_e4m3x2_f32(0.0f, v) & 0xff;
    else if constexpr (R == FastRoute::CvtE5M2) fast = ptx::cvt_rn_satfinite_e5m2x2_f32(0.0f, v) & 0xff;
    else fast = kernels::fma_encode(v, e);
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
void check(const char* name, Element e) {
  DeviceBuffer<Counts> d(1);
  Counts init{0, 0, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
  cudaMemcpy(d.data(), &init, sizeof init, cudaMemcpyHostToDevice);
  compare_all_floats<R><<<132 * 16, 256>>>(e, d.data());
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

// MX: v = x * 2^k for every finite bf16 (or fp16) x and every E8M0 scale the kernels send this way (k in
// [-126, minifloat_x2_max_k], fp16 [-24, minifloat_x2_f16_max_k]) with |v| <= the largest value (RCEIL) or
// |v| < 2^(emax + 1) (FLOOR, codes clamped at the largest). Underflow included: for large -k most products
// fall below the smallest quantum, and subnormal x are among the inputs. A thread encodes the eight
// elements x0 + i (or +0 where |v| is out of range) as four x2 words, so both lanes are used. E2M1 also goes
// through pack_e2m1x8.
template <typename Codec, bool kFloor, bool kF16>
__global__ void compare_packed_mx(PackedCounts* out) {
  constexpr Element e = Codec::elem();
  const int k = (kF16 ? kernels::minifloat_x2_f16_max_k(e) : kernels::minifloat_x2_max_k(e)) - int(blockIdx.y);
  using Lanes = std::conditional_t<kF16, kernels::F16Lanes, kernels::Bf16Lanes>;
  const kernels::Pow2x2 s = kernels::pow2_x2<e.man_bits, Lanes>(k);
  const float mult = pow2f(k), limit = pow2f(e.emax() + 1);
  const uint32_t x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  if (x0 >= 0x10000u) return;
  auto value = [](uint32_t bits) { return kF16 ? __half2float(__ushort_as_half(uint16_t(bits))) : bits_float(bits << 16); };
  uint32_t x[8];
  unsigned long long n = 0;
  for (int i = 0; i < 8; ++i) {
    x[i] = x0 + i;
    const float v = fabsf(value(x[i])) * mult;  // NaN and Inf fail both tests
    if (!(kFloor ? v < limit : v <= e.max_value())) x[i] = 0;
    n += x[i] == x0 + i;
  }
  uint32_t mag[4], sign[4];
  for (int j = 0; j < 4; ++j) {
    sign[j] = x[2 * j] | x[2 * j + 1] << 16;
    mag[j] = kernels::minifloat_x2_magnitude<e.man_bits, 1 - e.bias(), Lanes>(sign[j] & kernels::kBf16x2Abs, s);
    if (kFloor) mag[j] = kernels::min_u16x2(mag[j], e.max_code() * 0x10001u);
  }
  const uint32_t packed = e.bits == 4 ? kernels::pack_e2m1x8(mag, sign) : 0u;
  for (int i = 0; i < 8; ++i) {
    const uint32_t want = e.encode(value(x[i]) * mult);
    const uint32_t lane = (mag[i / 2] >> (16 * (i % 2))) & 0xffffu;
    const uint32_t code = lane | ((x[i] >> 15) << (e.bits - 1));
    const bool packed_ok = e.bits != 4 || ((packed >> (4 * i)) & 0xF) == want;
    if (code != want || !packed_ok) record_mismatch(out, x[i] | uint32_t(k + 127) << 16);
  }
  atomicAdd(&out->checked, n);
}

// NVFP4 pair route (the rows kernel): the magnitudes |v| rounded to odd bf16 and encoded
// with no clamp (the kernel sends only blocks whose products are below 7), signs from v's sign bits:
// every non-NaN float with |v| < 7. A thread encodes eight consecutive floats (out-of-range ones as +0).
__global__ void compare_packed_round_to_odd_unclamped(PackedCounts* out) {
  constexpr Element e2m1 = Element::minifloat(2, 1);
  unsigned long long n = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x * 8;
  for (uint64_t u = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 8; u < (uint64_t(1) << 32); u += stride) {
    uint32_t mag[4], sign[4];
    for (int j = 0; j < 4; ++j) {
      const uint32_t b0 = uint32_t(u) + 2 * j, b1 = b0 + 1;
      const float a0 = fabsf(bits_float(b0)), a1 = fabsf(bits_float(b1));
      mag[j] = kernels::e2m1x2_magnitude_unit(kernels::bf16x2_round_to_odd(a0 < 7.0f ? a0 : 0.0f, a1 < 7.0f ? a1 : 0.0f));
      sign[j] = (b0 >> 16) | (b1 & 0xffff0000u);
    }
    const uint32_t packed = kernels::pack_e2m1x8(mag, sign);
    for (int i = 0; i < 8; ++i) {
      const float v = bits_float(uint32_t(u) + i);
      if (!(fabsf(v) < 7.0f)) continue;
      ++n;
      if (((packed >> (4 * i)) & 0xF) != e2m1.encode(v)) record_mismatch(out, uint32_t(u) + i);
    }
  }
  atomicAdd(&out->checked, n);
}

// The UE4M3 pair route of the custom formats' 6-bit elements (encode_pairs_scaled; E2M1 takes NVFP4's route,
// tested below): the magnitudes |v| rounded to odd bf16,
// minifloat_x2_magnitude at k = 0 and the clamp at max_code, the sign from v: every float with |v| below
// 2^(emax + 1), two a step (both lanes used).
template <typename Codec>
__global__ void compare_packed_round_to_odd(PackedCounts* out) {
  constexpr Element e = Codec::elem();
  const float limit = pow2f(e.emax() + 1);
  const kernels::Pow2x2 one = kernels::pow2_x2<e.man_bits>(0);
  unsigned long long n = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x * 2;
  for (uint64_t u = (uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 2; u < (uint64_t(1) << 32); u += stride) {
    float a[2];
    bool in[2];
    for (int i = 0; i < 2; ++i) {
      a[i] = fabsf(bits_float(uint32_t(u) + i));
      in[i] = a[i] < limit;
    }
    const uint32_t rto = kernels::bf16x2_round_to_odd(in[0] ? a[0] : 0.0f, in[1] ? a[1] : 0.0f);
    const uint32_t mag = kernels::min_u16x2(kernels::minifloat_x2_magnitude<e.man_bits, 1 - e.bias()>(rto, one),
                                            e.max_code() * 0x10001u);
    for (int i = 0; i < 2; ++i) {
      if (!in[i]) continue;
      ++n;
      const uint32_t bits = uint32_t(u) + i;
      const uint32_t code = ((mag >> (16 * i)) & 0xffffu) | ((bits >> 31) << (e.bits - 1));
      if (code != e.encode(bits_float(bits))) record_mismatch(out, bits);
    }
  }
  atomicAdd(&out->checked, n);
}

// The NVFP4 block scale code of y = amax * S_enc: nvfp4_scale_code(y) (corrected-reciprocal divide,
// clamp, cvt) against Element::encode of the IEEE quotient y / 6 on every float, NaN included; and,
// `quotients`, div6_rn against the IEEE quotient bit for bit on every finite |y| >= 2^-125.
__global__ void compare_nvfp4_scale_code(PackedCounts* codes, PackedCounts* quotients) {
  constexpr Element e4m3 = Element::minifloat(4, 3, Specials::NanOnly);
  unsigned long long n = 0, nq = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t u = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < (uint64_t(1) << 32); u += stride) {
    const float y = bits_float(uint32_t(u));
    const float ieee = __fdiv_rn(y, 6.0f);
    ++n;
    if (kernels::nvfp4_scale_code(y) != e4m3.encode(ieee)) record_mismatch(codes, uint32_t(u));
    const float ay = fabsf(y);
    if (ay >= 0x1p-125f && ay <= 0x1.fffffep127f) {
      ++nq;
      if (float_bits(kernels::div6_rn(y)) != float_bits(ieee)) record_mismatch(quotients, uint32_t(u));
    }
  }
  atomicAdd(&codes->checked, n);
  atomicAdd(&quotients->checked, nq);
}

// The UE4M3 block scale code of every other format (custom elements, any rule): ue4m3_block_code against
// choose_block_scale on every non-negative finite amax.
__global__ void compare_ue4m3_block_code(Element e, ScaleRule rule, float s_enc, PackedCounts* out) {
  const float factor = kernels::ue4m3_factor(e, rule), elem_max = e.max_value();
  unsigned long long n = 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t u = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; u < 0x7f800000u; u += stride) {
    const float amax = bits_float(uint32_t(u));
    ++n;
    const uint32_t want = choose_block_scale(amax, false, e, ScaleType::UE4M3, rule, s_enc).code;
    if (kernels::ue4m3_block_code(rule, amax, s_enc, factor, elem_max) != want) record_mismatch(out, uint32_t(u));
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

template <typename Codec>
void check_packed_mx(const char* name) {
  // k from minifloat_x2_max_k down to -126. About half of the 2^16 x ~250 (x, k) pairs are in range (8.4 M
  // for E2M1): at least 4 M codes must have been compared.
  const dim3 grid(0x10000 / 8 / 256, kernels::minifloat_x2_max_k(Codec::elem()) + 126 + 1);
  check_packed((std::string(name) + " packed, x * 2^k, |v| <= max").c_str(), 4000000ull,
               [&](PackedCounts* p) { compare_packed_mx<Codec, false, false><<<grid, 256>>>(p); });
  check_packed((std::string(name) + " packed, x * 2^k, |v| < 2^(emax+1), clamped").c_str(), 4000000ull,
               [&](PackedCounts* p) { compare_packed_mx<Codec, true, false><<<grid, 256>>>(p); });
  // fp16: k from minifloat_x2_f16_max_k down to -24 (38-40 scales; about 2^15 finite |x| each, fewer in range
  // for large k): at least 0.5 M codes.
  const dim3 grid16(0x10000 / 8 / 256, kernels::minifloat_x2_f16_max_k(Codec::elem()) - kernels::kMinifloatX2F16MinK + 1);
  check_packed((std::string(name) + " packed, fp16 x * 2^k, |v| <= max").c_str(), 500000ull,
               [&](PackedCounts* p) { compare_packed_mx<Codec, false, true><<<grid16, 256>>>(p); });
  check_packed((std::string(name) + " packed, fp16 x * 2^k, |v| < 2^(emax+1), clamped").c_str(), 500000ull,
               [&](PackedCounts* p) { compare_packed_mx<Codec, true, true><<<grid16, 256>>>(p); });
}

TEST(GpuCodecs, PackedMinifloatOfBf16OrFp16TimesPow2EqualsEncode) {
  check_packed_mx<kernels::CodecE2M1>("e2m1");
  check_packed_mx<kernels::CodecE2M3>("e2m3");
  check_packed_mx<kernels::CodecE3M2>("e3m2");
}

// The custom minifloats' pair route (CodecRuntime, quantize.cu encode_pairs_runtime): the same products x * 2^k
// as compare_packed_mx, the constants read from the codec, 16 consecutive x a thread through pack_lane_pairs<N>,
// every code compared with Element::encode in the packed stream.
template <int N, bool kFloor, bool kF16>
__global__ void compare_packed_runtime(kernels::CodecRuntime codec, PackedCounts* out) {
  const Element e = codec.e;
  const int k = (kF16 ? codec.f16_max_k : codec.max_k) - int(blockIdx.y);
  using Lanes = std::conditional_t<kF16, kernels::F16Lanes, kernels::Bf16Lanes>;
  const kernels::Pow2x2 s = kernels::pow2_x2_of<Lanes>(e.man_bits, k);
  const float mult = pow2f(k), limit = pow2f(e.emax() + 1);
  const uint32_t x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 16;
  if (x0 >= 0x10000u) return;
  auto value = [](uint32_t bits) { return kF16 ? __half2float(__ushort_as_half(uint16_t(bits))) : bits_float(bits << 16); };
  uint32_t x[16];
  unsigned long long n = 0;
  for (int i = 0; i < 16; ++i) {
    x[i] = x0 + i;
    const float v = fabsf(value(x[i])) * mult;  // NaN and Inf fail both tests
    if (!(kFloor ? v < limit : v <= e.max_value())) x[i] = 0;
    n += x[i] == x0 + i;
  }
  uint32_t mag[8], w[8], packed[4];
  for (int j = 0; j < 8; ++j) {
    w[j] = x[2 * j] | x[2 * j + 1] << 16;
    mag[j] = kernels::min_u16x2(
        kernels::minifloat_x2_magnitude<Lanes>(w[j] & kernels::kBf16x2Abs, s, kF16 ? codec.f16x2 : codec.bf16x2),
        codec.max_code2);
  }
  kernels::pack_lane_pairs<N>(mag, w, packed);
  for (int i = 0; i < 16; ++i) {
    const int bit = N * i;
    uint32_t code = packed[bit / 32] >> (bit % 32);
    if (bit % 32 + N > 32) code |= packed[bit / 32 + 1] << (32 - bit % 32);
    if ((code & ((1u << N) - 1)) != e.encode(value(x[i]) * mult)) record_mismatch(out, x[i] | uint32_t(k + 127) << 16);
  }
  atomicAdd(&out->checked, n);
}

template <int N>
void check_packed_runtime(const char* name) {
  std::string why;
  const auto f = parse_format(std::string(name) + "/k32/ue8m0", &why);
  ASSERT_TRUE(f.has_value()) << why;
  const kernels::CodecRuntime codec{f->elem};
  ASSERT_TRUE(codec.pairs) << name;
  ASSERT_EQ(int(f->elem.bits), N) << name;
  // As check_packed_mx: k from the largest the route takes down to -126 (bf16) or -24 (fp16); at least a
  // million codes each way (about half of the 2^16 x ~250 bf16 pairs are in range).
  const dim3 grid(0x10000 / 16 / 256, codec.max_k + 126 + 1), grid16(0x10000 / 16 / 256, codec.f16_max_k + 24 + 1);
  const std::string n = std::string(name) + " packed (run-time element)";
  check_packed((n + ", x * 2^k, |v| <= max").c_str(), 1000000ull,
               [&](PackedCounts* p) { compare_packed_runtime<N, false, false><<<grid, 256>>>(codec, p); });
  check_packed((n + ", x * 2^k, |v| < 2^(emax+1), clamped").c_str(), 1000000ull,
               [&](PackedCounts* p) { compare_packed_runtime<N, true, false><<<grid, 256>>>(codec, p); });
  // FP16 inputs take the route only where its magic is an fp16 (CodecRuntime::pairs_f16: e1m2, e2m2, e3m3; not
  // e4m2, whose FP16 blocks take the float route: GpuQuantize's e4m2/k64/ue8m0 cases).
  if (codec.pairs_f16)
    check_packed((n + ", fp16 x * 2^k, |v| < 2^(emax+1), clamped").c_str(), 100000ull,
                 [&](PackedCounts* p) { compare_packed_runtime<N, true, true><<<grid16, 256>>>(codec, p); });
}

TEST(GpuCodecs, PackedCustomMinifloatOfBf16OrFp16TimesPow2EqualsEncode) {
  // Every width the route's switch takes, one to three exponent widths each.
  check_packed_runtime<3>("e1m1");
  check_packed_runtime<4>("e1m2");
  check_packed_runtime<5>("e2m2");
  check_packed_runtime<5>("e3m1");
  check_packed_runtime<6>("e4m1");
  check_packed_runtime<6>("e1m4");
  check_packed_runtime<7>("e3m3");
  check_packed_runtime<7>("e4m2");
  check_packed_runtime<7>("e5m1");
  check_packed_runtime<8>("e3m4");
  check_packed_runtime<8>("e6m1");
}

TEST(GpuCodecs, PackedE2M1OfRoundToOddUnclampedEqualsEncodeBelow7) {
  // 2 * 0x40e00000 floats have |v| < 7.
  check_packed("e2m1 packed, |v| rounded to odd, no clamp, |v| < 7", 2ull * 0x40e00000u,
               [&](PackedCounts* p) { compare_packed_round_to_odd_unclamped<<<132 * 16, 256>>>(p); });
}

template <typename Codec>
void check_packed_round_to_odd(const char* name) {
  // 2 x (the floats below 2^(emax + 1)) of either sign.
  const unsigned long long want = 2ull * float_bits(pow2f(Codec::elem().emax() + 1));
  check_packed((std::string(name) + " packed, |v| rounded to odd, clamped, |v| < 2^(emax+1)").c_str(), want,
               [&](PackedCounts* p) { compare_packed_round_to_odd<Codec><<<132 * 16, 256>>>(p); });
}

TEST(GpuCodecs, PackedMinifloatOfRoundToOddEqualsEncode) {
  check_packed_round_to_odd<kernels::CodecE2M3>("e2m3");
  check_packed_round_to_odd<kernels::CodecE3M2>("e3m2");
}

TEST(GpuCodecs, Nvfp4ScaleCodeEqualsEncodeOfIeeeQuotientOnEveryFloat) {
  DeviceBuffer<PackedCounts> d(2);
  const PackedCounts init{0, 0, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
  const PackedCounts both[2] = {init, init};
  cudaMemcpy(d.data(), both, sizeof both, cudaMemcpyHostToDevice);
  compare_nvfp4_scale_code<<<132 * 16, 256>>>(d.data(), d.data() + 1);
  CUDA_ASSERT(cudaGetLastError());
  CUDA_ASSERT(cudaDeviceSynchronize());
  const auto c = d.download();
  std::printf("  nvfp4 scale code: %llu inputs, %llu mismatches; div6_rn: %llu quotients, %llu mismatches\n",
              c[0].checked, c[0].mismatches, c[1].checked, c[1].mismatches);
  EXPECT_EQ(c[0].checked, 1ull << 32);
  EXPECT_EQ(c[0].mismatches, 0ull) << "first mismatching y 0x" << std::hex << c[0].first[0] << " 0x" << c[0].first[1];
  // Finite floats of magnitude 2^-125 and above: 2 * (0x7f800000 - 0x01000000).
  EXPECT_EQ(c[1].checked, 2ull * (0x7f800000u - 0x01000000u));
  EXPECT_EQ(c[1].mismatches, 0ull) << "first mismatching y 0x" << std::hex << c[1].first[0] << " 0x" << c[1].first[1];
}

// Every element parse_element accepts under RCEIL and FLOOR, and the NVFP4 rule (as a custom format's
// /ts) on a few elements and tensor scales, NaN's among them.
TEST(GpuCodecs, Ue4m3BlockCodeEqualsChooseBlockScaleOnEveryAmax) {
  struct Case {
    Element e;
    ScaleRule rule;
    float s_enc;
  };
  std::vector<Case> cases;
  for (int e = 1; e <= 7; ++e)
    for (int m = 0; 1 + e + m <= 8; ++m)
      for (ScaleRule r : {ScaleRule::Rceil, ScaleRule::Floor})
        cases.push_back({*parse_element("e" + std::to_string(e) + "m" + std::to_string(m)), r, 1.0f});
  for (int n = 2; n <= 8; ++n)
    for (ScaleRule r : {ScaleRule::Rceil, ScaleRule::Floor}) cases.push_back({Element::integer(n), r, 1.0f});
  for (const Element& e : {kE2M3, kE3M2, kE4M3, Element::integer(4)})
    for (float s_enc : {1.0f, 448.0f * e.max_value() / 3.7f, 0x1p-100f, 0x1p100f, quiet_nan()})
      cases.push_back({e, ScaleRule::Nvfp4, s_enc});
  for (const Case& c : cases) {
    const std::string name = element_name(c.e) + " " + scale_rule_name(c.rule) + " S_enc " + std::to_string(c.s_enc);
    check_packed(name.c_str(), 0x7f800000ull,
                 [&](PackedCounts* p) { compare_ue4m3_block_code<<<132 * 16, 256>>>(c.e, c.rule, c.s_enc, p); });
  }
}

TEST(GpuCodecs, CvtE4M3EqualsEncodeOnEveryFloat) { check<FastRoute::CvtE4M3>("e4m3 cvt", kE4M3); }
TEST(GpuCodecs, CvtE5M2EqualsEncodeOnEveryFloat) { check<FastRoute::CvtE5M2>("e5m2 cvt", kE5M2); }

// fma_encode for every element parse_element accepts: EeMm with e >= 1 and at most 8 bits (E4M3 and E5M2
// with their special codes), and INTn for n = 2..8.
TEST(GpuCodecs, FmaEncodeEqualsEncodeOnEveryFloatForEveryElement) {
  std::vector<Element> elements;
  for (int e = 1; e <= 7; ++e)
    for (int m = 0; 1 + e + m <= 8; ++m) elements.push_back(*parse_element("e" + std::to_string(e) + "m" + std::to_string(m)));
  for (int n = 2; n <= 8; ++n) elements.push_back(Element::integer(n));
  for (const Element& e : elements) check<FastRoute::Fma>((element_name(e) + " fma").c_str(), e);
}

}  // namespace
}  // namespace mxattn::test
