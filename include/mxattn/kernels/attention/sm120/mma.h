// The sm_120a prefill kernel's block-scaled MMA, two ways behind one interface (prefill_kernel.h's Mma):
//   NativeMma    the instructions (ptx/mma_block_scale.h), on an sm_120 GPU;
//   EmulatedMma  the same D += sum_k (A x scale_A)(B x scale_B) from the same registers on any GPU: each lane
//                gathers its rows of A and columns of B by warp shuffles and sums in FP32. It reads the
//                registers with the library's maps (kernels/attention/fragment.h mma_a8 / mma_b8 / mma_a4 /
//                mma_b4 / mma_c, the scale lanes of probe/probe.h), so the kernel's code that is not the
//                instruction (loads, folds, the softmax, the masks, the epilogue) runs and is tested on the
//                H200 (PrefillKernel::BlockScaledEmulated), while `mxattn probe` holds the maps themselves
//                against an sm_120 GPU. For checking, not for speed: each emulated instruction is a call
//                (__noinline__), so the kernel compiles in about the time of the native one.
#pragma once
#include <cstdint>

#include "mxattn/format/element.h"
#include "mxattn/format/scale.h"
#include "mxattn/ptx/mma_block_scale.h"

namespace mxattn::kernels::sm120 {

struct NativeMma {
  static constexpr bool kEmulated = false;
  template <ptx::MmaElem A, ptx::MmaElem B>
  __device__ static void mxf8f6f4(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t sa, uint32_t sb) {
    ptx::mma_m16n8k32_mxf8f6f4<A, B>(d, a, b, sa, sb);
  }
  __device__ static void mxf4_ue8m0(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t sa, uint32_t sb) {
    ptx::mma_m16n8k64_e2m1_ue8m0(d, a, b, sa, sb);
  }
  __device__ static void nvf4_ue4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t sa, uint32_t sb) {
    ptx::mma_m16n8k64_e2m1_ue4m3(d, a, b, sa, sb);
  }
};

struct EmulatedMma {
  static constexpr bool kEmulated = true;

  // The value of an element in its kind::mxf8f6f4 byte (6-bit codes in bits 5:0, E2M1 in bits 5:2).
  template <ptx::MmaElem T>
  __device__ static float byte_value(uint32_t byte) {
    using E = ptx::MmaElem;
    if constexpr (T == E::E4M3) return Element::minifloat(4, 3, Specials::NanOnly).decode(byte);
    if constexpr (T == E::E5M2) return Element::minifloat(5, 2, Specials::Ieee).decode(byte);
    if constexpr (T == E::E2M3) return Element::minifloat(2, 3).decode(byte & 0x3Fu);
    if constexpr (T == E::E3M2) return Element::minifloat(3, 2).decode(byte & 0x3Fu);
    if constexpr (T == E::E2M1) return Element::minifloat(2, 1).decode(byte >> 2 & 0xFu);
  }

  // m16n8k32 kind::mxf8f6f4, scale_vec::1X. Lane (g, t) = (lane / 4, lane % 4) holds D rows g, g + 8 and columns
  // 2t, 2t + 1 (mma_c). Row r of A: registers 0 (row g) / 1 (row g + 8) of lanes 4r .. 4r + 3 hold k = 4q + byte,
  // registers 2 / 3 k = 16 + 4q + byte (mma_a8, q = the lane's t); column n of B: registers 0 / 1 of lanes
  // 4n .. 4n + 3, k = 4q + byte / 16 + 4q + byte (mma_b8). One scale a row and column (byte 0).
  template <ptx::MmaElem A, ptx::MmaElem B>
  __device__ __noinline__ static void mxf8f6f4(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t sa,
                                               uint32_t sb) {
    float sum[4] = {0, 0, 0, 0};
    for (int q = 0; q < 4; ++q) {
      uint32_t ra[4], rb[2][2];
      gather(a, b, q, ra, rb);
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 2; ++c)
          for (int half = 0; half < 2; ++half)  // k 4q .. (A registers 0, 1) and 16 + 4q .. (2, 3)
            for (int byte = 0; byte < 4; ++byte)
              sum[2 * h + c] += byte_value<A>(ra[2 * half + h] >> (8 * byte) & 0xFFu) *
                                byte_value<B>(rb[c][half] >> (8 * byte) & 0xFFu);
    }
    float rows[2], cols[2];
    scales(sa, sb, ScaleType::E8M0, 0, rows, cols);
    for (int i = 0; i < 4; ++i) d[i] += sum[i] * rows[i / 2] * cols[i % 2];
  }

  // m16n8k64 kind::mxf4nvf4 on packed E2M1: nibble j of A's register r in lane (g, q) is row g + 8 (r % 2),
  // k = 8q + j + 32 (r / 2) (mma_a4); of B's register r in lane (n, q), k = 8q + j + 32r, column n (mma_b4).
  // The scale register's byte b scales k block b: 32 k (2X, UE8M0) or 16 (4X, UE4M3).
  template <int kBlock>
  __device__ __noinline__ static void mxf4nvf4(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t sa,
                                               uint32_t sb, ScaleType type) {
    constexpr int kBlocks = 64 / kBlock;
    const Element e2m1 = Element::minifloat(2, 1);
    float sum[4][kBlocks] = {};
    for (int q = 0; q < 4; ++q) {
      uint32_t ra[4], rb[2][2];
      gather(a, b, q, ra, rb);
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 2; ++c)
          for (int half = 0; half < 2; ++half)
            for (int j = 0; j < 8; ++j)
              sum[2 * h + c][(32 * half + 8 * q + j) / kBlock] += e2m1.decode(ra[2 * half + h] >> (4 * j) & 0xFu) *
                                                                   e2m1.decode(rb[c][half] >> (4 * j) & 0xFu);
    }
    float x[4] = {0, 0, 0, 0};  // each block's sum times its two scales
    for (int kb = 0; kb < kBlocks; ++kb) {
      float rows[2], cols[2];
      scales(sa, sb, type, kb, rows, cols);
      for (int i = 0; i < 4; ++i) x[i] += sum[i][kb] * rows[i / 2] * cols[i % 2];
    }
    for (int i = 0; i < 4; ++i) d[i] += x[i];
  }

  __device__ static void mxf4_ue8m0(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t sa, uint32_t sb) {
    mxf4nvf4<32>(d, a, b, sa, sb, ScaleType::E8M0);
  }
  __device__ static void nvf4_ue4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], uint32_t sa, uint32_t sb) {
    mxf4nvf4<16>(d, a, b, sa, sb, ScaleType::UE4M3);
  }

 private:
  // What lane (g, t) needs of quad lane q: A's registers from lane 4g + q (rows g, g + 8), B's from lanes
  // 4 (2t + c) + q (columns 2t + c); every lane runs the shuffles.
  __device__ static void gather(const uint32_t (&a)[4], const uint32_t (&b)[2], int q, uint32_t (&ra)[4],
                                uint32_t (&rb)[2][2]) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int r = 0; r < 4; ++r) ra[r] = __shfl_sync(0xFFFFFFFFu, a[r], 4 * g + q);
    for (int c = 0; c < 2; ++c)
      for (int r = 0; r < 2; ++r) rb[c][r] = __shfl_sync(0xFFFFFFFFu, b[r], 4 * (2 * t + c) + q);
  }

  // Byte `byte` of the scale registers as this lane's rows (g, g + 8) and columns (2t, 2t + 1) need them: A's
  // from lanes 4g and 4g + 1, B's from lane 4n; every lane runs the shuffles.
  __device__ static void scales(uint32_t sa, uint32_t sb, ScaleType type, int byte, float (&rows)[2], float (&cols)[2]) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    auto s = [&](uint32_t reg) { return decode_scale(type, reg >> (8 * byte) & 0xFFu); };
    rows[0] = s(__shfl_sync(0xFFFFFFFFu, sa, 4 * g));
    rows[1] = s(__shfl_sync(0xFFFFFFFFu, sa, 4 * g + 1));
    cols[0] = s(__shfl_sync(0xFFFFFFFFu, sb, 4 * (2 * t)));
    cols[1] = s(__shfl_sync(0xFFFFFFFFu, sb, 4 * (2 * t + 1)));
  }
};

}  // namespace mxattn::kernels::sm120
