// The sm_120a prefill kernel's parts that run on any GPU, checked on the H200:
// - NVFP4's V (kernels/attention/sm120/prefill_kernel.h fold_v_chunk): each 32 keys of a channel get one UE8M0
//   scale R, and each element the E4M3 code of value x 2^(127 - R), placed in P's slot order; against the
//   formats' own decoding and E4M3's rounding to nearest even: random codes and UE4M3 scale bytes (zero,
//   subnormal, NaN and 15 binades apart within a group among them), a sequence that ends inside a byte, a
//   group and a tile, vector and byte loads.
// - The emulated block-scaled MMA (sm120/mma.h EmulatedMma, which BlockScaledEmulated runs the kernel on):
//   every block-scaled family of `mxattn probe`, on random codes and scales, against the CPU model
//   (probe/probe.h) that the probe holds an sm_120 GPU against.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "mxattn/format/format.h"
#include "mxattn/kernels/attention/sm120/prefill_kernel.h"
#include "mxattn/probe/probe.h"

namespace mxattn::test {
namespace {

constexpr int kD = 64, kKeys = kernels::sm120::Traits<kD>::kBlockN;

// One 64-key tile of V^T from key j0 of channel rows `code_row` bytes and `scale_row` scales apart, folded as
// the kernel's load_v_tile folds it; the tile's bytes (kD x kKeys, V^T's columns) and scales (kD x 2) out.
__global__ void fold_v_tile(Format f, const uint8_t* codes, const uint8_t* scales, int code_row, int scale_row, int j0,
                            int seq_kv, bool vector, uint8_t* t_out, uint8_t* s_out) {
  __shared__ kernels::sm120::VFolded<kD> v;
  kernels::hopper::build_value_table(v.value, f, threadIdx.x, blockDim.x);
  __syncthreads();
  const int headroom = kernels::hopper::fold_headroom(f);
  for (int c = threadIdx.x; c < kD * kKeys / 16; c += blockDim.x) {
    const int d = c / (kKeys / 16), c0 = c % (kKeys / 16) * 16;
    kernels::sm120::fold_v_chunk(v, codes + d * code_row, scales + d * scale_row, d, c0, j0 + c0, seq_kv, vector,
                                 headroom);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kD * kKeys; i += blockDim.x) t_out[i] = v.t[i / kKeys][i % kKeys];
  for (int i = threadIdx.x; i < kD * 2; i += blockDim.x) s_out[i] = v.scale[i / 2][i % 2];
}

TEST(Sm120Fold, Nvfp4VIsEveryElementRoundedOnceToE4M3) {
  constexpr int kRowKeys = 128, kCodeRow = kRowKeys / 2, kScaleRow = kRowKeys / 16;
  // The largest E2M1 x UE4M3 significand (6 x 1.875) lifted by whole binades while under E4M3's 448.
  const int headroom = int(std::floor(std::log2(448.0 / (6.0 * 1.875))));
  std::mt19937 rng(std::random_device{}());
  int nan_keys = 0, zero_groups = 0, spread_groups = 0;
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<uint8_t> codes(kD * kCodeRow), scales(kD * kScaleRow);
    for (uint8_t& c : codes) c = uint8_t(rng());
    for (uint8_t& s : scales) s = uint8_t(rng());  // the sign bit too: UE4M3 ignores it
    DeviceBuffer<uint8_t> d_codes(codes), d_scales(scales), t(kD * kKeys), sc(kD * 2);
    for (int seq_kv : {kRowKeys, 101, 37})
      for (int j0 : {0, 64})
        for (bool vector : {true, false}) {
          t.fill_bytes(kPoison), sc.fill_bytes(kPoison);
          fold_v_tile<<<1, 128>>>(kNvfp4, d_codes.data(), d_scales.data(), kCodeRow, kScaleRow, j0, seq_kv, vector,
                                  t.data(), sc.data());
          CUDA_ASSERT(cudaDeviceSynchronize());
          const std::vector<uint8_t> got = t.download(), got_scale = sc.download();
          SCOPED_TRACE(testing::Message() << "seq_kv " << seq_kv << " j0 " << j0 << " vector " << vector);
          for (int d = 0; d < kD; ++d)
            for (int g = 0; g < kKeys / 32; ++g) {
              // R: the group's largest finite nonzero scale's binade (keys in the sequence only) less the headroom.
              const int first = j0 + 32 * g;
              int e_max = -1;
              for (int b = 0; b < 2; ++b) {
                const float s = decode_scale(ScaleType::UE4M3, scales[d * kScaleRow + first / 16 + b]);
                if (first + 16 * b < seq_kv && std::isfinite(s) && s > 0) e_max = std::max(e_max, std::ilogb(s) + 127);
              }
              const int r = e_max < 0 ? 127 : e_max - headroom;
              zero_groups += e_max < 0;
              ASSERT_EQ(got_scale[d * 2 + g], r) << "channel " << d << " group " << g;
              if (first + 32 <= seq_kv) {
                const float s0 = decode_scale(ScaleType::UE4M3, scales[d * kScaleRow + first / 16]);
                const float s1 = decode_scale(ScaleType::UE4M3, scales[d * kScaleRow + first / 16 + 1]);
                spread_groups += s0 > 0 && s1 > 0 && std::abs(std::ilogb(s0) - std::ilogb(s1)) >= 12;
              }
              for (int i = 0; i < 32; ++i) {
                const int key = first + i, at = frag::sm120::vt_column(32 * g + i);
                uint32_t want = 0;  // past the sequence
                if (key < seq_kv) {
                  const uint32_t code = codes[d * kCodeRow + key / 2] >> (4 * (key % 2)) & 0xFu;
                  const float s = decode_scale(ScaleType::UE4M3, scales[d * kScaleRow + key / 16]);
                  const double x = double(kE2M1.decode(code)) * s * std::ldexp(1.0, 127 - r);
                  want = std::isnan(s) ? 0x7Fu : kE4M3.encode(float(x));  // x: at most 6 significant bits, exact
                  nan_keys += std::isnan(s);
                }
                ASSERT_EQ(got[d * kKeys + at], want) << "channel " << d << " key " << key;
              }
            }
        }
  }
  // The draws reached the cases that matter (random scale bytes: 1 in 128 NaN, 1 in 16 zero or subnormal).
  EXPECT_GT(nan_keys, 0);
  EXPECT_GT(spread_groups, 0);
  EXPECT_GT(zero_groups, 0);  // groups wholly past the sequence at least
}

// One warp: D = 0 + the emulated instruction on the registers of probe.h Operands (A 4 words a lane, B 2).
template <ptx::MmaElem A, ptx::MmaElem B, int kVec>
__global__ void emulated_mma(const uint32_t* a, const uint32_t* b, const uint32_t* sa, const uint32_t* sb, float* d) {
  using M = kernels::sm120::EmulatedMma;
  const int lane = threadIdx.x;
  const uint32_t ra[4] = {a[4 * lane], a[4 * lane + 1], a[4 * lane + 2], a[4 * lane + 3]};
  const uint32_t rb[2] = {b[2 * lane], b[2 * lane + 1]};
  float acc[4] = {0, 0, 0, 0};
  if constexpr (kVec == 1) M::mxf8f6f4<A, B>(acc, ra, rb, sa[lane], sb[lane]);
  if constexpr (kVec == 2) M::mxf4_ue8m0(acc, ra, rb, sa[lane], sb[lane]);
  if constexpr (kVec == 4) M::nvf4_ue4m3(acc, ra, rb, sa[lane], sb[lane]);
  for (int i = 0; i < 4; ++i) d[4 * lane + i] = acc[i];
}

template <ptx::MmaElem A, ptx::MmaElem B, int kVec>
probe::ValueRunner emulated_runner() {
  return [](const probe::Family& f, const std::vector<probe::Operands>& xs, std::vector<float>& d) {
    d.clear();
    for (const probe::Operands& x : xs) {
      DeviceBuffer<uint32_t> a(x.a), b(x.b), sa(std::vector<uint32_t>(x.sa, x.sa + 32)),
          sb(std::vector<uint32_t>(x.sb, x.sb + 32));
      DeviceBuffer<float> out(f.c_slots());
      out.fill_bytes(kPoison);
      emulated_mma<A, B, kVec><<<1, 32>>>(a.data(), b.data(), sa.data(), sb.data(), out.data());
      if (cudaDeviceSynchronize() != cudaSuccess) return Status::error("emulated_mma failed");
      const std::vector<float> got = out.download();
      d.insert(d.end(), got.begin(), got.end());
    }
    return Status::success();
  };
}

TEST(Sm120Emulation, IsTheModelOfEveryBlockScaledFamily) {
  using E = ptx::MmaElem;
  const std::pair<const char*, probe::ValueRunner> runs[] = {
      {"mma.m16n8k32.mxf8f6f4.e4m3", emulated_runner<E::E4M3, E::E4M3, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e5m2", emulated_runner<E::E5M2, E::E5M2, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e2m3", emulated_runner<E::E2M3, E::E2M3, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e3m2", emulated_runner<E::E3M2, E::E3M2, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e2m1", emulated_runner<E::E2M1, E::E2M1, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e4m3.e5m2", emulated_runner<E::E4M3, E::E5M2, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e4m3.e2m3", emulated_runner<E::E4M3, E::E2M3, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e4m3.e3m2", emulated_runner<E::E4M3, E::E3M2, 1>()},
      {"mma.m16n8k32.mxf8f6f4.e4m3.e2m1", emulated_runner<E::E4M3, E::E2M1, 1>()},
      {"mma.m16n8k64.mxf4nvf4.ue8m0", emulated_runner<E::E2M1, E::E2M1, 2>()},
      {"mma.m16n8k64.mxf4nvf4.ue4m3", emulated_runner<E::E2M1, E::E2M1, 4>()},
  };
  int checked = 0;
  for (const auto& [name, run] : runs) {
    const probe::Family* f = probe::find_family(name);
    ASSERT_NE(f, nullptr) << name;
    const probe::ValueCheck v = probe::check_values(*f, run, 16, std::random_device{}());
    ASSERT_TRUE(v.error.empty()) << name << ": " << v.error;
    // FP32 sums of exact products against the model's FP64 (the instruction's own rounding is not modelled).
    EXPECT_LE(v.worst, 0x1p-18) << name;
    ++checked;
  }
  int families = 0;
  for (const probe::Family& f : probe::families()) families += f.scale.vec != 0;
  EXPECT_EQ(checked, families);
}

}  // namespace
}  // namespace mxattn::test
