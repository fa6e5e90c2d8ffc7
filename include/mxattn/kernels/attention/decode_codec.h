// Register decoders of the decode kernel: a lane's codes of one key to scaled BF16 or FP16 pairs.
//
//   decode_k:        one key, channels c0 .. c0+N-1  -> N/2 words (channel 2w, 2w+1)   (A of S^T = K Q^T)
//   e2m1x8_to_f16_scaled: the same for E2M1Ue4m3 codes, a word at a time, in e2m1x8_to_f16's channel order
//   decode_v_pair:   two keys, channels c0 .. c0+N-1 -> N words (key 0, key 1 at channel i) (A of O^T)
//   decode_v_pair_e2m1_f16: the same for E2M1 codes with UE4M3 scales, in FP16
//
// Codecs, all exact (DESIGN.md §3):
//   E2M1 (any block scale): shifts and masks place eight codes' bits in BF16 pairs as value * 2^-126 (Hopper
//         has no E2M1 cvt), then BF16x2 multiplies by 2^126 and by the block scale (E2M1 x E8M0 or UE4M3 fits
//         BF16).
//   E2M1E8m0 (E8M0 scales, blocks of 32): K as E2M1. V's codes through E4M3 bytes and the cvt to FP16 without a
//         multiply (e2m1x8_to_f16 on two keys' zipped code words, as ldmatrix.trans gives them), its block scales
//         folded into P instead: an O^T m-tile then holds channels of one block (decode_traits.h fold_channel), and
//         P^T for block b is P times key's scale over a running reference (decode_kernel.h).
//   E2M1Ue4m3 (UE4M3 block scales): shifts and masks place the bits in E4M3 bytes as value * 2^-6,
//         cvt.rn.f16x2.e4m3x2 widens them, and one FP16x2 multiply a pair applies the scale (E2M1 x UE4M3 x
//         2^-6 is exact in FP16): FP16 MMAs, and no BF16 bias to undo.
//   E4M3: cvt.rn.f16x2.e4m3x2, then FP32 multiply by the scale and one rounding-free pack to BF16.
//   Lut:  any 4/6/8-bit element through the shared-memory value table (dequant.h).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/codecs.h"
#include "mxattn/ptx/cvt.h"
#include "mxattn/ptx/lop3.h"
#include "mxattn/ptx/prmt.h"

namespace mxattn::kernels {

// E2M1: any block scale, through BF16; E2M1E8m0: E8M0 scales in blocks of 32 (MXFP4), V's scales folded into P;
// E2M1Ue4m3: UE4M3 block scales (NVFP4), through FP16.
enum class Codec { E2M1, E2M1E8m0, E2M1Ue4m3, E4M3, Lut };
constexpr bool is_e2m1(Codec c) { return c == Codec::E2M1 || c == Codec::E2M1E8m0 || c == Codec::E2M1Ue4m3; }
// K codecs that decode as E2M1 through BF16 (decode_k), Q's words paired to match.
constexpr bool k_e2m1_bf16(Codec c) { return c == Codec::E2M1 || c == Codec::E2M1E8m0; }

// Eight E2M1 codes (nibble i of x is code i) -> four BF16 pairs (code j, code j + 4), j = 0..3, each
// value times 2^-126. The code's sign goes to BF16's sign bit and its exponent and mantissa bits to
// BF16's two lowest exponent bits and top mantissa bit: exponent e >= 1 reads as 2^(e-127) (1 + m/2),
// E2M1's 2^(e-1) (1 + m/2) times 2^-126, and exponent 0 reads as BF16's subnormal m/2 * 2^-126, as
// E2M1's is m/2. Two logic ops and at most two shifts per pair (the compiler does left shifts as
// integer multiplies, on the FMA pipe); byte-permute lookups took 3.5 ALU ops per pair
// (bench/decode_notes.md v8).
__device__ __forceinline__ void e2m1x8_to_bf16_biased(uint32_t x, uint32_t (&out)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t sign = (x << (12 - 4 * j)) & 0x80008000u;                           // bit 4j+3 -> 15
    const uint32_t mag = (j < 2 ? x << (6 - 4 * j) : x >> (4 * j - 6)) & 0x01C001C0u;  // bits 4j.. -> 6..8
    out[j] = sign | mag;
  }
}
inline constexpr uint32_t kBf16x2Pow126 = 0x7E807E80u;  // (2^126, 2^126): undoes the bias, exactly

// Scale byte of channel e of a lane's range: ranges start on block edges or lie inside one block.
template <int Channels, int Block>
__device__ __forceinline__ uint32_t scale_byte(uint32_t scales, int e) {
  constexpr int kCount = Channels >= Block ? Channels / Block : 1;
  return kCount > 1 ? (scales >> (8 * (e / Block))) & 0xFF : scales & 0xFF;
}

// Eight E2M1 codes (nibble i of x is code i) -> E4M3 bytes of value * 2^-6: byte j of `even` is code 2j,
// of `odd` code 2j + 1. The code's exponent and mantissa bits go to E4M3's two lowest exponent bits and top
// mantissa bit (exponent e >= 1 reads as 2^(e-7) (1 + m/2), E2M1's 2^(e-1) (1 + m/2) times 2^-6; exponent 0
// as E4M3's subnormal m/2 * 2^-6), its sign to bit 7. Six ALU ops for eight codes.
__device__ __forceinline__ void e2m1x8_to_e4m3(uint32_t x, uint32_t& even, uint32_t& odd) {
  constexpr uint32_t kMag = 0x1C1C1C1Cu;  // a byte's bits 2-4
  const uint32_t s = ptx::and_b32(x, 0x88888888u);  // the codes' signs, bit 3 of each nibble (shifted below as is)
  // (s << 4 also moves the odd codes' signs to bit 3 of the next byte, and s keeps the even codes' at bit 3:
  // both inside kMag, so the select drops them.)
  even = ptx::lop3_select(x << 2, s << 4, kMag);
  odd = ptx::lop3_select(x >> 2, s, kMag);
}

// Eight E2M1 codes -> four FP16 pairs of value * 2^-6, channels (0, 2), (4, 6), (1, 3), (5, 7) of the eight
// (kE2m1F16Lo: the low half's channel; the high half's is 2 more). Q's words follow the same order.
inline constexpr int kE2m1F16Lo[4] = {0, 4, 1, 5};
__device__ __forceinline__ void e2m1x8_to_f16(uint32_t x, uint32_t (&out)[4]) {
  uint32_t even, odd;
  e2m1x8_to_e4m3(x, even, odd);
  out[0] = ptx::cvt_rn_f16x2_e4m3x2<0>(even), out[1] = ptx::cvt_rn_f16x2_e4m3x2<1>(even);
  out[2] = ptx::cvt_rn_f16x2_e4m3x2<0>(odd), out[3] = ptx::cvt_rn_f16x2_e4m3x2<1>(odd);
}

// The FP16 pair factor of a UE4M3 block scale byte b, both halves alike: the scale itself (bit 7 ignored, as
// decode_ue4m3 does); NaN stays NaN.
__device__ __forceinline__ uint32_t ue4m3_f16x2_factor(uint32_t b) {
  return ptx::cvt_rn_f16x2_e4m3x2((b & 0x7Fu) * 0x0101u);
}
// The same for two UE4M3 bytes, b0's value in the low half.
__device__ __forceinline__ uint32_t ue4m3_f16x2_factors(uint32_t b0, uint32_t b1) {
  return ptx::cvt_rn_f16x2_e4m3x2(ptx::prmt_b32(b0, b1, 0x40u) & 0x7F7Fu);
}

// E2M1 K codes, one word (eight channels of a key) -> four FP16 pairs in e2m1x8_to_f16's order of value *
// 2^-6 * factor (ue4m3_f16x2_factor).
__device__ __forceinline__ void e2m1x8_to_f16_scaled(uint32_t x, uint32_t factor, uint32_t (&out)[4]) {
  e2m1x8_to_f16(x, out);
#pragma unroll
  for (int j = 0; j < 4; ++j) out[j] = f16x2_mul(out[j], factor);
}

// Halves of two words joined: (a.lo, b.lo) and (a.hi, b.hi). On two keys' E2M1 code words they make
// codes j and j + 4 one channel of keys a and b; on Q's BF16 pairs, the pairing of decode_k's output.
inline constexpr uint32_t kZipWords01 = 0x5410u, kZipWords23 = 0x7632u;
// For E4M3: (a.b0, b.b0, a.b1, b.b1) and (a.b2, b.b2, a.b3, b.b3).
inline constexpr uint32_t kZipBytes01 = 0x5140u, kZipBytes23 = 0x7362u;

// Two keys' E2M1 codes of four channels, as ldmatrix.trans leaves them (key 0's in the low half) -> four FP16 pairs
// (key 0, key 1) of value * 2^-6, channels 0, 2, 1, 3 of the four: the bytes are zipped first ((k0 c0c1, k1 c0c1,
// k0 c2c3, k1 c2c3)), so that e2m1x8_to_f16's pairs (0, 2), (4, 6), (1, 3), (5, 7) are one channel of both keys.
inline constexpr uint32_t kZipHalves = 0x3120u;
__device__ __forceinline__ void e2m1_key_pair_to_f16(uint32_t x, uint32_t (&out)[4]) {
  e2m1x8_to_f16(ptx::prmt_b32(x, 0u, kZipHalves), out);
}

// Two E4M3 codes (low 16 bits) times scales (s0 for code 0, s1 for code 1) -> BF16 pair.
__device__ __forceinline__ uint32_t e4m3x2_scaled(uint32_t codes, float s0, float s1) {
  const uint32_t h = ptx::cvt_rn_f16x2_e4m3x2(codes);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  return pack_bf16x2(f.x * s0, f.y * s1);
}

template <Codec C, int Bits, int Block, int N, int W>
__device__ __forceinline__ void decode_k(const uint32_t (&raw)[W], uint32_t scales, const ElementTable& tab,
                                         uint32_t (&out)[N / 2]) {
  if constexpr (k_e2m1_bf16(C)) {  // out[4w + j] = channels (8w + j, 8w + j + 4): Q's words match (load_q_words)
#pragma unroll
    for (int w = 0; w < N / 8; ++w) {
      uint32_t pairs[4];
      e2m1x8_to_bf16_biased(raw[w], pairs);
      const float s = tab.scale[scale_byte<N, Block>(scales, 8 * w)];
#pragma unroll
      for (int j = 0; j < 4; ++j) out[4 * w + j] = bf16x2_mul(bf16x2_mul(pairs[j], kBf16x2Pow126), pack_bf16x2(s, s));
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

// E2M1 V codes of two keys with UE4M3 scales, channels c0 .. c0+N-1 -> N FP16 pairs (key 0, key 1 at channel i)
// of value * 2^-6 * scale. The keys' code bytes are zipped first, so that each E4M3 byte pair is one channel.
template <int Block, int N, int W>
__device__ __forceinline__ void decode_v_pair_e2m1_f16(const uint32_t (&raw0)[W], uint32_t sc0, const uint32_t (&raw1)[W],
                                                       uint32_t sc1, uint32_t (&out)[N]) {
  constexpr int kF = N >= Block ? N / Block : 1;
  uint32_t factor[kF];
#pragma unroll
  for (int f = 0; f < kF; ++f)
    factor[f] = ue4m3_f16x2_factors(scale_byte<N, Block>(sc0, f * Block), scale_byte<N, Block>(sc1, f * Block));
#pragma unroll
  for (int w = 0; w < N / 8; ++w) {
    const uint32_t f = factor[N >= Block ? 8 * w / Block : 0];
#pragma unroll
    for (int z = 0; z < 2; ++z) {  // channels 8w + 4z .. + 3
      uint32_t p[4];  // channels 0, 2, 1, 3 of the four (e2m1x8_to_f16 on the zipped bytes)
      e2m1x8_to_f16(ptx::prmt_b32(raw0[w], raw1[w], z ? kZipBytes23 : kZipBytes01), p);
      out[8 * w + 4 * z + 0] = f16x2_mul(p[0], f), out[8 * w + 4 * z + 1] = f16x2_mul(p[2], f);
      out[8 * w + 4 * z + 2] = f16x2_mul(p[1], f), out[8 * w + 4 * z + 3] = f16x2_mul(p[3], f);
    }
  }
}

template <Codec C, int Bits, int Block, int N, int W>
__device__ __forceinline__ void decode_v_pair(const uint32_t (&raw0)[W], uint32_t sc0, const uint32_t (&raw1)[W],
                                              uint32_t sc1, const ElementTable& tab, uint32_t (&out)[N]) {
  if constexpr (C == Codec::E2M1) {
    // Zip the two keys' code words first, so that each decoded pair is (key 0, key 1) of one channel.
#pragma unroll
    for (int w = 0; w < N / 8; ++w) {
      uint32_t lo[4], hi[4];  // channels 8w + j and 8w + 4 + j
      e2m1x8_to_bf16_biased(ptx::prmt_b32(raw0[w], raw1[w], kZipWords01), lo);
      e2m1x8_to_bf16_biased(ptx::prmt_b32(raw0[w], raw1[w], kZipWords23), hi);
#pragma unroll
      for (int j = 0; j < 4; ++j) out[8 * w + j] = lo[j], out[8 * w + 4 + j] = hi[j];
    }
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float s0 = tab.scale[scale_byte<N, Block>(sc0, i)], s1 = tab.scale[scale_byte<N, Block>(sc1, i)];
      out[i] = bf16x2_mul(bf16x2_mul(out[i], kBf16x2Pow126), pack_bf16x2(s0, s1));
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
