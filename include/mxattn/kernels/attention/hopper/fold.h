// Block scales folded into E4M3 operands (DESIGN.md §3). A row (a key, a query, or one channel of V
// over the whole sequence) gets a reference exponent R; each element of a block with scale exponent
// e becomes the E4M3 code of  value * 2^(e - R),  and the row carries 2^(R - 127) as one FP32 factor
// that the kernel applies to whole scores (Q, K) or output channels (V).
//
// R = (largest finite block exponent of the row) - headroom, where the headroom lifts the largest
// element as close to E4M3's 448 as a power of two allows: E2M1 x 2^6 = 384, E3M2 x 2^4 = 448. The
// fold is exact while value * 2^(e - R) is an E4M3 number: for every element of a block whose
// exponent is within 14 binades of the row's largest (E2M1: shifts 6 down to -8), 11 (E2M3: 5 to -6)
// or 9 (E3M2: 4 to -5); for E4M3 elements only in the row's largest blocks (smaller ones lose the
// bits that fall below 2^-9). E5M2 (a wider range than E4M3's) rounds too; INT8 (7 significant bits)
// is not folded at all. The rounding is the one cvt does: nearest even, saturating.
//
// Decoding goes through FP16, which holds every element value of the supported formats exactly
// (checked on the host): code -> FP16 by table, times 2^(e - R) in FP16, then cvt to E4M3.
//
// UE4M3 block scales (NVFP4) fold the same way, with the scale's exponent as e and its significand M
// (1 to 1.875) in the multiplier: value * M * 2^(e - R). An element times M has up to 6 significant
// bits, exact in FP16; the cvt to E4M3 (4) rounds it once, nearest even. That rounding is the cost of
// NVFP4 on FP8 operands (bench/fold_exactness.py models it, bench/prefill_notes.md measures it). The FP32 tensor scale stays out of the
// codes: the kernel multiplies the rows' factors by 1 / S_enc.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/format/format.h"
#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/codecs.h"
#include "mxattn/format/element.h"
#include "mxattn/ptx/cvt.h"
#include "mxattn/ptx/prmt.h"

namespace mxattn::kernels::hopper {

inline constexpr float kE4M3Max = 448.0f;
inline constexpr uint32_t kE8M0Nan = 0xFF;
inline constexpr uint32_t kE4M3NanX4 = 0x7F7F7F7Fu;

// floor(log2(448 / largest element times the largest scale significand)): how far the largest element
// can move up and stay finite.
__host__ __device__ inline int fold_headroom(const Format& f) {
  return ilogbf(kE4M3Max / (f.elem.max_value() * (f.scale == ScaleType::UE4M3 ? 1.875f : 1.0f)));
}

__device__ __forceinline__ void build_value_table(uint16_t* table, const Format& f, int tid, int nthreads) {
  const int codes = 1 << f.elem.bits;
  for (int i = tid; i < 256; i += nthreads) table[i] = __half_as_ushort(__float2half_rn(i < codes ? f.elem.decode(i) : 0.0f));
}

// 2^shift as FP16 in both halves (0 below FP16's smallest subnormal 2^-24; shift <= 15 always): the FP32 power
// of two rounded to FP16 by one cvt, exact down to 2^-24 (2^-25, half of it, rounds to the even 0). Branch-free:
// every fold's chunk builds one (bench/prefill_notes.md v28).
__device__ __forceinline__ uint32_t pow2_f16x2(int shift) {
  const __half2 h = __float2half2_rn(__int_as_float((max(shift, -126) + 127) << 23));
  return *reinterpret_cast<const uint32_t*>(&h);
}

// How a format's codes become folded E4M3 codes; the fold is compiled once per kind.
//   GenericCodes<Bits>  any element FP16 holds: code -> FP16 by table, HMUL2 by 2^shift, cvt to E4M3
//   E4M3Codes           MXFP8: cvt E4M3 -> FP16, HMUL2 by 2^shift, cvt back to E4M3
//   E2M1Codes           MXFP4: an 8-entry table of E4M3 magnitudes for the block's shift (built once
//                       per block of threads, FoldTables::e2m1), looked up 4 codes at a time by prmt
//   Ue4m3Codes<Bits>    UE4M3 block scales: the generic path, the multiplier M * 2^shift; NVFP4's E2M1 codes
//                       (Ue4m3Codes<4>) by a table of the 8 magnitudes times it, built a chunk
// All give the same bits: cvt.rn.satfinite of the exact value * (M) * 2^shift. The scale type is part of
// the kind, so the E8M0 formats' code does not carry UE4M3's.
template <int Bits>
struct GenericCodes {
  static constexpr int kBits = Bits;
  static constexpr ScaleType kScale = ScaleType::E8M0;
};
struct E4M3Codes {
  static constexpr int kBits = 8;
  static constexpr ScaleType kScale = ScaleType::E8M0;
};
struct E2M1Codes {
  static constexpr int kBits = 4;
  static constexpr ScaleType kScale = ScaleType::E8M0;
};
template <int Bits>
struct Ue4m3Codes {
  static constexpr int kBits = Bits;
  static constexpr ScaleType kScale = ScaleType::UE4M3;
};

// A block scale byte as the fold uses it: the exponent byte e (E8M0's own; 0xFF for NaN) and the
// significand M as FP16 in both halves (1.0 for E8M0; 0 for a zero UE4M3 scale, which zeroes its block).
struct BlockScaleParts {
  uint32_t e;
  uint32_t m;
};
template <typename Codes>
__device__ __forceinline__ BlockScaleParts block_scale_parts(uint32_t b) {
  if constexpr (Codes::kScale == ScaleType::E8M0) {
    return {b, 0x3C003C00u};
  } else {
    b &= 0x7F;  // UE4M3: E4M3 without the sign; 0x7F is NaN
    if (b == kUE4M3Nan) return {kE8M0Nan, 0};
    const uint32_t exp = b >> 3, man = b & 7;
    if (exp) return {exp + 120, (0x3C00u | man << 7) * 0x10001u};  // (1 + man/8) 2^(exp - 7)
    if (!man) return {0, 0};
    const int k = 31 - __clz(man);  // subnormal: man 2^-9 = (man / 2^k) 2^(k - 9)
    return {uint32_t(118 + k), (0x3C00u | ((man << (10 - k)) & 0x3FFu)) * 0x10001u};
  }
}
// Keys that order a row's scale bytes by value (0 for NaN), four packed bytes at a time (max_bytes
// reduces them): the largest key's exponent is the row's largest.
template <typename Codes>
__device__ __forceinline__ uint32_t scale_nan_mask4(uint32_t x) {  // 0xFF in the bytes that are NaN
  if constexpr (Codes::kScale == ScaleType::UE4M3) return __vcmpeq4(x & 0x7F7F7F7Fu, 0x7F7F7F7Fu);
  else return __vcmpeq4(x, 0xFFFFFFFFu);
}
template <typename Codes>
__device__ __forceinline__ uint32_t scale_order_keys4(uint32_t x) {
  if constexpr (Codes::kScale == ScaleType::UE4M3) x &= 0x7F7F7F7Fu;
  return x & ~scale_nan_mask4<Codes>(x);
}
template <typename Codes>
__device__ __forceinline__ uint32_t scale_order_key(uint32_t b) {  // one byte
  if constexpr (Codes::kScale == ScaleType::UE4M3) b &= 0x7F;
  return b == (Codes::kScale == ScaleType::UE4M3 ? kUE4M3Nan : kE8M0Nan) ? 0u : b;
}
template <typename Codes>
__device__ __forceinline__ int row_max_exponent(uint32_t key) { return int(block_scale_parts<Codes>(key).e); }

// Shifts the E2M1 table covers: the headroom (6) above, and below -14 every E2M1 value rounds to 0.
inline constexpr int kE2M1MinShift = -14, kE2M1MaxShift = 6;

struct FoldTables {
  const uint16_t* value;  // the operand's code -> FP16 bits
  const uint2* e2m1;      // [shift - kE2M1MinShift]: E4M3 codes of the 8 E2M1 magnitudes * 2^shift
};

// (The formats' constants by value: the namespace-scope kE4M3, kE2M1 do not exist on the device.)
// UE4M3 scales take the generic path: their significand is part of the multiplier.
template <typename F>
__device__ __forceinline__ void with_codes(const Format& fmt, F&& f) {
  const Element& e = fmt.elem;
  if (fmt.scale == ScaleType::UE4M3)
    e.bits == 4 ? f(Ue4m3Codes<4>{}) : (e.bits == 6 ? f(Ue4m3Codes<6>{}) : f(Ue4m3Codes<8>{}));
  else if (e == Element::minifloat(4, 3, Specials::NanOnly)) f(E4M3Codes{});
  else if (e == Element::minifloat(2, 1)) f(E2M1Codes{});
  else if (e.bits == 4) f(GenericCodes<4>{});
  else if (e.bits == 6) f(GenericCodes<6>{});
  else f(GenericCodes<8>{});
}

__device__ __forceinline__ uint32_t e4m3x2_of_f16x2(uint32_t h, uint32_t mul) {
  return ptx::cvt_rn_satfinite_e4m3x2_f16x2(f16x2_mul(h, mul));
}

// Codes -> FP16 by table, times `mul` (FP16 in both halves), cvt to E4M3.
template <int Bits>
__device__ __forceinline__ uint4 fold16_mul(const uint32_t (&w)[4], uint32_t mul, const FoldTables& t) {
  uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const uint32_t h = uint32_t(t.value[code_at<Bits>(w, 2 * p)]) | uint32_t(t.value[code_at<Bits>(w, 2 * p + 1)]) << 16;
    out[p / 2] |= e4m3x2_of_f16x2(h, mul) << (16 * (p % 2));
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}
template <int Bits>
__device__ __forceinline__ uint4 fold16(GenericCodes<Bits>, const uint32_t (&w)[4], int shift, uint32_t,
                                        const FoldTables& t) {
  return fold16_mul<Bits>(w, pow2_f16x2(shift), t);
}
// m: the block scale's significand (BlockScaleParts). M * 2^shift is exact while 2^shift is an FP16
// normal; below (shift < -14) every element times it is under half E4M3's smallest subnormal: 0 either way.
template <int Bits>
__device__ __forceinline__ uint4 fold16(Ue4m3Codes<Bits>, const uint32_t (&w)[4], int shift, uint32_t m,
                                        const FoldTables& t) {
  return fold16_mul<Bits>(w, f16x2_mul(pow2_f16x2(shift), m), t);
}

// Every chunk takes the cvt, shift 0 too (it returns the codes, NaN as 0x7F): a branch around it cost more than the
// cvt saved on the chunks of a row's largest blocks (bench/prefill_notes.md v28).
__device__ __forceinline__ uint4 fold16(E4M3Codes, const uint32_t (&w)[4], int shift, uint32_t, const FoldTables&) {
  const uint32_t mul = pow2_f16x2(shift);
  uint32_t out[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    out[i] = e4m3x2_of_f16x2(ptx::cvt_rn_f16x2_e4m3x2(w[i]), mul) |
             e4m3x2_of_f16x2(ptx::cvt_rn_f16x2_e4m3x2<1>(w[i]), mul) << 16;
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// 8 E2M1 codes (a word, code 0 in the low nibble) -> 8 E4M3 codes (two words): magnitudes by prmt from
// the shift's table (selector nibbles are the codes' 3 magnitude bits), signs moved from bit 3 of each
// nibble to bit 7 of each byte (bytes of even codes from a << 4, odd codes from b, interleaved by prmt).
__device__ __forceinline__ uint2 e2m1x8_to_e4m3(uint32_t w, uint2 table) {
  const uint32_t mag = w & 0x77777777u;
  const uint32_t a = (w & 0x08080808u) << 4, b = w & 0x80808080u;
  return make_uint2(ptx::prmt_b32(table.x, table.y, mag) | ptx::prmt_b32(a, b, 0x5140),
                    ptx::prmt_b32(table.x, table.y, mag >> 16) | ptx::prmt_b32(a, b, 0x7362));
}

__device__ __forceinline__ uint4 fold16(E2M1Codes, const uint32_t (&w)[4], int shift, uint32_t, const FoldTables& t) {
  const uint2 table = t.e2m1[min(max(shift, kE2M1MinShift), kE2M1MaxShift) - kE2M1MinShift];
  const uint2 lo = e2m1x8_to_e4m3(w[0], table), hi = e2m1x8_to_e4m3(w[1], table);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}

// NVFP4 (E2M1 codes, UE4M3 scales): the 8 magnitudes times the block's multiplier M * 2^shift, in FP16 as the
// generic path computes each element, become the chunk's own E2M1 table (a 16-element chunk is one NVFP4 block),
// looked up as above: the same bits as fold16_mul, in ~25 instructions a chunk against ~60 (bench/prefill_notes.md
// v28). (Round to nearest even is odd-symmetric, so a magnitude's code with the sign set is the negative's.)
__device__ __forceinline__ uint4 fold16(Ue4m3Codes<4>, const uint32_t (&w)[4], int shift, uint32_t m,
                                        const FoldTables&) {
  constexpr uint32_t kMagnitudes[4] = {0x38000000u, 0x3E003C00u, 0x42004000u, 0x46004400u};  // {0, .5} .. {4, 6}
  const uint32_t mul = f16x2_mul(pow2_f16x2(shift), m);
  const uint2 table = make_uint2(e4m3x2_of_f16x2(kMagnitudes[0], mul) | e4m3x2_of_f16x2(kMagnitudes[1], mul) << 16,
                                 e4m3x2_of_f16x2(kMagnitudes[2], mul) | e4m3x2_of_f16x2(kMagnitudes[3], mul) << 16);
  const uint2 lo = e2m1x8_to_e4m3(w[0], table), hi = e2m1x8_to_e4m3(w[1], table);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}

// Builds FoldTables::e2m1 (kE2M1MaxShift - kE2M1MinShift + 1 entries) with the generic path's arithmetic.
__device__ __forceinline__ void build_e2m1_table(uint2* table, int tid, int nthreads) {
  for (int i = tid; i <= kE2M1MaxShift - kE2M1MinShift; i += nthreads) {
    const uint32_t mul = pow2_f16x2(i + kE2M1MinShift);
    uint32_t word[2] = {0, 0};
    for (uint32_t m = 0; m < 8; ++m) {
      const uint32_t h = __half_as_ushort(__float2half_rn(Element::minifloat(2, 1).decode(m)));
      word[m / 4] |= (e4m3x2_of_f16x2(h, mul) & 0xFF) << (8 * (m % 4));
    }
    table[i] = make_uint2(word[0], word[1]);
  }
}

// One chunk of 16 elements of a block-scaled row: codes in w (2*bits bytes, as load_codes16 leaves
// them; codes past the data are zero), block scale `sc`, row reference `ref`. A NaN block scale
// turns the `valid` elements in bounds into E4M3 NaN (and no others: a NaN past the sequence would
// reach rows through 0 * NaN).
template <typename Codes>
__device__ __forceinline__ uint4 fold_codes(Codes codes, const uint32_t (&w)[4], BlockScaleParts sc, int ref,
                                            const FoldTables& t, int valid) {
  if (sc.e == kE8M0Nan) {
    uint32_t o[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int n = valid - 4 * i;  // bytes of this word in bounds
      o[i] = n >= 4 ? kE4M3NanX4 : (n <= 0 ? 0u : kE4M3NanX4 >> (8 * (4 - n)));
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
  }
  return fold16(codes, w, int(sc.e) - ref, sc.m, t);
}

// The exact mode's V' (BF16): 16 elements of a block with scale `sc` and shift = e - R, as 16 BF16 values
// (value * M * 2^shift, from the code -> FP16 table; two 16-byte words, keys in order). The product is
// exact in FP32 and in BF16: at most 6 significant bits (E2M1 x a UE4M3 significand; BF16 keeps 8), and
// no larger than 448 (the headroom). Where the shift takes it below BF16's smallest subnormal (2^-133, a
// block over 120 binades under the row's largest) it rounds to 0.
template <int Bits>
__device__ __forceinline__ void fold16_bf16(const uint32_t (&w)[4], BlockScaleParts sc, int shift, const uint16_t* value,
                                            uint4 (&y)[2]) {
  const float mul = ldexpf(__half2float(__ushort_as_half(uint16_t(sc.m))), shift);
  uint32_t out[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float a = __half2float(__ushort_as_half(value[code_at<Bits>(w, 2 * i)])) * mul;
    const float b = __half2float(__ushort_as_half(value[code_at<Bits>(w, 2 * i + 1)])) * mul;
    const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);  // .x (low half): the lower key
    out[i] = *reinterpret_cast<const uint32_t*>(&v);
  }
  y[0] = make_uint4(out[0], out[1], out[2], out[3]);
  y[1] = make_uint4(out[4], out[5], out[6], out[7]);
}

__device__ __forceinline__ uint32_t max_bytes(uint32_t x) {
  x = __vmaxu4(x, x >> 16);
  x = __vmaxu4(x, x >> 8);
  return x & 0xFF;
}

// 2^(ref - 127): the factor a row folded with reference exponent `ref` carries, built from its bits
// (FP32 subnormals below 2^-126, 0 below 2^-149, Inf above 2^127).
// Selects, not branches (nested branches here were ~15 warp-instructions of each Q chunk; bench/prefill_notes.md v28).
__device__ __forceinline__ float fold_factor(int ref) {
  const uint32_t normal = uint32_t(min(ref, 255)) << 23, subnormal = 1u << min(max(22 + ref, 0), 31);
  return __uint_as_float(ref >= 1 ? normal : (ref > -23 ? subnormal : 0u));
}

}  // namespace mxattn::kernels::hopper
