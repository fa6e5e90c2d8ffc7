// The decode kernel's E2M1 register decoders (kernels/attention/decode_codec.h) against the format's
// own decode, for every code in every nibble position:
//   FP16 route (E2M1 with UE4M3 scales, K and V): each pair holds value * 2^-6 * scale exactly, for every
//     scale byte (NaN kept, bit 7 ignored);
//   BF16 route (any scale, K and V): each BF16 pair holds element value x block scale rounded to BF16 (exact
//     for E2M1 x E8M0 and E2M1 x UE4M3, DESIGN.md §3), for every scale byte, NaN, 2^-127 and the largest
//     scales included. These go through BF16 subnormals (codes 0 and +-0.5 are read as value x 2^-126), so
//     this also checks that the BF16 multiplies keep them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "mxattn/format/format.h"
#include "mxattn/kernels/attention/decode_codec.h"

namespace mxattn::test {
namespace {

using kernels::Codec;

// K: one key, N channels (N/8 code words, one scale byte per block of the range) -> N/2 pairs.
template <int Block, int N>
__global__ void decode_k_cases(Format f, const uint32_t* raw, const uint32_t* scales, int cases, uint32_t* out) {
  __shared__ kernels::ElementTable tab;
  kernels::build_element_table(tab, f, threadIdx.x, blockDim.x);
  __syncthreads();
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cases; c += gridDim.x * blockDim.x) {
    uint32_t r[N / 8], o[N / 2];
    for (int w = 0; w < N / 8; ++w) r[w] = raw[c * (N / 8) + w];
    kernels::decode_k<Codec::E2M1, 4, Block, N>(r, scales[c], tab, o);
    for (int p = 0; p < N / 2; ++p) out[c * (N / 2) + p] = o[p];
  }
}

// K with UE4M3 scales, FP16 route: a code word and a scale byte per case -> four pairs.
__global__ void decode_k_f16_cases(const uint32_t* raw, const uint32_t* bytes, int cases, uint32_t* out) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cases; c += gridDim.x * blockDim.x) {
    uint32_t o[4];
    kernels::e2m1x8_to_f16_scaled(raw[c], kernels::ue4m3_f16x2_factor(bytes[c]), o);
    for (int p = 0; p < 4; ++p) out[c * 4 + p] = o[p];
  }
}

// V: two keys, N channels each -> N pairs (key 0, key 1): the BF16 route or, with f16 (UE4M3 scales), the FP16 one.
template <int Block, int N>
__global__ void decode_v_cases(Format f, bool f16, const uint32_t* raw, const uint32_t* scales, int cases, uint32_t* out) {
  __shared__ kernels::ElementTable tab;
  kernels::build_element_table(tab, f, threadIdx.x, blockDim.x);
  __syncthreads();
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cases; c += gridDim.x * blockDim.x) {
    uint32_t r0[N / 8], r1[N / 8], o[N];
    for (int w = 0; w < N / 8; ++w) r0[w] = raw[c * (N / 4) + w], r1[w] = raw[c * (N / 4) + N / 8 + w];
    if (f16)
      kernels::decode_v_pair_e2m1_f16<Block, N>(r0, scales[2 * c], r1, scales[2 * c + 1], o);
    else
      kernels::decode_v_pair<Codec::E2M1, 4, Block, N>(r0, scales[2 * c], r1, scales[2 * c + 1], tab, o);
    for (int i = 0; i < N; ++i) out[c * N + i] = o[i];
  }
}

// Raw words: first every code in every nibble (case k: all nibbles k), then random words.
std::vector<uint32_t> code_words(int cases, int words, std::mt19937& rng) {
  std::vector<uint32_t> raw(size_t(cases) * words);
  for (int c = 0; c < cases; ++c)
    for (int w = 0; w < words; ++w) raw[size_t(c) * words + w] = c < 16 ? 0x11111111u * uint32_t(c) : uint32_t(rng());
  return raw;
}

// Scale words: byte b is the scale of the range's block b. The first 256 cases put each byte value in
// every position, the rest are random.
std::vector<uint32_t> scale_words(int cases, std::mt19937& rng) {
  std::vector<uint32_t> s(cases);
  for (int c = 0; c < cases; ++c) s[c] = c < 256 ? 0x01010101u * uint32_t(c) : uint32_t(rng());
  return s;
}

uint16_t expected_bf16(const Format& f, uint32_t code, uint32_t scale_byte) {
  return uint16_t(to_dtype_bits(f.elem.decode(code) * decode_scale(f.scale, scale_byte), DType::BF16));
}

// Equal bits, or both NaN.
bool same_bf16(uint16_t got, uint16_t want) {
  auto nan = [](uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0; };
  return got == want || (nan(got) && nan(want));
}

// Code of channel ch in a run of code words, and the scale byte of ch in a lane's scale word (one byte
// per block the lane's N channels touch).
uint32_t code_at(const uint32_t* words, int ch) { return (words[ch / 8] >> (4 * (ch % 8))) & 0xF; }
template <int Block, int N>
uint32_t scale_at(uint32_t scales, int ch) {
  return (scales >> (8 * (N >= Block ? ch / Block : 0))) & 0xFF;
}

// Runs launch(out) on `outputs` poisoned words and returns them.
template <class Launch>
std::vector<uint32_t> run_poisoned(size_t outputs, Launch launch) {
  DeviceBuffer<uint32_t> d_out(outputs);
  EXPECT_TRUE(d_out.fill_bytes(kPoison));
  launch(d_out.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return d_out.download();
}

// Counts mismatches; the first four are reported with what `where` prints.
struct Mismatches {
  int count = 0;
  template <class Where>
  void check(uint16_t got, uint16_t want, Where where) {
    if (same_bf16(got, want) || ++count > 4) return;
    ::testing::Message m;
    where(m);
    ADD_FAILURE() << m << ": got 0x" << std::hex << got << ", want 0x" << want;
  }
};

constexpr int kCases = 4096;

// Equal values (+0 and -0 alike), or both NaN.
bool same_f16(uint16_t got, float want) {
  const float g = from_dtype_bits(got, DType::F16);
  return g == want || (std::isnan(g) && std::isnan(want));
}

template <int Block, int N>
void check_k(const char* format) {
  const Format f = *parse_format(format);
  ASSERT_EQ(f.block, Block);
  std::mt19937 rng(11 + N);
  const auto raw = code_words(kCases, N / 8, rng);
  const auto scales = scale_words(kCases, rng);
  DeviceBuffer<uint32_t> d_raw(raw), d_scales(scales);
  const auto out = run_poisoned(size_t(kCases) * (N / 2), [&](uint32_t* o) {
    decode_k_cases<Block, N><<<16, 256>>>(f, d_raw.data(), d_scales.data(), kCases, o);
  });
  Mismatches bad;
  for (int c = 0; c < kCases; ++c)
    for (int p = 0; p < N / 2; ++p)
      for (int h = 0; h < 2; ++h) {
        // Pair p = 4w + j holds channels 8w + j and 8w + j + 4 (the pairing Q's words follow).
        const int ch = 8 * (p / 4) + p % 4 + 4 * h;
        const uint32_t code = code_at(&raw[size_t(c) * (N / 8)], ch), sb = scale_at<Block, N>(scales[c], ch);
        bad.check(uint16_t(out[size_t(c) * (N / 2) + p] >> (16 * h)), expected_bf16(f, code, sb), [&](auto& m) {
          m << format << " K N=" << N << " case " << c << " channel " << ch << " code " << code << " scale " << sb;
        });
      }
  EXPECT_EQ(bad.count, 0);
}

// The FP16 route of UE4M3 scales: every code in every nibble against every scale byte (bit 7 ignored).
void check_k_f16() {
  const Format f = *parse_format("nvfp4");
  std::mt19937 rng(13);
  const auto raw = code_words(kCases, 1, rng);
  std::vector<uint32_t> bytes(kCases);
  for (int c = 0; c < kCases; ++c) bytes[c] = c % 256;
  DeviceBuffer<uint32_t> d_raw(raw), d_bytes(bytes);
  const auto out = run_poisoned(size_t(kCases) * 4, [&](uint32_t* o) {
    decode_k_f16_cases<<<16, 256>>>(d_raw.data(), d_bytes.data(), kCases, o);
  });
  int bad = 0;
  for (int c = 0; c < kCases; ++c)
    for (int p = 0; p < 4; ++p)
      for (int h = 0; h < 2; ++h) {
        const int ch = kernels::kE2m1F16Lo[p] + 2 * h;
        const uint32_t code = code_at(&raw[c], ch);
        const uint16_t got = uint16_t(out[size_t(c) * 4 + p] >> (16 * h));
        const float want = float(f.elem.decode(code) * double(decode_ue4m3(bytes[c])) / 64.0);
        if (!same_f16(got, want) && bad++ < 4)
          ADD_FAILURE() << "K FP16 route case " << c << " channel " << ch << " code " << code << " scale " << bytes[c]
                        << ": got 0x" << std::hex << got << ", want " << want;
      }
  EXPECT_EQ(bad, 0);
}

// The BF16 route, and for UE4M3 scales the FP16 one: every scale byte value in every position, then random bytes.
template <int Block, int N>
void check_v(const char* format) {
  const Format f = *parse_format(format);
  ASSERT_EQ(f.block, Block);
  std::mt19937 rng(23 + N);
  const auto raw = code_words(kCases, N / 4, rng);  // key 0's N/8 words, then key 1's
  const auto scales = scale_words(2 * kCases, rng);
  DeviceBuffer<uint32_t> d_raw(raw), d_scales(scales);
  for (bool f16 : f.scale == ScaleType::UE4M3 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    const auto out = run_poisoned(size_t(kCases) * N, [&](uint32_t* o) {
      decode_v_cases<Block, N><<<16, 256>>>(f, f16, d_raw.data(), d_scales.data(), kCases, o);
    });
    Mismatches bad;
    int f16_bad = 0;
    for (int c = 0; c < kCases; ++c)
      for (int i = 0; i < N; ++i)
        for (int key = 0; key < 2; ++key) {
          const uint32_t code = code_at(&raw[size_t(c) * (N / 4) + key * (N / 8)], i);
          const uint32_t sb = scale_at<Block, N>(scales[2 * c + key], i);
          const uint16_t got = uint16_t(out[size_t(c) * N + i] >> (16 * key));
          if (!f16) {
            bad.check(got, expected_bf16(f, code, sb), [&](auto& m) {
              m << format << " V N=" << N << " case " << c << " channel " << i << " key " << key << " code " << code
                << " scale " << sb;
            });
            continue;
          }
          const float want = float(f.elem.decode(code) * double(decode_ue4m3(sb)) / 64.0);
          if (!same_f16(got, want) && f16_bad++ < 4)
            ADD_FAILURE() << format << " V FP16 route N=" << N << " case " << c << " channel " << i << " key " << key
                          << " code " << code << " scale " << sb << ": got 0x" << std::hex << got << ", want " << want;
        }
    EXPECT_EQ(bad.count, 0);
    EXPECT_EQ(f16_bad, 0);
  }
}

// N: the channels a lane decodes per key, K (D/4) and V (D/8), for head dims 64, 128 and 256.
TEST(GpuDecodeCodec, E2M1KeysEqualValueTimesScaleInFp16OrBf16) {
  check_k<32, 16>("mxfp4");
  check_k<32, 32>("mxfp4");
  check_k<32, 64>("mxfp4");
  check_k<16, 16>("nvfp4");
  check_k<16, 32>("nvfp4");
  check_k<16, 64>("nvfp4");
  check_k_f16();
}

TEST(GpuDecodeCodec, E2M1ValuePairsEqualValueTimesScaleInFp16OrBf16) {
  check_v<32, 8>("mxfp4");
  check_v<32, 16>("mxfp4");
  check_v<32, 32>("mxfp4");
  check_v<16, 8>("nvfp4");
  check_v<16, 16>("nvfp4");
  check_v<16, 32>("nvfp4");
}

}  // namespace
}  // namespace mxattn::test
