// The Hopper prefill's fold (kernels/attention/hopper/fold.h) chunk by chunk against the rule it implements: every
// element becomes the E4M3 code of value x M x 2^shift, rounded to nearest even and saturating (M the block scale's
// significand, 1 for E8M0). Each code kind the fold dispatches to (with_codes: E4M3, E2M1 and NVFP4 by their own
// paths, the rest through the FP16 table) is checked for every code, every shift from well below E4M3's range up to
// the format's headroom, and for UE4M3 scales every scale byte. The products are exact in FP32, so the host's
// encode is the reference; NaN codes must stay NaN (their sign is not kept). E5M2's Inf codes are left out: no
// E4M3 value is right for them (the fold gives +-448 where 2^shift is an FP16 value, NaN from 0 x Inf below 2^-24,
// 25 binades under the row's largest block), and mxattn's quantizers never write one (an Inf in a block makes its
// scale NaN, DESIGN.md §2).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu_test_util.h"
#include "mxattn/format/format.h"
#include "mxattn/format/scale.h"
#include "mxattn/kernels/attention/hopper/fold.h"

namespace mxattn::test {
namespace {

using namespace kernels::hopper;

// Case c: 16 codes in words[4c..4c+3] (the bit stream load_codes16 leaves), a scale byte and a shift -> 16 E4M3
// codes in out[4c..4c+3].
__global__ void fold_chunks(Format f, const uint32_t* words, const uint8_t* scale_bytes, const int* shifts, int cases,
                            uint32_t* out) {
  __shared__ uint16_t value[256];
  __shared__ uint2 e2m1[kE2M1MaxShift - kE2M1MinShift + 1];
  build_value_table(value, f, threadIdx.x, blockDim.x);
  build_e2m1_table(e2m1, threadIdx.x, blockDim.x);
  __syncthreads();
  const FoldTables tables{value, e2m1};
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cases; c += gridDim.x * blockDim.x) {
    const uint32_t w[4] = {words[4 * c], words[4 * c + 1], words[4 * c + 2], words[4 * c + 3]};
    with_codes(f, [&](auto codes) {
      const BlockScaleParts sc = block_scale_parts<decltype(codes)>(scale_bytes[c]);
      const uint4 o = fold16(codes, w, shifts[c], sc.m, tables);
      out[4 * c] = o.x, out[4 * c + 1] = o.y, out[4 * c + 2] = o.z, out[4 * c + 3] = o.w;
    });
  }
}

struct Cases {
  std::vector<uint32_t> words;
  std::vector<uint8_t> scales;
  std::vector<int> shifts;
  std::vector<uint32_t> codes;  // the 16 codes of each case, for the reference
};

// Every code of the format in chunks of 16 (the bit stream of code_at: code i at bit i x bits), for every scale
// byte (UE4M3: all but NaN; E8M0: 1.0, whose exponent the shift replaces) and every shift.
Cases all_cases(const Format& f) {
  Cases cs;
  const int bits = f.elem.bits, n = 1 << bits;
  std::vector<int> scale_bytes;
  if (f.scale == ScaleType::UE4M3) {
    for (int b = 0; b < 0x7F; ++b) scale_bytes.push_back(b);
  } else {
    scale_bytes.push_back(127);
  }
  for (int sb : scale_bytes)
    for (int shift = -30; shift <= fold_headroom(f); ++shift)
      for (int first = 0; first < n; first += 16) {
        uint32_t w[4] = {0, 0, 0, 0};
        for (int i = 0; i < 16; ++i) {
          const uint32_t code = uint32_t(first + i) % uint32_t(n);
          const int bit = i * bits;
          w[bit / 32] |= code << (bit % 32);
          if (bit % 32 + bits > 32) w[bit / 32 + 1] |= code >> (32 - bit % 32);
          cs.codes.push_back(code);
        }
        cs.words.insert(cs.words.end(), w, w + 4);
        cs.scales.push_back(uint8_t(sb));
        cs.shifts.push_back(shift);
      }
  return cs;
}

// value x M x 2^shift as E4M3: M is the scale over its power of two (UE4M3), 1 for E8M0; a zero scale zeroes.
// 2^shift is an FP16 value, 0 below 2^-24 (fold.h pow2_f16x2): that reaches the result only for E5M2, whose
// largest elements times 2^-25 (a block 18 binades under its row's largest) round to E4M3's smallest subnormal.
uint32_t expected_code(const Format& f, uint32_t code, uint32_t scale_byte, int shift) {
  double m = 1.0;
  if (f.scale == ScaleType::UE4M3) {
    const float s = decode_ue4m3(scale_byte);
    m = s > 0 ? std::ldexp(double(s), -floor_log2(s)) : 0.0;
  }
  const double pow2 = shift >= -24 ? std::ldexp(1.0, shift) : 0.0;
  return e4m3().encode(float(double(f.elem.decode(code)) * m * pow2));
}

bool same_e4m3(uint32_t got, uint32_t want) { return got == want || ((got & 0x7F) == 0x7F && (want & 0x7F) == 0x7F); }

void check_format(const char* name) {
  const Format f = *parse_format(name);
  const Cases cs = all_cases(f);
  const int cases = int(cs.shifts.size());
  DeviceBuffer<uint32_t> d_words(cs.words), d_out(size_t(cases) * 4);
  DeviceBuffer<uint8_t> d_scales(cs.scales);
  DeviceBuffer<int> d_shifts(cs.shifts);
  ASSERT_TRUE(d_out.fill_bytes(kPoison));
  fold_chunks<<<32, 256>>>(f, d_words.data(), d_scales.data(), d_shifts.data(), cases, d_out.data());
  CUDA_ASSERT(cudaGetLastError());
  CUDA_ASSERT(cudaDeviceSynchronize());
  const std::vector<uint32_t> out = d_out.download();
  int bad = 0;
  for (int c = 0; c < cases; ++c)
    for (int i = 0; i < 16; ++i) {
      const uint32_t code = cs.codes[size_t(c) * 16 + i], got = (out[size_t(c) * 4 + i / 4] >> (8 * (i % 4))) & 0xFF;
      if (std::isinf(f.elem.decode(code))) continue;
      const uint32_t want = expected_code(f, code, cs.scales[c], cs.shifts[c]);
      if (!same_e4m3(got, want) && ++bad <= 4)
        ADD_FAILURE() << name << ": code " << code << " scale byte " << int(cs.scales[c]) << " shift " << cs.shifts[c]
                      << ": got 0x" << std::hex << got << ", want 0x" << want;
    }
  EXPECT_EQ(bad, 0) << name << ": " << cases << " chunks";
}

bool sm89_gpu() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major * 10 + minor >= 89;
}

TEST(Fold, EveryCodeKindAgainstTheRoundingRule) {
  if (!sm89_gpu()) GTEST_SKIP() << "needs an sm_89+ GPU (E4M3 cvt)";
  for (const char* f : {"mxfp8", "mxfp4", "nvfp4", "mxfp6_e2m3", "mxfp6_e3m2", "e2m3/k16/ue4m3/ts", "mxfp8_e5m2"})
    check_format(f);
}

}  // namespace
}  // namespace mxattn::test
