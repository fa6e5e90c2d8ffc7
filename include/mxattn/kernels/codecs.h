// Element encoders for the GPU kernels.
//
// Every code the kernels write comes from Element::encode (format/element.h), either directly or
// through a faster route that a GPU test (tests/gpu/codec_test.cu) compares with Element::encode on
// all 2^32 - 2^24 non-NaN floats:
//   E4M3, E5M2: the conversion instruction cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 (sm_89+).
//   any other:  Hopper has no FP4/FP6 conversion; RNE onto the element's grid by adding a magic number
//               whose ulp is the grid's quantum at v (one FADD), then a table-free code (fma_encode).
//   pairs:      the same magic-add on two bf16 lanes at once (fma.rn.bf16x2) for E2M1, E2M3 and E3M2: BF16
//               inputs times a power of two (MX), or FP32 products rounded to odd bf16 (FP16 inputs,
//               NVFP4); codes packed by prmt and shifts.
// NaN inputs are outside that equivalence (the instruction keeps a NaN's sign); the kernels send any
// block that can produce a NaN product through Element::encode.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "mxattn/format/bits.h"
#include "mxattn/format/element.h"
#include "mxattn/format/scale.h"
#include "mxattn/ptx/cvt.h"

namespace mxattn::kernels {

// fma_encode's view of an element.
struct FmaEncode {
  bool is_int;
  uint8_t bits, man_bits;
  uint32_t lo;        // minifloat: biased float exponent of the element's emin
  uint32_t max_code;  // minifloat: largest finite magnitude code; INTn: the code mask
  float limit;        // minifloat: 2^(emax + 1); INTn: 2^(n-1) - 1
  float scale;        // INTn: 2^(n-2)
};
// Its constants for e: folded at compile time for a compile-time e, computed once per launch otherwise.
MXATTN_HD FmaEncode fma_encode_constants(Element e) {
  if (e.is_int()) return {true, e.bits, 0, 0, (1u << e.bits) - 1, float(e.mag_mask()), pow2f(e.bits - 2)};
  return {false, e.bits, e.man_bits, uint32_t(1 - e.bias() + 127), e.max_code(), pow2f(e.emax() + 1), 1.0f};
}

// The code of v for any element (minifloat EeMm or INTn), equal to e.encode(v) for every non-NaN v
// (tests/gpu/codec_test.cu compares them on every float for every element the library parses). No
// branch, no table; about ten instructions, most of them folded to constants for a compile-time e.
//   Minifloat: the quantum at |v| is q = 2^(B - m), B = max(binade of |v|, emin); adding
//   magic = 1.5 * 2^23 * q rounds |v| to a multiple of q (RNE, one FADD: q is the sum's ulp), and
//   n = bits(sum) - bits(magic) counts quanta. The code is n + (B - emin) << m: within a binade n is
//   2^m plus the mantissa, below emin (subnormals) n is the code itself, and n = 2^(m+1) (rounded up
//   out of the binade) lands on the next binade's first code by itself. |v| is first clamped at
//   2^(emax + 1), which keeps the sum in magic's binade (n <= 2^(m+1) < 2^22) and whose code is above
//   the largest finite one, so saturation (Inf included) is the final clamp; E4M3's NaN and E5M2's
//   Inf codes lie above max_code() too. Float subnormals get n = 0 whether or not the add flushes them.
//   INTn: v * 2^(n-2) is exact, clamped at +-(2^(n-1) - 1) (an integer, so before or after the
//   rounding is the same), rounded by the same add (RNE to an integer), two's complement in n bits.
MXATTN_HD uint32_t fma_encode(float v, const FmaEncode& k) {
  constexpr float kMagic1 = 12582912.0f;  // 1.5 * 2^23: its ulp is 1
  if (k.is_int) {
    const float x = fminf(fmaxf(v * k.scale, -k.limit), k.limit);
    return (float_bits(x + kMagic1) - float_bits(kMagic1)) & k.max_code;
  }
  const float a = fminf(fabsf(v), k.limit);
  const uint32_t ea = float_bits(a) >> 23;
  const uint32_t b = ea > k.lo ? ea : k.lo;
  const uint32_t magic = ((b + 23 - k.man_bits) << 23) | 0x400000u;
  const uint32_t code = float_bits(a + bits_float(magic)) - magic + ((b - k.lo) << k.man_bits);
  return ((float_bits(v) >> 31) << (k.bits - 1)) | (code < k.max_code ? code : k.max_code);
}
MXATTN_HD uint32_t fma_encode(float v, Element e) { return fma_encode(v, fma_encode_constants(e)); }

// ---- minifloats from bf16 pairs ----------------------------------------------------------------
// A 32-bit word holds two 16-bit lanes, element 2j in bits 0..15 (the order of a bf16x2 load). The
// quantize kernels encode two elements per instruction with these; tests/gpu/codec_test.cu compares
// them with Element::encode for every input they accept.

// fma.rn.bf16x2 d, a, b, c: per lane d = a * b + c rounded once to bf16 (RNE); PTX ISA "fma" (half
// precision); sm_80+. The host version computes the same exactly, for tests on the CPU.
MXATTN_HD uint32_t fma_rn_bf16x2(uint32_t a, uint32_t b, uint32_t c) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  uint32_t d = 0;
  for (int lane = 0; lane < 2; ++lane) {
    auto f = [&](uint32_t w) { return double(bits_float((w >> (16 * lane)) << 16)); };
    // The product of two 8-bit significands is exact in double; the sum is exact or off by far less
    // than a bf16 half-ulp from a value that is not a bf16 midpoint, so one more rounding is exact.
    const double x = f(a) * f(b) + f(c);
    const double ax = x < 0 ? -x : x;
    uint32_t bits;
    if (ax != ax) {
      bits = 0x7fc0u;
    } else if (ax >= 0x1.ffp127) {  // rounds to Inf (halfway to 2^128 and beyond)
      bits = 0x7f80u;
    } else {
      int e = 0;
      (void)std::frexp(ax, &e);                 // ax = f * 2^e, f in [0.5, 1)
      const int q = e - 8 < -133 ? -133 : e - 8;  // bf16 quantum: 8 significant bits, subnormals at 2^-133
      const double n = std::nearbyint(std::ldexp(ax, -q));  // ties to even (default rounding mode)
      bits = float_bits(float(std::ldexp(n, q))) >> 16;     // exact: n has at most 9 bits
    }
    if (std::signbit(x)) bits |= 0x8000u;
    d |= bits << (16 * lane);
  }
  return d;
#endif
}

// prmt.b32 d, a, b, sel: byte i of d is byte (sel >> 4i) & 7 of the pair {b, a} (a holds bytes 0..3);
// where bit 3 of that selector nibble is set, the byte's top bit replicated instead; PTX ISA "prmt".
MXATTN_HD uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const uint64_t pair = uint64_t(b) << 32 | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t s = (sel >> (4 * i)) & 0xF;
    uint32_t byte = uint32_t(pair >> (8 * (s & 7))) & 0xFF;
    if (s & 8) byte = byte & 0x80 ? 0xFF : 0x00;
    d |= byte << (8 * i);
  }
  return d;
#endif
}

// Per 16-bit lane unsigned min / max (min.u16x2 / max.u16x2, one instruction on sm_90).
MXATTN_HD uint32_t min_u16x2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vminu2(a, b);
#else
  const uint32_t lo = std::min(a & 0xffffu, b & 0xffffu), hi = std::min(a >> 16, b >> 16);
  return hi << 16 | lo;
#endif
}
MXATTN_HD uint32_t max_u16x2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vmaxu2(a, b);
#else
  const uint32_t lo = std::max(a & 0xffffu, b & 0xffffu), hi = std::max(a >> 16, b >> 16);
  return hi << 16 | lo;
#endif
}

inline constexpr uint32_t kBf16x2Abs = 0x7fff7fffu;  // clears both lanes' sign bits

// fma.rn.f16x2 d, a, b, c: per lane d = a * b + c rounded once to fp16 (RNE, subnormals kept); sm_53+.
__device__ __forceinline__ uint32_t fma_rn_f16x2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// Per lane a * b rounded once (RNE) on bf16x2 / f16x2 lanes of 32-bit words: one HMUL2.
__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
  const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
}
__device__ __forceinline__ uint32_t f16x2_mul(uint32_t a, uint32_t b) {
  const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// The 16-bit lanes the pair route runs on: bf16 (8 exponent bits, 7 mantissa bits) or fp16 (5 and 10,
// subnormals kept by its fma).
struct Bf16Lanes {
  static constexpr int kMant = 7, kBias = 127;
  static constexpr uint32_t kExpMask = 0x7f807f80u;
  MXATTN_HD static uint32_t fma(uint32_t a, uint32_t b, uint32_t c) { return fma_rn_bf16x2(a, b, c); }
};
struct F16Lanes {
  static constexpr int kMant = 10, kBias = 15;
  static constexpr uint32_t kExpMask = 0x7c007c00u;
  __device__ static uint32_t fma(uint32_t a, uint32_t b, uint32_t c) { return fma_rn_f16x2(a, b, c); }
};

// Per-block constants of minifloat_x2_magnitude for a block whose elements are multiplied by 2^k, for an
// element with M mantissa bits, in lanes L.
struct Pow2x2 {
  uint32_t mult;  // 2^k in both lanes: a normal bf16 (k in [-126, 127]); an fp16, subnormal below 2^-14 (k >= -24)
  uint32_t kmag;  // ((k + kMant - M) << kMant) + 2^(kMant - 1) as a signed 16-bit lane, both lanes
};
template <typename L = Bf16Lanes>
MXATTN_HD Pow2x2 pow2_x2_of(int man_bits, int k) {
  const uint32_t mult = k > -L::kBias ? uint32_t(k + L::kBias) << L::kMant : 1u << (k + L::kBias - 1 + L::kMant);
  const uint32_t kmag = uint32_t(((k + L::kMant - man_bits) << L::kMant) + (1 << (L::kMant - 1))) & 0xffffu;
  return {mult * 0x10001u, kmag * 0x10001u};
}
template <int M, typename L = Bf16Lanes>
MXATTN_HD Pow2x2 pow2_x2(int k) {
  return pow2_x2_of<L>(M, k);
}

// Magnitude codes of a minifloat with M mantissa bits (1..4) and smallest normal exponent Emin in the two
// lanes v = a * 2^k, for a = |x| as bf16 bits and |v| < 2^(emax + 1) (codes up to max_code + 1: clamp where
// that can happen). One rounding, as fma_encode's FADD:
//   B      = max(binade of v, Emin), read off a's exponent field plus k (integer add)
//   magic  = 1.5 * 2^7 * q, q = 2^(B - M) the element's quantum at v; its bf16 ulp is q, so one fma
//            a * 2^k + magic rounds |v| to a multiple of q, ties to even (magic / q = 192 is even), and
//            sum - magic = n = round(|v| / q) as bits (n <= 2^(M+1), so the sum stays below 256 q: no
//            carry out of magic's binade)
//   code   = n + (B - Emin) << M (fma_encode's count)
// In bits magic = ((B + 134 - M) << 7) | 0x40, so (B - Emin) << M = (magic >> (7 - M)) - C with
// C = ((Emin + 134 - M) << M) + 2^(M-1) (the 0x40 shifted down): code = sum - magic + (magic >> (7 - M)) - C
// in each lane. Word arithmetic is exact lane by lane: every lane's result is in [0, 2^16), and for
// M >= 1 the shift moves only zero bits of the high lane (below its 0x40) into the low one.
// Why a * 2^k inside the fma is exact: 2^k is a power of two, so a * 2^k only moves the exponent (the
// fma rounds once, after the add). A subnormal a, which the hardware may flush, has |v| < 2^(k - 126):
// for k <= 125 + Emin - M (minifloat_x2_max_k) that is at most half the smallest quantum, code 0 either
// way (the caller keeps k in that range). The exponent-field sum stays in signed 16-bit range for
// |v| < 2^(emax + 1) and k >= -126.
// FP16 lanes (L = F16Lanes): the same with 10 mantissa bits instead of 7 and bias 15 (magic's bits
// ((B + 25 - M) << 10) | 0x200). The fp16 fma keeps subnormals; a subnormal a's binade read off its exponent
// field is an upper bound, B = k - 15, which can exceed the true binade only where that is below Emin when
// k <= 15 + Emin (minifloat_x2_f16_max_k): then B = Emin either way. 2^k is an fp16 for k >= -24.

// The largest k for which minifloat_x2_magnitude is exact for element e (bf16 lanes: a flushed subnormal x;
// fp16 lanes: a subnormal x's binade), and fp16's smallest.
MXATTN_HD constexpr int minifloat_x2_max_k(Element e) { return 125 + (1 - e.bias()) - e.man_bits; }
MXATTN_HD constexpr int minifloat_x2_f16_max_k(Element e) { return 15 + (1 - e.bias()); }
inline constexpr int kMinifloatX2F16MinK = -24;

// Its constants for an element: magic at B = Emin and C in both lanes, and the shift L::kMant - M. Folded at
// compile time for the named elements; for a custom minifloat (CodecRuntime) computed once a launch.
struct MinifloatX2 {
  uint32_t lo, c;
  int shift;
};
template <typename L = Bf16Lanes>
MXATTN_HD constexpr MinifloatX2 minifloat_x2_constants(int man_bits, int emin) {
  const int off = L::kBias + L::kMant;  // magic's biased exponent is B + off - M
  const uint32_t lo = (uint32_t(emin + off - man_bits) << L::kMant) | (1u << (L::kMant - 1));
  const uint32_t c = (uint32_t(emin + off - man_bits) << man_bits) + (1u << (man_bits - 1));
  return {lo * 0x10001u, c * 0x10001u, L::kMant - man_bits};
}
template <typename L = Bf16Lanes>
MXATTN_HD uint32_t minifloat_x2_magnitude(uint32_t a, Pow2x2 s, const MinifloatX2& k) {
  const uint32_t magic = __viaddmax_s16x2(a & L::kExpMask, s.kmag, k.lo);
  const uint32_t sum = L::fma(a, s.mult, magic);
  return sum - magic + (magic >> k.shift) - k.c;
}
template <int M, int Emin, typename L = Bf16Lanes>
MXATTN_HD uint32_t minifloat_x2_magnitude(uint32_t a, Pow2x2 s) {
  static_assert(M >= 1 && M <= 4);
  constexpr MinifloatX2 k = minifloat_x2_constants<L>(M, Emin);
  return minifloat_x2_magnitude<L>(a, s, k);
}

// A 16-element group's codes of N bits (a minifloat's sign and N - 1 bits of magnitude) from its lane
// magnitude codes mag[j] (elements 2j, 2j+1; at most the largest code) and the signs in bit 15 of each lane of
// w[j], as the little-endian bit stream of pack.h: each lane's sign moved down to bit N - 1, the two lanes
// joined into 2N bits, eight such pieces at bits 2Nj.
template <int N>
MXATTN_HD void pack_lane_pairs(const uint32_t (&mag)[8], const uint32_t (&w)[8], uint32_t (&out)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) out[i] = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const uint32_t c = mag[j] | ((w[j] >> (16 - N)) & ((1u << (N - 1)) * 0x10001u));
    const uint32_t h = (c & 0xffffu) | (c >> 16) << N;
    const int bit = 2 * N * j;
    out[bit / 32] |= h << (bit % 32);
    if (bit % 32 + 2 * N > 32) out[bit / 32 + 1] |= h >> (32 - bit % 32);
  }
}

// Eight E2M1 codes as one little-endian nibble word (element i in bits 4i..4i+3) from four words of
// lane magnitudes mag[j] (elements 2j, 2j+1; each at most 7) and four words whose lanes carry the
// elements' signs in bit 15. Byte moves by prmt: T gathers the magnitude bytes [m0, m1, m2, m3], R the
// signs replicated over whole bytes, T | (R & 0x08) puts each sign on bit 3 of its nibble, N + N >> 4
// pairs neighbours into bytes 0 and 2 (a byte plus the next byte's nibble shifted up never carries:
// one instruction, lea.hi), a last prmt joins the two halves.
MXATTN_HD uint32_t pack_e2m1x8(const uint32_t (&mag)[4], const uint32_t (&sign)[4]) {
  uint32_t half[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t t = prmt_b32(mag[2 * h], mag[2 * h + 1], 0x6420);
    const uint32_t r = prmt_b32(sign[2 * h], sign[2 * h + 1], 0xFDB9);
    const uint32_t n = t | (r & 0x08080808u);
    half[h] = n + (n >> 4);
  }
  return prmt_b32(half[0], half[1], 0x6420);
}

// Two float products as a bf16x2 rounded to odd: truncated, and a lane whose dropped 16 bits are not
// all zero gets its last bit set. Rounding to odd at 8 significant bits, then to nearest at E2M1's
// at most 2, equals rounding v to nearest directly: every E2M1 midpoint (0.25, 0.75, ..., 5) and 6 is
// a bf16 with its last bit 0, so an inexact v lands on an odd bf16 strictly between the same two
// midpoints as v, never on one. The sign and Inf survive the truncation. (NaN is not handled.)
MXATTN_HD uint32_t bf16x2_round_to_odd(float lo, float hi) {
  const uint32_t l = float_bits(lo), h = float_bits(hi);
  const uint32_t truncated = prmt_b32(l, h, 0x7632), dropped = prmt_b32(l, h, 0x5410);
  return truncated | min_u16x2(dropped, 0x00010001u);
}

// ---- NVFP4 from bf16 pairs, version 5 ----------------------------------------------------------
// The NVFP4 packed route multiplies |x| by |S_enc / s| (the product's magnitude, exact as the
// reference's: IEEE products are sign-symmetric) and takes the sign from x and the multiplier. Blocks
// whose largest product amax * |S_enc / s| is below 7 (every block whose UE4M3 scale is a normal
// E4M3, since s is within 1/16 of amax * S_enc / 6) need no clamp at 6: the magic add below gives
// codes 0..7 for 0 <= v < 7.

// E2M1 magnitude codes of two non-negative bf16 lanes a (round to odd products, each below 7), as
// e2m1x2_magnitude with k = 0 but with no constant register: the fma computes magic + a as
// E * 96 + a, E = 2^max(e - 127, 0) the lane's binade (bits e << 7, at least 1.0), since
// magic = 1.5 * 2^7 * q = 96 E (q = E / 2: 0.5 below 2, 1 in [2, 4), 2 in [4, 7)); its bits are
// E + 0x340. code = sum - magic + (magic >> 6) - 267 = sum - E + (E >> 6) - 0x43e per lane (E's low 7
// bits are zero, so E >> 6 moves nothing across lanes, and word arithmetic is exact: each lane's
// result is in [0, 7]). For a < 7 the sum stays in magic's binade (at most 384 + 7 < 512).
MXATTN_HD uint32_t e2m1x2_magnitude_unit(uint32_t a) {
  const uint32_t e = max_u16x2(a & 0x7f807f80u, 0x3f803f80u);  // 1.0: the binade of every a < 2
  const uint32_t sum = fma_rn_bf16x2(e, 0x42c042c0u, a);        // 96 in both lanes
  return sum - e - 0x043e043eu + (e >> 6);
}

// min / max that return NaN when either input is NaN (min.NaN.f32 / max.NaN.f32; sm_80+).
MXATTN_HD float fmin_nan(float a, float b) {
#if defined(__CUDA_ARCH__)
  float d;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  return a != a || b != b ? quiet_nan() : std::fmin(a, b);
#endif
}
MXATTN_HD float fmax_nan(float a, float b) {
#if defined(__CUDA_ARCH__)
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  return a != a || b != b ? quiet_nan() : std::fmax(a, b);
#endif
}

// y / 6 rounded to nearest even, by a corrected reciprocal: q0 = y * RN(1/6), the remainder
// y - 6 q0 (exact in one fma), q = q0 + remainder * RN(1/6). Equal to the IEEE quotient for every
// finite y with |y| >= 2^-125 (checked on all of them, tests/gpu/codec_test.cu); below, the quotient
// is subnormal and may differ by its last bit, which no E4M3 code sees (|q| < 2^-127). The remainder
// is formed negated, -(6 q0 - y), so that y = -0 gives -0 (with y - 6 q0 it is +0, and so was q: the
// scale code 0x00 where encode gives 0x80). NaN stays NaN; Inf does not (the remainder is NaN):
// nvfp4_scale_code clamps first.
MXATTN_HD float div6_rn(float y) {
  const float r = bits_float(0x3e2aaaabu);  // RN(1/6)
#if defined(__CUDA_ARCH__)
  const float q0 = __fmul_rn(y, r);
  return __fmaf_rn(-__fmaf_rn(6.0f, q0, -y), r, q0);
#else
  const float q0 = y * r;
  return std::fma(-std::fma(6.0f, q0, -y), r, q0);
#endif
}

// The NVFP4 block scale code e4m3().encode(y / 6) for y = amax * S_enc, equal to
// cvt.rn.satfinite.e4m3(IEEE y / 6) for every float y, NaN included (0x7F); checked on all 2^32 in
// codec_test. The clamp at +-6 * 2^20 keeps Inf out of div6_rn and changes no code: every |q| >= 464
// saturates to 448 (0x7E, with y's sign).
__device__ __forceinline__ uint32_t nvfp4_scale_code(float y) {
  constexpr float kClamp = 6.0f * 1048576.0f;
  const float q = div6_rn(fmax_nan(fmin_nan(y, kClamp), -kClamp));
  return ptx::cvt_rn_satfinite_e4m3x2_f32(0.0f, q) & 0xffu;
}

// What choose_block_scale multiplies a block's amax by before it rounds to a UE4M3 code under RCEIL (1 /
// max_elem) or FLOOR (2^-emax), formed as it forms it.
MXATTN_HD float ue4m3_factor(const Element& e, ScaleRule rule) {
  return rule == ScaleRule::Floor ? pow2f(-e.emax()) : 1.0f / e.max_value();
}

// choose_block_scale's UE4M3 code for a finite block (amax >= 0) of any element and rule, S_enc the tensor
// scale (1 where there is none), factor = ue4m3_factor(e, rule), elem_max = e.max_value(). The reference's operand,
// formed as it forms it, rounded by the conversion instruction (equal to e4m3().encode on every non-NaN
// float and NaN's 0x7F, codec_test), then for RCEIL one code up where that code's value is below the operand
// (short of 448), for FLOOR one down where it is above (and never 0 for a non-zero block).
__device__ __forceinline__ uint32_t ue4m3_block_code(ScaleRule rule, float amax, float s_enc, float factor,
                                                     float elem_max) {
  if (rule == ScaleRule::Nvfp4) return ptx::cvt_rn_satfinite_e4m3x2_f32(0.0f, __fdiv_rn(__fmul_rn(amax, s_enc), elem_max)) & 0xffu;
  const float y = __fmul_rn(amax, factor);
  uint32_t c = ptx::cvt_rn_satfinite_e4m3x2_f32(0.0f, y) & 0xffu;
  const float v = __half2float(__ushort_as_half(uint16_t(ptx::cvt_rn_f16x2_e4m3x2(c))));  // exact: E4M3 in FP16
  if (rule == ScaleRule::Rceil) {
    if (v < y && c < 0x7eu) ++c;
  } else {
    if (v > y) --c;
    if (c == 0 && amax > 0.0f) c = 1;
  }
  return c;
}

enum class FastRoute : uint8_t { CvtE4M3, CvtE5M2, Fma };

// A compile-time element: the compiler folds its fields into Element::encode.
#define MXATTN_STATIC_ELEMENT(Name, expr, fast_route)                                   \
  struct Name {                                                                         \
    MXATTN_HD static constexpr Element elem() { return expr; }                          \
    static constexpr int kBits = 1 + (expr).exp_bits + (expr).man_bits;                 \
    static constexpr bool kStatic = true;                                               \
    static constexpr FastRoute kFast = fast_route;                                      \
    MXATTN_HD Element element() const { return elem(); }                                \
    MXATTN_HD int bits() const { return kBits; }                                        \
    MXATTN_HD FmaEncode fma_constants() const { return fma_encode_constants(elem()); }  \
  };

MXATTN_STATIC_ELEMENT(CodecE2M1, Element::minifloat(2, 1), FastRoute::Fma)
MXATTN_STATIC_ELEMENT(CodecE2M3, Element::minifloat(2, 3), FastRoute::Fma)
MXATTN_STATIC_ELEMENT(CodecE3M2, Element::minifloat(3, 2), FastRoute::Fma)
MXATTN_STATIC_ELEMENT(CodecE4M3, Element::minifloat(4, 3, Specials::NanOnly), FastRoute::CvtE4M3)
MXATTN_STATIC_ELEMENT(CodecE5M2, Element::minifloat(5, 2, Specials::Ieee), FastRoute::CvtE5M2)
#undef MXATTN_STATIC_ELEMENT

struct CodecInt8 {
  MXATTN_HD static constexpr Element elem() { return Element::integer(8); }
  static constexpr int kBits = 8;
  static constexpr bool kStatic = true;
  static constexpr FastRoute kFast = FastRoute::Fma;
  MXATTN_HD Element element() const { return elem(); }
  MXATTN_HD int bits() const { return kBits; }
  MXATTN_HD FmaEncode fma_constants() const { return fma_encode_constants(elem()); }
};

// Any element (custom EeMm, INTn), read from the kernel's parameters, with fma_encode's constants and, for
// minifloats of 1..4 mantissa bits and at most 8 bits, the pair route's (minifloat_x2_magnitude).
struct CodecRuntime {
  Element e;
  FmaEncode fma = fma_encode_constants(e);
  bool pairs = !e.is_int() && e.man_bits >= 1 && e.man_bits <= 4 && e.bits <= 8;
  MinifloatX2 bf16x2 = pairs ? minifloat_x2_constants<Bf16Lanes>(e.man_bits, 1 - e.bias()) : MinifloatX2{};
  MinifloatX2 f16x2 = pairs ? minifloat_x2_constants<F16Lanes>(e.man_bits, 1 - e.bias()) : MinifloatX2{};
  // FP16 lanes hold magic = 1.5 * 2^(B + 10 - M) for every binade B up to emax only where emax <= 5 + M, and 2^k
  // only for k <= 15 (the named elements meet both; e4m2 or e1m2 would not).
  bool pairs_f16 = pairs && e.emax() <= 5 + e.man_bits;
  uint32_t max_code2 = e.max_code() * 0x10001u;  // in both lanes
  int max_k = minifloat_x2_max_k(e);             // the pair route's scales 2^k: bf16 k <= max_k, fp16 k <= f16_max_k
  int f16_max_k = minifloat_x2_f16_max_k(e) < 15 ? minifloat_x2_f16_max_k(e) : 15;
  float inv_max = 1.0f / e.max_value();  // e8m0_block_scale's (format/scale.h), for any element
  int emax = e.emax();
  static constexpr int kBits = 0;
  static constexpr bool kStatic = false;
  static constexpr FastRoute kFast = FastRoute::Fma;
  MXATTN_HD Element element() const { return e; }
  MXATTN_HD int bits() const { return e.bits; }
  MXATTN_HD FmaEncode fma_constants() const { return fma; }
};

// 16 codes of N bits each as the little-endian bit stream of pack.h: code i at bits [iN, iN + N).
template <int N>
MXATTN_HD void pack_codes16(const uint32_t (&c)[16], uint32_t (&words)[4]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int bit = i * N;
    words[bit / 32] |= c[i] << (bit % 32);
    if (bit % 32 + N > 32) words[bit / 32 + 1] |= c[i] >> (32 - bit % 32);
  }
}

// The same for the codec's width: a compile-time one, or (custom elements) a switch over the widths.
template <typename Codec>
MXATTN_HD void pack_codes16(int bits, const uint32_t (&c)[16], uint32_t (&words)[4]) {
  if constexpr (Codec::kStatic) {
    pack_codes16<Codec::kBits>(c, words);
  } else {
    switch (bits) {
      case 2: pack_codes16<2>(c, words); break;
      case 3: pack_codes16<3>(c, words); break;
      case 4: pack_codes16<4>(c, words); break;
      case 5: pack_codes16<5>(c, words); break;
      case 6: pack_codes16<6>(c, words); break;
      case 7: pack_codes16<7>(c, words); break;
      default: pack_codes16<8>(c, words); break;
    }
  }
}

// Codes of 16 consecutive elements v[i] (scaled already), packed as the little-endian bit stream of
// pack.h into 2 * bits bytes: words[0] holds elements 0.., bits [32j, 32j + 32) in words[j].
// `fast`: take the codec's fast route. The caller guarantees that no v[i] is NaN and that v[i] is
// +0 for i >= valid (the fast routes encode +0 as code 0 and skip the masking).
template <typename Codec>
__device__ __forceinline__ void encode_pack16(const Codec& codec, const float (&v)[16], int valid, bool fast,
                                              uint32_t (&words)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) words[j] = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (Codec::kFast == FastRoute::CvtE4M3 || Codec::kFast == FastRoute::CvtE5M2) {
    if (fast) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float* x = &v[4 * j];
        const uint32_t lo = Codec::kFast == FastRoute::CvtE4M3 ? ptx::cvt_rn_satfinite_e4m3x2_f32(x[1], x[0])
                                                               : ptx::cvt_rn_satfinite_e5m2x2_f32(x[1], x[0]);
        const uint32_t hi = Codec::kFast == FastRoute::CvtE4M3 ? ptx::cvt_rn_satfinite_e4m3x2_f32(x[3], x[2])
                                                               : ptx::cvt_rn_satfinite_e5m2x2_f32(x[3], x[2]);
        words[j] = lo | hi << 16;
      }
      return;
    }
  }
#endif
  const Element e = codec.element();
  uint32_t c[16];
  if constexpr (Codec::kFast == FastRoute::Fma) {
    if (fast) {
#pragma unroll
      for (int i = 0; i < 16; ++i) c[i] = fma_encode(v[i], codec.fma_constants());
      pack_codes16<Codec>(codec.bits(), c, words);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < 16; ++i) c[i] = i < valid ? e.encode(v[i]) : 0u;
  pack_codes16<Codec>(codec.bits(), c, words);
}

}  // namespace mxattn::kernels
