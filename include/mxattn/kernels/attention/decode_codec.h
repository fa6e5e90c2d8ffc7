// Register decoders of the decode kernel: a lane's codes of one key to scaled BF16 pairs.
//
//   decode_k:      one key, channels c0 .. c0+N-1  -> N/2 words (channel 2w, 2w+1)   (B of Q K^T)
//   decode_v_pair: two keys, channels c0 .. c0+N-1 -> N words (key 0, key 1 at channel i) (B of P V)
//
// Codecs, all exact (DESIGN.md §3):
//   E2M1: byte-permute lookups give the unscaled BF16 bytes of four codes at a time (Hopper has no
//         E2M1 cvt), then a BF16x2 multiply by the block scale (E2M1 x E8M0 or UE4M3 fits BF16).
//   E4M3: cvt.rn.f16x2.e4m3x2, then FP32 multiply by the scale and one rounding-free pack to BF16.
//   Lut:  any 4/6/8-bit element through the shared-memory value table (dequant.h).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/ptx/cvt.h"
#include "mxattn/ptx/prmt.h"

namespace mxattn::kernels {

enum class Codec { E2M1, E4M3, Lut };

// BF16 bytes of the E2M1 magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6 (0x0000 3F00 3F80 3FC0 4000 4040 4080 40C0),
// as two 8-entry prmt tables.
inline constexpr uint32_t kE2M1HighBytes03 = 0x3F3F3F00u, kE2M1HighBytes47 = 0x40404040u;
inline constexpr uint32_t kE2M1LowBytes03 = 0xC0800000u, kE2M1LowBytes47 = 0xC0804000u;

// prmt selectors that interleave the low/high byte words of four decoded codes into BF16 pairs.
inline constexpr uint32_t kPairs01 = 0x5140u, kPairs23 = 0x7362u;  // (code 0, 1), (code 2, 3)
inline constexpr uint32_t kPairs02 = 0x6240u, kPairs13 = 0x7351u;  // (code 0, 2), (code 1, 3)
// Bytes of two code words interleaved: (a.b0, b.b0, a.b1, b.b1) and (a.b2, b.b2, a.b3, b.b3).
inline constexpr uint32_t kZipBytes01 = 0x5140u, kZipBytes23 = 0x7362u;

// The prmt tables above, held in registers. The kernel reads them once from shared memory: from
// immediates, the compiler keeps them in uniform registers and copies each into a register before
// every use (an IMAD.U32 per table operand: 178 per 32-key tile, 14% of the tile's instructions).
struct E2M1Regs {
  uint32_t hi03 = kE2M1HighBytes03, hi47 = kE2M1HighBytes47, lo03 = kE2M1LowBytes03, lo47 = kE2M1LowBytes47,
           sign = 0x80808080u;
};

// Four E2M1 codes in the low 16 bits of `codes` -> two BF16 pairs, unscaled: (code 0, 1) and
// (code 2, 3) with the default selectors, (code 0, 2) and (code 1, 3) with kPairs02, kPairs13.
template <uint32_t SelA = kPairs01, uint32_t SelB = kPairs23>
__device__ __forceinline__ void e2m1x4_to_bf16(uint32_t codes, const E2M1Regs& r, uint32_t& pa, uint32_t& pb) {
  const uint32_t mag = codes & 0x7777u;
  const uint32_t hi = ptx::prmt_b32(r.hi03, r.hi47, mag);
  const uint32_t lo = ptx::prmt_b32(r.lo03, r.lo47, mag);
  // Sign-replicate mode: selectors with the sign bit give 0xFF, the others 0x80; bit 0 is the sign.
  const uint32_t sg = ptx::prmt_b32(r.sign, r.sign, codes);
  const uint32_t hs = hi | ((sg << 7) & 0x80808080u);
  pa = ptx::prmt_b32(lo, hs, SelA);
  pb = ptx::prmt_b32(lo, hs, SelB);
}

__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// Two E4M3 codes (low 16 bits) times scales (s0 for code 0, s1 for code 1) -> BF16 pair.
__device__ __forceinline__ uint32_t e4m3x2_scaled(uint32_t codes, float s0, float s1) {
  const uint32_t h = ptx::cvt_rn_f16x2_e4m3x2(codes);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  return pack_bf16x2(f.x * s0, f.y * s1);
}

// Scale byte of channel e of a lane's range: ranges start on block edges or lie inside one block.
template <int Channels, int Block>
__device__ __forceinline__ uint32_t scale_byte(uint32_t scales, int e) {
  constexpr int kCount = Channels >= Block ? Channels / Block : 1;
  return kCount > 1 ? (scales >> (8 * (e / Block))) & 0xFF : scales & 0xFF;
}

template <Codec C, int Bits, int Block, int N, int W>
__device__ __forceinline__ void decode_k(const uint32_t (&raw)[W], uint32_t scales, const ElementTable& tab,
                                         const E2M1Regs& e2m1, uint32_t (&out)[N / 2]) {
  if constexpr (C == Codec::E2M1) {
#pragma unroll
    for (int w = 0; w < N / 8; ++w) {
      e2m1x4_to_bf16(raw[w], e2m1, out[4 * w], out[4 * w + 1]);
      e2m1x4_to_bf16(raw[w] >> 16, e2m1, out[4 * w + 2], out[4 * w + 3]);
    }
#pragma unroll
    for (int p = 0; p < N / 2; ++p) {
      const float s = tab.scale[scale_byte<N, Block>(scales, 2 * p)];
      out[p] = bf16x2_mul(out[p], pack_bf16x2(s, s));
    }
  } else if constexpr (C == Codec::E4M3) {
#pragma unroll
    for (int p = 0; p < N / 2; ++p) {
      const float s = tab.scale[scale_byte<N, Block>(scales, 2 * p)];
      out[p] = e4m3x2_scaled(raw[p / 2] >> (16 * (p % 2)), s, s);
    }
  } else {
#pragma unroll
    for (int p = 0; p < N / 2; ++p) {
      const float s = tab.scale[scale_byte<N, Block>(scales, 2 * p)];
      out[p] = pack_bf16x2(tab.value[code_at<Bits>(raw, 2 * p)] * s, tab.value[code_at<Bits>(raw, 2 * p + 1)] * s);
    }
  }
}

template <Codec C, int Bits, int Block, int N, int W>
__device__ __forceinline__ void decode_v_pair(const uint32_t (&raw0)[W], uint32_t sc0, const uint32_t (&raw1)[W],
                                              uint32_t sc1, const ElementTable& tab, const E2M1Regs& e2m1, uint32_t (&out)[N]) {
  if constexpr (C == Codec::E2M1) {
    // Zip the two keys' code bytes first (channels 2c, 2c+1 of key 0, then of key 1), so that each
    // decode yields (key 0, key 1) pairs of one channel directly: 2 prmt per 16 codes, not 8.
#pragma unroll
    for (int w = 0; w < N / 8; ++w) {
      const uint32_t z01 = ptx::prmt_b32(raw0[w], raw1[w], kZipBytes01), z23 = ptx::prmt_b32(raw0[w], raw1[w], kZipBytes23);
      e2m1x4_to_bf16<kPairs02, kPairs13>(z01, e2m1, out[8 * w], out[8 * w + 1]);
      e2m1x4_to_bf16<kPairs02, kPairs13>(z01 >> 16, e2m1, out[8 * w + 2], out[8 * w + 3]);
      e2m1x4_to_bf16<kPairs02, kPairs13>(z23, e2m1, out[8 * w + 4], out[8 * w + 5]);
      e2m1x4_to_bf16<kPairs02, kPairs13>(z23 >> 16, e2m1, out[8 * w + 6], out[8 * w + 7]);
    }
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float s0 = tab.scale[scale_byte<N, Block>(sc0, i)], s1 = tab.scale[scale_byte<N, Block>(sc1, i)];
      out[i] = bf16x2_mul(out[i], pack_bf16x2(s0, s1));
    }
  } else if constexpr (C == Codec::E4M3) {
#pragma unroll
    for (int w = 0; w < N / 4; ++w) {
      const uint32_t p01 = ptx::prmt_b32(raw0[w], raw1[w], kZipBytes01), p23 = ptx::prmt_b32(raw0[w], raw1[w], kZipBytes23);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = 4 * w + j;
        const float s0 = tab.scale[scale_byte<N, Block>(sc0, i)], s1 = tab.scale[scale_byte<N, Block>(sc1, i)];
        out[i] = e4m3x2_scaled((j < 2 ? p01 : p23) >> (16 * (j % 2)), s0, s1);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float s0 = tab.scale[scale_byte<N, Block>(sc0, i)], s1 = tab.scale[scale_byte<N, Block>(sc1, i)];
      out[i] = pack_bf16x2(tab.value[code_at<Bits>(raw0, i)] * s0, tab.value[code_at<Bits>(raw1, i)] * s1);
    }
  }
}

}  // namespace mxattn::kernels
