// Quantize kernels: FP32/FP16/BF16 -> packed codes + block scales, bit-identical to
// reference/quantize.cpp. Three shapes of work, all encoding through encode_chunk:
//   rows:    the block axis is contiguous (Q, K, a KV cache). A thread takes a chunk of consecutive
//            elements (64 bytes of input: one MX block of a 16-bit input, two NVFP4 blocks; `lanes`
//            threads share a longer block through shuffles) and stores their codes and scale bytes. Large
//            contiguous tensors: the same per chunk, the chunks staged through shared memory a tile ahead.
//   tile:    the block axis is strided and the rows run contiguously (prefill V blocked along S): a CTA
//            transposes a 128-row x 64-column tile through shared memory, then encodes as rows.
//   columns: any other strided block axis. A thread takes a whole block, neighbouring threads take
//            neighbouring rows (= neighbouring addresses), and the block is read twice.
// Every block's scale comes from Format::block_scale (or a route tested equal to it) and every code from
// Element::encode or a route tested equal to it (codecs.h). Tiled scales: the kernels also write the zero
// padding.
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <optional>
#include <type_traits>

#include "mxattn/format/format.h"
#include "mxattn/kernels/codecs.h"
#include "mxattn/kernels/dependent_launch.h"
#include "mxattn/kernels/launchable.h"
#include "mxattn/kernels/quantize_kernels.h"
#include "mxattn/kernels/tensor_io.h"
#include "mxattn/ptx/cp_async.h"
#include "mxattn/ptx/griddep.h"
#include "mxattn/ptx/ldmatrix.h"

namespace mxattn::kernels {
namespace {

constexpr int kThreads = 256;

// Block b's scale of row r, and the tiled layout's zero columns after the row's last block.
__device__ __forceinline__ void store_scale(const QuantizeParams& p, uint32_t r, uint32_t b, uint32_t code) {
  const size_t cols = p.blocks;
  p.scales[scale_offset(p.layout, r, b, cols)] = uint8_t(code);
  if (p.layout == ScaleLayout::Tiled128x4 && b + 1 == p.blocks)
    for (size_t c = cols; c < tiled_cols(cols); ++c) p.scales[tiled_offset(r, c, cols)] = 0;
}

// ---- a chunk: consecutive elements of a row, in groups of 16 ----------------------------------------
// The rows kernel and the tile kernel both hand a thread a chunk of consecutive elements of one row as G
// groups of 16 raw input elements (rows: 64 bytes of input, 32 16-bit or 16 F32 elements; the tile kernel
// 32), and store what encode_chunk returns: G 16-element code streams (2 x bits bytes each) and the scale
// codes of the chunk's blocks. Routes, each giving Element::encode's codes (codecs.h, codec_test.cu):
//   pairs:      BF16 or FP16 input, E2M1, E2M3 or E3M2 under E8M0 or UE4M3 scales (NVFP4 among them): two
//               elements an instruction on bf16x2 or f16x2 lanes (minifloat_x2_magnitude): E8M0, x times 2^k
//               inside the fma; UE4M3, whose multiplier S_enc / s is any float, as FP32 products rounded to
//               odd bf16.
//   float:      x * mult in FP32, then cvt (E4M3, E5M2) or fma_encode (every other element).
//   exact:      Element::encode, for blocks whose products may be NaN (NaN or Inf inside) and
//               QuantizeOptions::fast_codecs = false.

// How a kernel instantiation knows the block scales: fixed at compile time where it can be.
enum class ScaleKind : uint8_t {
  E8m0,     // E8M0 scales on blocks of 32 (every MX format), RCEIL or FLOOR: the multipliers are 2^k
  E8m0K16,  // the same on blocks of 16 (custom .../k16/ue8m0)
  Nvfp4,    // NVFP4: E2M1 in blocks of 16, UE4M3 scales under an FP32 tensor scale S_enc
  Ue4m3K16, // UE4M3 scales of custom formats on E2M1, E2M3 or E3M2 (the pair route's elements), blocks of 16
  Ue4m3,    // the same on other blocks: block and rule read at run time
  Any,      // the rest (custom formats, the columns kernel): block, scale type and rule read at run time
};
template <ScaleKind S>
constexpr bool kUe4m3Kind = S == ScaleKind::Ue4m3K16 || S == ScaleKind::Ue4m3;

// log2 of the kernel's block (blocks are powers of two, 8 to 128: format.cpp).
template <ScaleKind S>
__device__ __forceinline__ int block_log2(const QuantizeParams& p) {
  if constexpr (S == ScaleKind::E8m0) return 5;
  if constexpr (S == ScaleKind::E8m0K16 || S == ScaleKind::Nvfp4 || S == ScaleKind::Ue4m3K16) return 4;
  return __ffs(p.format.block) - 1;
}

template <ScaleKind S>
__device__ __forceinline__ Format kernel_format(const QuantizeParams& p, const Element& e) {
  if constexpr (S == ScaleKind::E8m0) return {e, 32, ScaleType::E8M0, p.format.rule, false};
  if constexpr (S == ScaleKind::E8m0K16) return {e, 16, ScaleType::E8M0, p.format.rule, false};
  if constexpr (S == ScaleKind::Nvfp4) return {Element::minifloat(2, 1), 16, ScaleType::UE4M3, ScaleRule::Nvfp4, true};
  if constexpr (S == ScaleKind::Ue4m3K16) return {e, 16, ScaleType::UE4M3, p.format.rule, p.format.tensor_scale};
  if constexpr (S == ScaleKind::Ue4m3) return {e, p.format.block, ScaleType::UE4M3, p.format.rule, p.format.tensor_scale};
  return {e, p.format.block, p.format.scale, p.format.rule, p.format.tensor_scale};
}

// Elements the BF16 pair route takes with E8M0 scales: minifloats of 1 to 4 mantissa bits (E4M3 and E5M2
// have a conversion instruction).
template <typename Codec>
constexpr bool pair_codec() {
  if constexpr (Codec::kStatic && Codec::kFast == FastRoute::Fma)
    return !Codec::elem().is_int() && Codec::elem().man_bits >= 1 && Codec::elem().man_bits <= 4;
  return false;
}
template <typename Codec>
constexpr bool kPairCodec = pair_codec<Codec>();
// Inputs the pair routes take: 16-bit ones (F32 inputs have the bytes to spare for the float route).
template <DType T>
constexpr bool kPairInput = T == DType::BF16 || T == DType::F16;

struct ChunkBlock {
  uint32_t code;  // the scale byte
  float mult;     // the reference's multiplier (NaN for a block holding NaN or Inf)
  bool fast;      // the float route is exact for every element (no product is NaN)
  bool pairs;     // the pair route is exact for every element
  Pow2x2 pow2;    // E8M0 pairs: mult = 2^k
};

// S_enc / s for the UE4M3 code c, as choose_block_scale computes it (capped at FLT_MAX; 0 for s = 0 and
// for the NaN code, which the NVFP4 rule never picks for a finite block).
__device__ __forceinline__ float nvfp4_mult(uint32_t c, float s_enc) {
  const float s = decode_ue4m3(c);
  const float max_float = bits_float(0x7f7fffffu);
  const float mult = s > 0.0f ? s_enc / s : 0.0f;
  return mult < max_float ? mult : max_float;
}

// Kernels whose block scales may be UE4M3: they keep S_enc / s of every UE4M3 code in shared memory.
template <ScaleKind S>
constexpr int kMultTable = S == ScaleKind::Nvfp4 || kUe4m3Kind<S> || S == ScaleKind::Any ? 128 : 1;

// Whether the launch's blocks take their UE4M3 multipliers from that table (the same for every thread).
template <ScaleKind S>
__device__ __forceinline__ bool ue4m3_table(const QuantizeParams& p) {
  if constexpr (S == ScaleKind::Nvfp4 || kUe4m3Kind<S>) return true;
  return S == ScaleKind::Any && p.format.scale == ScaleType::UE4M3;
}

// S_enc (1 where the format has none) and, for UE4M3 scales, S_enc / s of every UE4M3 code into
// nv_mult[128], which the kernel reads after its next barrier.
template <ScaleKind S>
__device__ __forceinline__ float tensor_scale_and_table(const QuantizeParams& p, float* nv_mult) {
  float s_enc = 1.0f;
  if constexpr (S == ScaleKind::Nvfp4 || kUe4m3Kind<S> || S == ScaleKind::Any)
    if (p.format.tensor_scale) {
      ptx::griddep_wait();  // (QuantizeParams::after_amax; a no-op otherwise)
      s_enc = *p.tensor_scale;
    }
  if (ue4m3_table<S>(p) && threadIdx.x < 128) nv_mult[threadIdx.x] = nvfp4_mult(threadIdx.x, s_enc);
  return s_enc;
}

// One block's scale from the largest |x| bits of its elements (`key`, in the input's encoding).
template <DType T, typename Codec, ScaleKind S>
__device__ __forceinline__ ChunkBlock chunk_block(const QuantizeParams& p, const Codec& codec, const Format& f,
                                                  uint32_t key, float s_enc, const float* nv_mult) {
  using In = Input<T>;
  const bool nonfinite = key >= In::kInf;
  const float amax = In::key_to_float(key);
  if constexpr (S == ScaleKind::Nvfp4) {
    // e4m3().encode(amax * S_enc / 6): the IEEE quotient's code by a corrected reciprocal and the
    // conversion instruction (equal on every float, codec_test); the multiplier from a table of all 128
    // codes. The pair route takes blocks whose products stay below 7 (no clamp needed): not those with
    // NaN/Inf inside, nor saturated or subnormal scales whose products reach 7.
    const uint32_t c = nonfinite ? kUE4M3Nan : nvfp4_scale_code(__fmul_rn(amax, s_enc));
    const float mult = nv_mult[c & 0x7fu];
    const bool fast = !nonfinite && p.fast_codecs;
    return {c, nonfinite ? quiet_nan() : mult, fast, fast && __fmul_rn(amax, fabsf(mult)) < 7.0f, {}};
  } else {
    // (Any kernels of the pair route's elements never see UE4M3 scales: launch_for_scale.)
    if (kUe4m3Kind<S> ||
        (S == ScaleKind::Any && !kPairCodec<Codec> && nv_mult != nullptr && f.scale == ScaleType::UE4M3)) {
      // Custom formats' UE4M3 scales: choose_block_scale's code by the conversion instruction
      // (ue4m3_block_code, codecs.h), its multiplier from the table (nvfp4_mult: the reference's expression,
      // always finite). The Ue4m3 kernels' pair routes take E2M1 blocks whose products are below 7 as NVFP4's
      // (encode_pairs_nvfp4), and 6-bit blocks of a non-negative multiplier (S_enc may be negative) whose
      // products are below 2^(emax + 1) (encode_pairs_scaled).
      const uint32_t c = nonfinite ? kUE4M3Nan : ue4m3_block_code(f.rule, amax, s_enc, p.ue4m3_factor, p.elem_max);
      const float mult = nonfinite ? quiet_nan() : nv_mult[c & 0x7fu];
      const bool fast = !nonfinite && p.fast_codecs;
      bool pairs = false;
      if constexpr (kUe4m3Kind<S> && kPairInput<T> && Codec::kBits == 4)
        pairs = fast && __fmul_rn(amax, fabsf(mult)) < 7.0f;
      else if constexpr (kUe4m3Kind<S> && kPairInput<T>)
        pairs = fast && !(float_bits(mult) >> 31) && __fmul_rn(amax, mult) < pow2f(Codec::elem().emax() + 1);
      return {c, mult, fast, pairs, {}};
    }
    BlockScale s;
    if constexpr (std::is_same_v<Codec, CodecRuntime>) {
      s = f.scale == ScaleType::E8M0 && !nonfinite ? e8m0_block_scale(amax, f.rule, codec.inv_max, codec.emax)
                                                   : f.block_scale(amax, nonfinite, s_enc);
    } else {
      s = f.block_scale(amax, nonfinite, s_enc);
    }
    const bool fast = !nonfinite && is_finite_bits(s.mult) && p.fast_codecs;
    if constexpr (kPairInput<T> && kPairCodec<Codec>) {
      // E8M0 scales, 2^k in the input's type (codecs.h). BF16: a normal bf16, and k small enough that a
      // flushed subnormal x cannot matter; FP16: k small enough that a subnormal x's binade cannot matter
      // (blocks whose largest |x| is below about 2^-13 take the float route).
      constexpr int kM = Codec::elem().man_bits;
      const int k = 127 - int(s.code);
      if constexpr (T == DType::BF16) {
        const bool range = k >= -126 && k <= minifloat_x2_max_k(Codec::elem());
        return {s.code, s.mult, fast, fast && f.scale == ScaleType::E8M0 && range, pow2_x2<kM>(k)};
      } else {
        const bool range = k >= kMinifloatX2F16MinK && k <= minifloat_x2_f16_max_k(Codec::elem());
        return {s.code, s.mult, fast, fast && f.scale == ScaleType::E8M0 && range, pow2_x2<kM, F16Lanes>(range ? k : 0)};
      }
    }
    if constexpr (kPairInput<T> && std::is_same_v<Codec, CodecRuntime>) {
      // Custom minifloats under E8M0 scales: the same pair route with the element's constants at run time
      // (encode_pairs_runtime), the same k ranges.
      const int k = 127 - int(s.code);
      const bool e8m0 = fast && codec.pairs && f.scale == ScaleType::E8M0;
      if constexpr (T == DType::BF16) {
        const bool range = k >= -126 && k <= codec.max_k;
        return {s.code, s.mult, fast, e8m0 && range, pow2_x2_of<Bf16Lanes>(codec.e.man_bits, k)};
      } else {
        const bool range = codec.pairs_f16 && k >= kMinifloatX2F16MinK && k <= codec.f16_max_k;
        return {s.code, s.mult, fast, e8m0 && range, pow2_x2_of<F16Lanes>(codec.e.man_bits, range ? k : 0)};
      }
    }
    return {s.code, s.mult, fast, false, {}};
  }
}

// |x| of lane `hi` of a word of two 16-bit inputs, as a float (exact). BF16: the absolute value as the
// multiply's operand modifier, not a mask (one integer instruction fewer a lane).
template <DType T>
__device__ __forceinline__ float abs_lane(uint32_t w, int hi) {
  if constexpr (T == DType::BF16) return fabsf(bits_float(hi ? w & 0xffff0000u : w << 16));
  return fabsf(__half2float(__ushort_as_half(uint16_t(w >> (16 * hi)))));
}

// A 16-element group's codes from its lane magnitude codes mag[j] (elements 2j, 2j+1; at most max_code) and
// the signs in bit 15 of each lane of w[j]: E2M1 as two nibble words, 6-bit elements as three words.
template <typename Codec>
__device__ __forceinline__ void pack_pairs(const uint32_t (&mag)[8], const uint32_t (&w)[8], uint32_t (&out)[4]) {
  constexpr Element e = Codec::elem();
  if constexpr (e.bits == 4) {
    out[0] = pack_e2m1x8({mag[0], mag[1], mag[2], mag[3]}, {w[0], w[1], w[2], w[3]});
    out[1] = pack_e2m1x8({mag[4], mag[5], mag[6], mag[7]}, {w[4], w[5], w[6], w[7]});
  } else {
    static_assert(e.bits == 6);
    // Lane codes with the sign on bit 5 (x's bit 15 moved down 10), two lanes to 12 bits, four to 24.
    uint32_t u[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t h[2];
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        const uint32_t c = mag[2 * q + t] | ((w[2 * q + t] >> 10) & 0x00200020u);
        h[t] = (c | (c >> 10)) & 0xfffu;
      }
      u[q] = h[0] | h[1] << 12;
    }
    out[0] = u[0] | u[1] << 24;
    out[1] = u[1] >> 8 | u[2] << 16;
    out[2] = u[2] >> 16 | u[3] << 8;
  }
}

// E2M1 / E2M3 / E3M2 codes of a 16-element group of 16-bit words times 2^k (blk[q]: elements 8q..8q+7).
// Codes past the largest are clamped: FLOOR may round up to one (RCEIL never does, but a second copy of
// this code for RCEIL alone made MXFP6 10% slower on the H200: the clamp is one instruction a pair).
// |x| * 2^k inside the pair fma, on bf16x2 or f16x2 lanes. The sign is x's bit 15 in both.
template <typename Codec, DType T>
__device__ __forceinline__ void encode_pairs_mx(const uint32_t (&w)[8], const ChunkBlock* blk, uint32_t (&out)[4]) {
  constexpr Element e = Codec::elem();
  constexpr int kM = e.man_bits, kEmin = 1 - e.bias();
  uint32_t mag[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const ChunkBlock& b = blk[j / 4];
    using Lanes = std::conditional_t<T == DType::BF16, Bf16Lanes, F16Lanes>;
    mag[j] = minifloat_x2_magnitude<kM, kEmin, Lanes>(w[j] & kBf16x2Abs, b.pow2);
    mag[j] = min_u16x2(mag[j], e.max_code() * 0x10001u);
  }
  pack_pairs<Codec>(mag, w, out);
}

// The same for a custom minifloat of N bits (CodecRuntime::pairs), its constants read from the codec.
template <int N, DType T, int G>
__device__ __forceinline__ void encode_pairs_runtime(const CodecRuntime& codec, const uint32_t (&w)[G][8],
                                                     const ChunkBlock* blk, uint32_t (&out)[G][4]) {
  using Lanes = std::conditional_t<T == DType::BF16, Bf16Lanes, F16Lanes>;
  const MinifloatX2& k = T == DType::BF16 ? codec.bf16x2 : codec.f16x2;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    uint32_t mag[8];
#pragma unroll
    for (int j = 0; j < 8; ++j)
      mag[j] = min_u16x2(minifloat_x2_magnitude<Lanes>(w[g][j] & kBf16x2Abs, blk[2 * g + j / 4].pow2, k),
                         codec.max_code2);
    pack_lane_pairs<N>(mag, w[g], out[g]);
  }
}

// The same under UE4M3 scales (custom formats' 6-bit elements; E2M1 takes encode_pairs_nvfp4), whose
// multipliers are any non-negative float: the FP32 products |x| * mult, as the reference forms them (IEEE
// products are sign-symmetric), rounded once to odd bf16 (bf16x2_round_to_odd: exact for elements of at most
// 4 significant bits), then the pair magic add at k = 0 and the clamp. The caller sends blocks whose products
// are below 2^(emax + 1).
template <typename Codec, DType T>
__device__ __forceinline__ void encode_pairs_scaled(const uint32_t (&w)[8], const ChunkBlock* blk, uint32_t (&out)[4]) {
  constexpr Element e = Codec::elem();
  constexpr int kM = e.man_bits, kEmin = 1 - e.bias();
  uint32_t mag[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float m = blk[j / 4].mult;
    const uint32_t a = bf16x2_round_to_odd(__fmul_rn(abs_lane<T>(w[j], 0), m), __fmul_rn(abs_lane<T>(w[j], 1), m));
    mag[j] = min_u16x2(minifloat_x2_magnitude<kM, kEmin>(a, pow2_x2<kM>(0)), e.max_code() * 0x10001u);
  }
  pack_pairs<Codec>(mag, w, out);
}

// NVFP4 codes of a 16-element group of 16-bit words: the magnitudes of the reference's FP32 products,
// |x| * |S_enc / s|, rounded once to odd bf16 (exact for E2M1, codecs.h; every product is below 7, so no
// clamp); the sign is x's, flipped where the multiplier is negative (S_enc < 0).
template <DType T>
__device__ __forceinline__ void encode_pairs_nvfp4(const uint32_t (&w)[8], const ChunkBlock* blk, float s_enc,
                                                   uint32_t (&out)[4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float m = fabsf(blk[h].mult);
    uint32_t mag[4], sign[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t x = w[4 * h + j];
      mag[j] = e2m1x2_magnitude_unit(bf16x2_round_to_odd(__fmul_rn(abs_lane<T>(x, 0), m), __fmul_rn(abs_lane<T>(x, 1), m)));
      sign[j] = x;
    }
    out[h] = pack_e2m1x8(mag, sign);
  }
  // x * (S_enc / s) has the sign of x xor that of the multiplier, which is S_enc's, or +0 where s = 0
  // (FLT_MAX where S_enc is NaN): only a negative S_enc flips signs.
  if (float_bits(s_enc) >> 31) {
#pragma unroll
    for (int h = 0; h < 2; ++h) out[h] ^= uint32_t(int32_t(float_bits(blk[h].mult)) >> 31) & 0x88888888u;
  }
}

// Elements of group g of a chunk with `valid` elements.
__device__ __forceinline__ int group_valid(int valid, int g) {
  const int n = valid - kGroup * g;
  return n < 0 ? 0 : n > kGroup ? int(kGroup) : n;
}

// The codes of a chunk of G 16-element groups (w[g]: raw input bits of elements 16g..16g+15; elements at
// or past `valid` read as +0 and give zero bits) as G streams of 2 x bits bytes (codes[g]), and the scale
// codes of its blocks (scale[q]: the block of elements 8q..8q+7). `lanes` threads share a block longer
// than the chunk: every lane of the warp must call this then.
template <DType T, typename Codec, ScaleKind S, int G>
__device__ __forceinline__ void encode_chunk(const QuantizeParams& p, const Codec& codec,
                                             const uint32_t (&w)[G][Input<T>::kWords], int valid, float s_enc,
                                             const float* nv_mult, uint32_t lanes, uint32_t (&codes)[G][4],
                                             uint32_t (&scale)[2 * G]) {
  using In = Input<T>;
  constexpr int kE = 2 * G;  // entries of 8 elements
  const Format f = kernel_format<S>(p, codec.element());
  ChunkBlock blk[kE];
  if (f.block >= kGroup * G) {
    uint32_t key = abs_key<T>(w[0], 0, kGroup);
#pragma unroll
    for (int g = 1; g < G; ++g) key = max(key, abs_key<T>(w[g], 0, kGroup));
    for (uint32_t o = 1; o < lanes; o <<= 1) key = max(key, __shfl_xor_sync(0xffffffffu, key, o));
    blk[0] = chunk_block<T, Codec, S>(p, codec, f, key, s_enc, nv_mult);
#pragma unroll
    for (int q = 1; q < kE; ++q) blk[q] = blk[0];
  } else if (f.block == 16) {
#pragma unroll
    for (int g = 0; g < G; ++g)
      blk[2 * g] = blk[2 * g + 1] = chunk_block<T, Codec, S>(p, codec, f, abs_key<T>(w[g], 0, kGroup), s_enc, nv_mult);
  } else {
#pragma unroll
    for (int q = 0; q < kE; ++q)
      blk[q] = chunk_block<T, Codec, S>(p, codec, f, abs_key<T>(w[q / 2], 8 * (q % 2), 8), s_enc, nv_mult);
  }
  bool fast = true, pairs = true;
#pragma unroll
  for (int q = 0; q < kE; ++q) {
    scale[q] = blk[q].code;
    fast &= blk[q].fast;
    pairs &= blk[q].pairs;
  }

  bool done = false;
  if constexpr (kPairInput<T> && kUe4m3Kind<S>) {
    if (pairs) {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if constexpr (Codec::kBits == 4) encode_pairs_nvfp4<T>(w[g], blk + 2 * g, s_enc, codes[g]);
        else encode_pairs_scaled<Codec, T>(w[g], blk + 2 * g, codes[g]);
      }
      done = true;
    }
  } else if constexpr (kPairInput<T> && S != ScaleKind::Nvfp4 && kPairCodec<Codec>) {
    if (pairs) {
#pragma unroll
      for (int g = 0; g < G; ++g) encode_pairs_mx<Codec, T>(w[g], blk + 2 * g, codes[g]);
      done = true;
    }
  } else if constexpr (kPairInput<T> && S == ScaleKind::Nvfp4) {
    if (pairs) {
#pragma unroll
      for (int g = 0; g < G; ++g) encode_pairs_nvfp4<T>(w[g], blk + 2 * g, s_enc, codes[g]);
      done = true;
    }
  } else if constexpr (kPairInput<T> && std::is_same_v<Codec, CodecRuntime>) {
    // (A switch over the widths, so that the packing's shifts are immediates: e3m3/k32/ue8m0 from BF16 ran at
    // 58% of copy through the float route.)
    if (pairs) {
      switch (codec.bits()) {
        case 3: encode_pairs_runtime<3, T>(codec, w, blk, codes); break;
        case 4: encode_pairs_runtime<4, T>(codec, w, blk, codes); break;
        case 5: encode_pairs_runtime<5, T>(codec, w, blk, codes); break;
        case 6: encode_pairs_runtime<6, T>(codec, w, blk, codes); break;
        case 7: encode_pairs_runtime<7, T>(codec, w, blk, codes); break;
        default: encode_pairs_runtime<8, T>(codec, w, blk, codes); break;
      }
      done = true;
    }
  }
  if (!done) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float v[kGroup];
#pragma unroll
      for (int i = 0; i < kGroup; ++i) v[i] = In::element(w[g], i) * blk[2 * g + i / 8].mult;
      encode_pack16(codec, v, group_valid(valid, g), fast, codes[g]);
    }
  }
  if (valid < kGroup * G) {
    // Elements past the row's end read as +0, but +0 times a negative multiplier is -0 (a sign bit),
    // and the fast routes do not mask: zero their bits.
    const int bits = codec.bits();
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int n = group_valid(valid, g) * bits - 32 * j;  // valid bits in word j
        codes[g][j] &= n >= 32 ? 0xffffffffu : n <= 0 ? 0u : (1u << n) - 1;
      }
  }
}

// ---- along rows: a thread per chunk ----------------------------------------------------------------
// All loads of a chunk (two or four 16-byte loads for 16-bit inputs, eight for F32) go out before any
// use; the codes leave in 16-byte pieces where the row's bytes are aligned; the chunk's scale bytes in
// one store where they are neighbours (blocks of 16 or 8: tiled 128x4 groups of four, row-major rows).

struct RowsGrid {
  uint32_t tiles_per_row;  // tiled layout: tiled_cols(blocks) / 4
  uint32_t scale_end;      // blocks below it go out in one store per chunk (the last block may write padding)
  uint32_t lanes_log2;     // log2(p.lanes)
  bool tiled;
  bool dense;  // consecutive items' codes are consecutive in memory (whole chunks, one lane a block) and the
               // codes are 16-byte aligned
};

// Byte offset of block b's scale in row r: tiled_offset_u32 or the row-major offset.
__device__ __forceinline__ uint64_t rows_scale_offset(const QuantizeParams& p, const RowsGrid& g, uint32_t r, uint32_t b) {
  return g.tiled ? tiled_offset_u32(r, b, g.tiles_per_row) : uint64_t(r) * p.blocks + b;
}

// A chunk's two 16-element groups of N-bit codes (2N bytes each) as one little-endian stream of N words.
template <int N>
__device__ __forceinline__ void chunk_stream(const uint32_t (&codes)[2][4], uint32_t (&s)[N]) {
  constexpr int h = N / 2;  // a group's whole words; for odd N its next word holds its last 2 bytes
  if constexpr (N % 2 == 0) {
#pragma unroll
    for (int j = 0; j < N; ++j) s[j] = codes[j / h][j % h];
  } else {
#pragma unroll
    for (int j = 0; j < h; ++j) s[j] = codes[0][j];
    s[h] = (codes[0][h] & 0xffffu) | codes[1][0] << 16;
#pragma unroll
    for (int j = 1; j <= h; ++j) s[h + j] = codes[1][j - 1] >> 16 | codes[1][j] << 16;
  }
}

// The same stream (N odd) as N word stores at a 4-byte aligned dst.
template <int N>
__device__ __forceinline__ void store_odd_chunk(uint8_t* dst, const uint32_t (&codes)[2][4]) {
  uint32_t s[N];
  chunk_stream<N>(codes, s);
#pragma unroll
  for (int j = 0; j < N; ++j) __stcs(reinterpret_cast<unsigned int*>(dst) + j, s[j]);
}

// A warp's stage of 32 chunks of kW words each (st, in shared memory) out to base as 8 kW 16-byte pieces,
// consecutive lanes consecutive pieces.
template <int kW>
__device__ __forceinline__ void store_stage_pieces(uint8_t* base, const uint32_t* st) {
  const int lane = int(threadIdx.x % 32);
#pragma unroll
  for (int q = 0; q < (8 * kW + 31) / 32; ++q) {
    const int piece = q * 32 + lane;
    if (piece < 8 * kW) __stcs(reinterpret_cast<uint4*>(base) + piece, *reinterpret_cast<const uint4*>(st + 4 * piece));
  }
}

// A warp's 32 chunks of N-bit codes, one run of 4N bytes a chunk from base (lane 0's), through the warp's
// stage in shared memory (32 N words) and out as 16-byte pieces, consecutive lanes consecutive pieces. A
// thread's own bytes would leave as stores that each cover part of the sectors they touch.
template <int N>
__device__ __forceinline__ void store_warp_chunks(uint8_t* base, const uint32_t (&codes)[2][4], uint32_t* st) {
  uint32_t s[N];
  chunk_stream<N>(codes, s);
  const uint32_t lane = threadIdx.x % 32;
  if constexpr (N % 2 == 0) {
#pragma unroll
    for (int j = 0; j < N; j += 2) *reinterpret_cast<uint2*>(st + lane * N + j) = make_uint2(s[j], s[j + 1]);
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) st[lane * N + j] = s[j];  // lane stride N words, N odd: no bank conflicts
  }
  __syncwarp();
  store_stage_pieces<N>(base, st);
}

// A chunk's code bytes (nbytes of its 2 x G x bits) at dst: whole chunks of even-width static codecs as one
// stream in 16-byte pieces where dst allows; the rest group by group, as wide as the alignment allows.
template <typename Codec, int G>
__device__ __forceinline__ void store_chunk(uint8_t* dst, const uint32_t (&codes)[G][4], int bits, int nbytes) {
  if constexpr (Codec::kStatic && Codec::kBits % 2 == 0) {
    constexpr int kGW = Codec::kBits / 2, kW = G * kGW;  // words of a group, of a whole chunk
    if (nbytes == 4 * kW) {
      uint32_t s[kW];
#pragma unroll
      for (int j = 0; j < kW; ++j) s[j] = codes[j / kGW][j % kGW];
      const uintptr_t a = reinterpret_cast<uintptr_t>(dst);
      constexpr bool k8 = kW % 4 == 2;  // an 8-byte piece besides the 16-byte ones
      if (kW % 2 == 0 && (a % 16 == 0 || (k8 && a % 16 == 8))) {
        const int first = k8 && a % 16 == 8 ? 2 : 0;  // words stored 8 bytes before the 16-byte pieces
        if (first) __stcs(reinterpret_cast<uint2*>(dst), make_uint2(s[0], s[1]));
#pragma unroll
        for (int q = 0; q < kW / 4; ++q) {
          const int j = first + 4 * q;
          __stcs(reinterpret_cast<uint4*>(dst + 4 * j), make_uint4(s[j], s[j + 1], s[j + 2], s[j + 3]));
        }
        if (k8 && !first) __stcs(reinterpret_cast<uint2*>(dst + 4 * (kW - 2)), make_uint2(s[kW - 2], s[kW - 1]));
        return;
      }
    }
  }
  if constexpr (G == 2 && !Codec::kStatic) {
    // Odd widths (custom elements): group 1's stream starts 2 bytes into a word; a whole chunk's 4 x bits
    // bytes go out as bits aligned words rather than byte by byte.
    if (bits % 2 && nbytes == 4 * bits && reinterpret_cast<uintptr_t>(dst) % 4 == 0) {
      switch (bits) {
        case 3: return store_odd_chunk<3>(dst, codes);
        case 5: return store_odd_chunk<5>(dst, codes);
        case 7: return store_odd_chunk<7>(dst, codes);
      }
    }
  }
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const int n = std::min(nbytes - 2 * bits * g, 2 * bits);
    if (n > 0) store_bytes(dst + 2 * bits * g, codes[g], n);
  }
}

// An item of the rows kernels after its loads (w: the chunk's raw input, zero past the row's end and for pad
// rows): its codes and the scales of its blocks.
template <DType T, typename Codec, ScaleKind S>
__device__ __forceinline__ void rows_store(const QuantizeParams& p, const Codec& codec, const RowsGrid& g, uint64_t item,
                                           uint32_t r, uint32_t chunk, int valid,
                                           const uint32_t (&w)[chunk_elems(T) / kGroup][Input<T>::kWords], float s_enc,
                                           const float* nv_mult) {
  constexpr int kElems = chunk_elems(T), G = kElems / kGroup;
  uint32_t codes[G][4], scale[2 * G];
  encode_chunk<T, Codec, S, G>(p, codec, w, valid, s_enc, nv_mult, p.lanes, codes, scale);
  bool stored = false;
  if constexpr (Codec::kStatic && Codec::kBits % 2 == 0 && G * Codec::kBits > 8) {
    // Chunks of 24 or 32 code bytes: a thread's 16-byte stores would each cover half of its 32-byte sectors
    // (and L2 merges the halves). Where the warp's 32 chunks are one run of memory, they go through shared
    // memory and out as whole 512-byte rows of 16-byte pieces.
    constexpr int kW = G * Codec::kBits / 2;  // words a chunk
    __shared__ alignas(16) uint32_t stage[kThreads / 32][32 * kW];
    const uint32_t lane = threadIdx.x % 32;
    if (__all_sync(0xffffffffu, g.dense && r < p.rows && valid == kElems)) {
      uint32_t* st = stage[threadIdx.x / 32];
#pragma unroll
      for (int j = 0; j < kW; j += 2)  // 8-byte stores (kW is even)
        *reinterpret_cast<uint2*>(st + lane * kW + j) =
            make_uint2(codes[j / (kW / G)][j % (kW / G)], codes[(j + 1) / (kW / G)][(j + 1) % (kW / G)]);
      __syncwarp();
      uint8_t* const base = p.codes + (item - lane) * 4 * kW;  // lane 0's chunk
      store_stage_pieces<kW>(base, st);
      stored = true;
    }
  } else if constexpr (G == 2 && !Codec::kStatic) {
    // Run-time widths (custom elements), whose chunks store_chunk would store group by group: the same through
    // the width's store_warp_chunks.
    __shared__ alignas(16) uint32_t stage[kThreads / 32][32 * 8];
    if (__all_sync(0xffffffffu, g.dense && r < p.rows && valid == kElems)) {
      uint32_t* st = stage[threadIdx.x / 32];
      const int bits = codec.bits();
      uint8_t* const base = p.codes + (item - threadIdx.x % 32) * 4 * bits;  // lane 0's chunk
      stored = true;
      switch (bits) {
        case 2: store_warp_chunks<2>(base, codes, st); break;
        case 3: store_warp_chunks<3>(base, codes, st); break;
        case 4: store_warp_chunks<4>(base, codes, st); break;
        case 5: store_warp_chunks<5>(base, codes, st); break;
        case 6: store_warp_chunks<6>(base, codes, st); break;
        case 7: store_warp_chunks<7>(base, codes, st); break;
        case 8: store_warp_chunks<8>(base, codes, st); break;
        default: stored = false;
      }
    }
  }
  if (r >= p.rows_ext) return;
  const bool pad_row = r >= p.rows;  // a tiled layout's pad row: zero scales, no codes
  if (!pad_row && valid > 0 && !stored) {
    const int bits = codec.bits();
    const int64_t byte0 = int64_t(chunk) * 2 * G * bits;
    store_chunk<Codec, G>(p.codes + int64_t(r) * p.row_bytes + byte0, codes, bits,
                          int(std::min<int64_t>(2 * G * bits, p.row_bytes - byte0)));
  }

  // Scales: a block as long as the chunk or longer by its first lane; shorter ones two or four a chunk.
  // Blocks and lanes are powers of two: shifts and masks, not divisions (run-time blocks and lanes).
  const int block = kernel_format<S>(p, codec.element()).block, lg = block_log2<S>(p);
  if (block >= kElems && (chunk & (p.lanes - 1)) != 0) return;
  const int nb = block >= kElems ? 1 : kElems >> lg;  // 1, 2 or 4
  const uint32_t b0 = block >= kElems ? chunk >> g.lanes_log2 : chunk * nb;
  if (b0 >= p.blocks) return;
  uint32_t bytes = 0;  // block b0 + i's code in byte i (scale[q]: the block of elements 8q..8q+7)
#pragma unroll
  for (int q = 0; q < 2 * G; ++q)
    if ((q * 8 & (block - 1)) == 0 && (q * 8 >> lg) < 4) bytes |= (pad_row ? 0u : scale[q]) << (8 * (q * 8 >> lg));
  const uint64_t o = rows_scale_offset(p, g, r, b0);
  if (b0 + nb <= g.scale_end && (reinterpret_cast<uintptr_t>(p.scales + o) & (nb - 1)) == 0) {
    if (nb == 1) p.scales[o] = uint8_t(bytes);
    else if (nb == 2) *reinterpret_cast<uint16_t*>(p.scales + o) = uint16_t(bytes);
    else *reinterpret_cast<uint32_t*>(p.scales + o) = bytes;
    return;
  }
  for (int i = 0; i < nb && b0 + i < p.blocks; ++i) store_scale(p, r, b0 + i, (bytes >> (8 * i)) & 0xffu);
}

template <DType T, typename Codec, ScaleKind S>
__global__ void __launch_bounds__(kThreads)
    quantize_rows_kernel(const QuantizeParams p, const Codec codec, const RowsGrid g) {
  constexpr int W = Input<T>::kWords, kElems = chunk_elems(T), G = kElems / kGroup;
  const uint64_t item = uint64_t(blockIdx.x) * kThreads + threadIdx.x;
  uint32_t r = 0xffffffffu, chunk = 0;
  if (item < p.items) p.chunks_padded.divmod(uint32_t(item), r, chunk);
  const int64_t c0 = int64_t(chunk) * kElems;
  const int valid = int(std::clamp<int64_t>(p.cols - c0, 0, kElems));
  uint32_t w[G][W];
  if (r < p.rows && valid > 0) {  // every load in flight before the first use
    const int64_t off = p.row.dims == 1 ? int64_t(r) * p.row.stride[0] : p.row.offset(r);  // (the same value)
#pragma unroll
    for (int q = 0; q < G; ++q) load_group<T, true>(p.x, off, c0 + kGroup * q, p.cols, 1, p.vec_load, w[q]);
  } else {
#pragma unroll
    for (int q = 0; q < G; ++q)
#pragma unroll
      for (int j = 0; j < W; ++j) w[q][j] = 0;
  }
  // S_enc and (UE4M3 scales) the table built from it come after the data loads, so that those are in flight.
  __shared__ float nv_mult[kMultTable<S>];
  const float s_enc = tensor_scale_and_table<S>(p, nv_mult);
  if (ue4m3_table<S>(p)) __syncthreads();

  rows_store<T, Codec, S>(p, codec, g, item, r, chunk, valid, w, s_enc, nv_mult);
}

// The rows kernel over a contiguous input with whole chunks (RowsGrid::dense, rows one after another): the
// input is one run of 64-byte chunks, and a CTA takes kStagedSpan tiles of kThreads chunks (16 KB each), the
// next tile's cp.async copies in flight while this one is encoded (the rows kernel's loads leave nothing in
// flight while its warps encode: MXFP6 and NVFP4 from 16-bit inputs ran at 85% and 73% of copy). The last
// wave's worth of tiles goes to CTAs of kStagedTailSpan tiles, launched last, so that the SMs end together: with
// every CTA of 8 tiles the last ones ran alone for up to a CTA's time (H200, BF16 tiled, % of copy, 8-tile CTAs
// against the tail: 256 MiB MXFP6 86 -> 87.5, MXFP4 91.5 -> 93, NVFP4 79 -> 79.5-80.5; 1 GiB MXFP6 93.5 -> 94.5,
// MXFP8 97.5 -> 98.7; bench/quantize_notes.md). For tensors of at least a wave of 8-tile CTAs (128 MiB and up
// there, where it beats the direct kernel for every named format: 128 MiB MXFP6 78.5 -> 82, NVFP4 71 -> 77.5),
// and for the heavier encoders from half of that (launch: kHeavy); at 64 MiB the direct kernel is as
// fast or faster for MXFP4 and MXFP8 (81 / 90 against 79-81 / 88-90). A CTA
// that walked tile after tile until the tensor ran out (as many CTAs as fit) lost 4-7% for MXFP4 and MXFP6: the
// per-tile barrier keeps a CTA's warps in step. A chunk's four 16-byte
// pieces sit in shared memory with piece q of chunk i at slot 4 i + (q ^ (i / 2 mod 4)): the copies' and the
// reads' quarter-warps each meet the eight 16-byte bank groups once.
constexpr uint32_t kStagedSpan = 8, kStagedTailSpan = 4;
// The staged kernel's grid: CTAs [0, long_ctas) take kStagedSpan tiles each, the rest tail_span tiles.
struct StagedSpans {
  uint32_t tiles, long_ctas, tail_span;
};
// (At least four CTAs an SM, the occupancy its tail spans were measured at: 64 registers at most. Unbounded, the
// run-time element's kernels took 79, three CTAs an SM.)
template <DType T, typename Codec, ScaleKind S>
__global__ void __launch_bounds__(kThreads, 4)
    quantize_rows_staged_kernel(const QuantizeParams p, const Codec codec, const RowsGrid g, StagedSpans spans) {
  constexpr int W = Input<T>::kWords, kElems = chunk_elems(T), G = kElems / kGroup, kPieces = kThreads * 4;
  extern __shared__ uint4 dyn_smem[];  // two tiles of kThreads chunks x 4 pieces
  const uint8_t* const x = static_cast<const uint8_t*>(p.x);
  const uint64_t in_bytes = uint64_t(p.rows) * p.chunks * 64;  // pad rows' items read as zero
  // Piece u = threadIdx.x + k * kThreads of a tile goes to slot 4 i + (q ^ (i / 2 mod 4)), i = u / 4, q = u % 4:
  // since kThreads / 4 is a multiple of 8, that is this thread's slot for k = 0 plus k * kThreads.
  static_assert(kThreads % 32 == 0, "a thread's four pieces a tile at slots kThreads apart");
  const int slot0 = 4 * int(threadIdx.x / 4) + int((threadIdx.x % 4) ^ ((threadIdx.x / 8) & 3));
  auto load = [&](uint32_t tile, int buf) {
    uint4* const dst = &dyn_smem[buf * kPieces + slot0];
    const uint64_t tile_byte = uint64_t(tile) * kPieces * 16;
    if (tile_byte + kPieces * 16 <= in_bytes) {
      // (Every tile but perhaps the tensor's last: no bounds checks, the four sources at constant offsets. With a
      // check a copy, the copies' addressing took 57 instructions a tile, a tenth of NVFP4's.)
      const uint8_t* const src = x + tile_byte + threadIdx.x * 16;
#pragma unroll
      for (int k = 0; k < 4; ++k) ptx::cp_async_cg_16(dst + k * kThreads, src + k * kThreads * 16, true);
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint64_t byte = tile_byte + (threadIdx.x + k * kThreads) * 16;
        ptx::cp_async_cg_16(dst + k * kThreads, x + (byte < in_bytes ? byte : 0), byte < in_bytes);
      }
    }
    ptx::cp_async_commit_group();
  };
  const uint32_t tail = blockIdx.x - spans.long_ctas;  // (wraps for the long CTAs)
  const uint32_t first = blockIdx.x < spans.long_ctas ? blockIdx.x * kStagedSpan
                                                      : spans.long_ctas * kStagedSpan + tail * spans.tail_span;
  const uint32_t end =
      std::min<uint32_t>(first + (blockIdx.x < spans.long_ctas ? kStagedSpan : spans.tail_span), spans.tiles);
  load(first, 0);

  __shared__ float nv_mult[kMultTable<S>];
  const float s_enc = tensor_scale_and_table<S>(p, nv_mult);

  const int i = threadIdx.x;
  int buf = 0;
  for (uint32_t tile = first; tile < end; ++tile, buf ^= 1) {
    ptx::cp_async_wait_group<0>();
    __syncthreads();  // this tile's copies have landed, and every thread is done with the other buffer
    if (tile + 1 < end) load(tile + 1, buf ^ 1);
    const uint64_t item = uint64_t(tile) * kThreads + i;
    uint32_t r = 0xffffffffu, chunk = 0;
    if (item < p.items) p.chunks_padded.divmod(uint32_t(item), r, chunk);
    uint32_t w[G][W];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint4 v = dyn_smem[buf * kPieces + 4 * i + (q ^ ((i >> 1) & 3))];
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) w[(4 * q + j) / W][(4 * q + j) % W] = words[j];
    }
    rows_store<T, Codec, S>(p, codec, g, item, r, chunk, kElems, w, s_enc, nv_mult);
  }
}

template <DType T, typename Codec>
__global__ void __launch_bounds__(kThreads) quantize_columns_kernel(const QuantizeParams p, const Codec codec) {
  constexpr int W = Input<T>::kWords;
  const uint32_t item = blockIdx.x * kThreads + threadIdx.x;
  if (item >= p.items) return;
  uint32_t b, r;
  p.rows_ext_div.divmod(item, b, r);
  if (r >= p.rows) {
    store_scale(p, r, b, 0);
    return;
  }
  if (p.format.tensor_scale) ptx::griddep_wait();  // (QuantizeParams::after_amax)
  const float s_enc = p.format.tensor_scale ? *p.tensor_scale : 1.0f;
  const int bits = codec.bits();
  const int64_t off = p.row.offset(r);
  const int64_t c0 = int64_t(b) * p.format.block;
  const int64_t end = std::min<int64_t>(p.cols, c0 + p.format.block);

  uint32_t key = 0;
  for (int64_t c = c0; c < end; c += kGroup) {
    uint32_t w[W];
    load_group<T, false>(p.x, off, c, end, p.col_stride, false, w);
    key = max(key, abs_key<T>(w, 0, kGroup));
  }
  const ChunkBlock bc =
      chunk_block<T, Codec, ScaleKind::Any>(p, codec, kernel_format<ScaleKind::Any>(p, codec.element()), key, s_enc, nullptr);

  uint8_t* out = p.codes + int64_t(r) * p.row_bytes;
  for (int64_t c = c0; c < end; c += kGroup) {
    uint32_t w[W];
    load_group<T, false>(p.x, off, c, end, p.col_stride, false, w);
    float v[kGroup];
#pragma unroll
    for (int i = 0; i < kGroup; ++i) v[i] = Input<T>::element(w, i) * bc.mult;
    const int valid = int(std::min<int64_t>(kGroup, end - c));
    uint32_t words[4];
    encode_pack16(codec, v, valid, bc.fast, words);
    // Blocks are whole bytes (block * bits is a multiple of 8), so this thread owns these bytes.
    store_bytes(out + c * bits / 8, words, (valid * bits + 7) / 8);
  }
  store_scale(p, r, b, bc.code);
}

// ---- along columns through shared memory (prefill V) ----------------------------------------------
// The columns kernel reads a block element by element, twice (2-byte loads at the column stride): ~20% of
// copy. Where the rows are contiguous in runs of kTileRows (V [B, S, H, D] blocked along S: rows (b, h, d),
// h and d contiguous), a CTA takes kTileRows rows x kSpanCols columns in steps of kTileCols:
//   load:   each step's columns come by cp.async (16 bytes of a column's run of rows a thread; a warp reads
//           two columns' 256 contiguous bytes of BF16) into one of two column-major buffers, the next step's
//           copies in flight while this one is encoded;
//   encode: a thread per (row, 32-column chunk) reads its row down the columns and encodes it as the rows
//           kernel does: 16-bit inputs by four ldmatrix.trans (column pairs of a warp's 32 rows; 32 two-byte
//           loads and 16 packing instructions a chunk before, of an issue-bound kernel), F32 element by element
//           (consecutive threads, consecutive rows: no bank conflicts);
//   codes:  through shared memory, each row's codes out in 16-byte pieces, neighbouring threads' pieces
//           neighbours in memory, every flush_steps(bits) steps: 64 bytes a row at 4 and 8 bits, 96 at 6
//           (whole 32-byte sectors: one step's 32 or 48 bytes a row took 1.2x the L2 fabric's time of a copy
//           of the same bytes, and 16-byte stores each covered half a sector);
//   scales: gathered in shared memory over the span and written at its end as whole words: a 128 x 4 tile
//           of the tiled layout is 512 contiguous bytes, a row-major row's span kSpanCols / block bytes.
// Spans whose rows and columns are all inside the tensor (nearly all of a large one) run a loop without
// bounds checks and with each thread's addresses stepped by constants (the checked loop spent ~100
// instructions a step on its four copies alone).
// Blocks of 8, 16 or 32 columns; elements of 4, 6 or 8 bits (a group's codes are whole 32-bit words).
constexpr int kTileRows = 128, kTileCols = 64, kTileChunk = 32, kSpanSteps = 8, kSpanCols = kTileCols * kSpanSteps;
constexpr int kScaleStride = kSpanCols / 8 + 4;  // bytes of a row's span scales (blocks of 8 at most), +4 for the banks
__host__ __device__ constexpr int flush_steps(int bits) { return bits == 8 ? 1 : 2; }
constexpr int kStageWords = flush_steps(6) * kTileCols * 6 / 32 + 1;  // a row's codes of one flush at most, +1 for the banks

struct TileGrid {
  uint32_t spans;  // CTAs along the columns per row tile
  bool staged;     // the codes leave through shared memory (16-byte aligned rows and codes)
  bool words;      // the scales leave as 32-bit words (tiled: the scales 4-byte aligned; row-major: rows too)
};

template <DType T>
constexpr int tile_smem_bytes() {
  return 2 * kTileCols * kTileRows * int(sizeof(typename Input<T>::type));
}

// At most 64 registers, four CTAs an SM (their shared memory fits four at 16-bit inputs; E3M2 took 74).
template <DType T, typename Codec, ScaleKind S>
__global__ void __launch_bounds__(kThreads, 4) quantize_tile_kernel(const QuantizeParams p, const Codec codec,
                                                                 const TileGrid g) {
  using In = Input<T>;
  using E = typename In::type;
  constexpr int C = kTileCols, W = In::kWords, kVec = 16 / sizeof(E), kVecsPerCol = kTileRows / kVec;
  constexpr int kLoads = C * kVecsPerCol / kThreads;
  static_assert(C * kVecsPerCol % kThreads == 0 && kTileRows * C == kTileChunk * kThreads);
  extern __shared__ uint4 dyn_smem[];
  E(*tile)[C][kTileRows] = reinterpret_cast<E(*)[C][kTileRows]>(dyn_smem);  // two buffers
  __shared__ uint32_t codes_out[kTileRows][kStageWords];
  __shared__ alignas(4) uint8_t scale_out[kTileRows][kScaleStride];
  __shared__ float nv_mult[kMultTable<S>];  // S_enc / s for every UE4M3 code

  const uint32_t rt = blockIdx.x / g.spans, span = blockIdx.x % g.spans;
  const uint32_t r0 = rt * kTileRows;
  const int64_t cs = int64_t(span) * kSpanCols;  // the span's first column
  const int steps = int(std::min<int64_t>(kSpanSteps, (p.cols - cs + C - 1) / C));
  const bool full = g.staged && r0 + kTileRows <= p.rows && cs + kSpanCols <= p.cols;
  const uint8_t* x = static_cast<const uint8_t*>(p.x) + (r0 < p.rows ? p.row.offset(r0) : 0) * int64_t(sizeof(E));

  // A thread's copies: rows rowv .. rowv + kVec - 1 of columns col0 + l * kColStep of each step (nothing read
  // where a column is past the end: the piece is zero-filled; fewer rows at the last rows of one run).
  constexpr int kColStep = kThreads / kVecsPerCol;
  const int col0 = threadIdx.x / kVecsPerCol, rowv = threadIdx.x % kVecsPerCol * kVec;
  // 16-bit inputs: column c's rows at rows ^ (c odd ? kSwizzle : 0), so that the eight 16-byte rows of an
  // ldmatrix (two columns, four pieces each, below) fall on eight different bank groups. (The copies' columns
  // col0 + l * kColStep have col0's parity.)
  constexpr int kSwizzle = W == 8 ? 32 : 0;
  static_assert(kColStep % 2 == 0);
  const int rowv_at = rowv ^ (col0 % 2 * kSwizzle);
  const int row_bytes_in = int(std::clamp<int64_t>(int64_t(p.rows) - r0 - rowv, 0, kVec)) * int(sizeof(E));
  const int64_t col_bytes = p.col_stride * int64_t(sizeof(E));
  const uint8_t* src0 = x + rowv * int64_t(sizeof(E)) + (cs + col0) * col_bytes;
  auto load_step = [&](int step, auto full_tag) {
    const uint8_t* src = src0 + int64_t(step) * C * col_bytes;
    if constexpr (decltype(full_tag)::value) {
#pragma unroll
      for (int l = 0; l < kLoads; ++l)
        ptx::cp_async_cg_16(&tile[step % 2][col0 + l * kColStep][rowv_at], src + l * kColStep * col_bytes, true);
    } else {
      const int64_t left = p.cols - (cs + int64_t(step) * C + col0);  // columns from this thread's first on
#pragma unroll
      for (int l = 0; l < kLoads; ++l) {
        const bool in = l * kColStep < left;
        E* dst = &tile[step % 2][col0 + l * kColStep][rowv_at];
        if (row_bytes_in == 16 || row_bytes_in == 0) {
          ptx::cp_async_cg_16(dst, in ? src + l * kColStep * col_bytes : x, in && row_bytes_in);
        } else {  // the last rows of one run: element by element (a partial cp.async may read all 16 bytes)
          const E* e = reinterpret_cast<const E*>(src + l * kColStep * col_bytes);
          for (int j = 0; j < kVec; ++j) dst[j] = in && j * int(sizeof(E)) < row_bytes_in ? e[j] : E(0.0f);
        }
      }
    }
    ptx::cp_async_commit_group();
  };
  if (full) load_step(0, std::true_type{});
  else load_step(0, std::false_type{});

  // Scales of blocks no row of this CTA encodes (pad rows, past the last column) stay zero.
  for (int i = threadIdx.x; i < kTileRows * kScaleStride / 4; i += kThreads)
    reinterpret_cast<uint32_t*>(scale_out)[i] = 0;
  const float s_enc = tensor_scale_and_table<S>(p, nv_mult);

  // A thread's row and chunk: 16-bit inputs take their rows by ldmatrix.trans, each lane l of a warp's 32 rows
  // 8 (l % 4) + l / 4 of them; F32 a row a thread, down the column.
  const int lane = threadIdx.x % 32, chunk = threadIdx.x / kTileRows, rows32 = threadIdx.x / 32 % 4 * 32;
  const int row = W == 8 ? rows32 + 8 * (lane % 4) + lane / 4 : threadIdx.x % kTileRows;
  // ldmatrix.trans's x4: lane l gives row l % 8 of matrix l / 8, matrix q the columns 2q and 2q + 1 of eight
  // (of the chunk's 32), rows rows32 + 8j + (0..7) of its rows 2j and 2j + 1, and returns in register q row
  // rows32 + 8 (l % 4) + l / 4 of those two columns: four matrices, 8 columns of the lane's row in pairs.
  const int lm_col = chunk * kTileChunk + 2 * (lane / 8) + lane % 2;
  const int lm_at = lm_col * kTileRows + ((rows32 + 8 * (lane % 8 / 2)) ^ (lm_col % 2 * kSwizzle));
  const int block = kernel_format<S>(p, codec.element()).block, lg = block_log2<S>(p), bits = codec.bits();
  const int fs = flush_steps(bits), step_words = C * bits / 32;
  const uint32_t r = r0 + row;

  // The codes of steps first .. last out: each row's bytes in 16-byte pieces (row_bytes and the codes 16-byte
  // aligned, so each row's share is whole pieces), a warp's pieces consecutive along rows.
  auto flush = [&](int first, int last, auto full_tag) {
    constexpr bool kFull = decltype(full_tag)::value;
    const int64_t byte0 = (cs + int64_t(first) * C) * bits / 8;
    const int pieces = kFull ? fs * C * bits / 128
                             : int(std::min<int64_t>((last - first + 1) * C * bits / 8, p.row_bytes - byte0) / 16);
    uint8_t* const out = p.codes + int64_t(r0) * p.row_bytes + byte0;
    if constexpr (kFull) {
      // Two threads a row, each the even or the odd pieces: a store's neighbouring lanes fill a sector.
      static_assert(kThreads == 2 * kTileRows);
      const int rr = threadIdx.x / 2, half = threadIdx.x % 2;
      uint4* const dst = reinterpret_cast<uint4*>(out + int64_t(rr) * p.row_bytes) + half;
      const uint32_t* src = &codes_out[rr][4 * half];
      for (int k = 0; k < pieces / 2; ++k)
        __stcs(dst + 2 * k, make_uint4(src[8 * k], src[8 * k + 1], src[8 * k + 2], src[8 * k + 3]));
    } else {
      for (int i = threadIdx.x; i < kTileRows * pieces; i += kThreads) {
        const int rr = i / pieces, piece = i % pieces;
        if (r0 + rr >= p.rows) break;
        const uint32_t* src = &codes_out[rr][4 * piece];
        __stcs(reinterpret_cast<uint4*>(out + int64_t(rr) * p.row_bytes) + piece, make_uint4(src[0], src[1], src[2], src[3]));
      }
    }
  };

  auto run = [&](auto full_tag) {
    constexpr bool kFull = decltype(full_tag)::value;
    const int n = kFull ? kSpanSteps : steps;
    for (int step = 0; step < n; ++step) {
      ptx::cp_async_wait_group<0>();
      __syncthreads();  // every thread's copies of this step have landed, and the other buffer is free
      if (step + 1 < n) load_step(step + 1, full_tag);

      const int64_t c0 = cs + int64_t(step) * C, cbase = c0 + chunk * kTileChunk;
      uint32_t w[2][W];
      if constexpr (W == 8) {  // (every lane: the instruction is the warp's; 4 of them for 32 two-byte loads)
        const E* at = &tile[step % 2][0][0] + lm_at;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          uint32_t pairs[4];
          ptx::ldmatrix_x4_trans_b16(pairs, at + k * 8 * kTileRows);
#pragma unroll
          for (int q = 0; q < 4; ++q) w[k / 2][k % 2 * 4 + q] = pairs[q];
        }
      }
      if (kFull || (r < p.rows && cbase < p.cols)) {
        if constexpr (W == 16) {
          const E* col = &tile[step % 2][chunk * kTileChunk][row];
#pragma unroll
          for (int grp = 0; grp < 2; ++grp)
#pragma unroll
            for (int i = 0; i < kGroup; ++i) w[grp][i] = In::raw(col + (grp * kGroup + i) * kTileRows);
        }
        const int valid = kFull ? kTileChunk : int(std::min<int64_t>(kTileChunk, p.cols - cbase));
        uint32_t codes[2][4], scale[4];
        encode_chunk<T, Codec, S, 2>(p, codec, w, valid, s_enc, nv_mult, 1, codes, scale);
#pragma unroll
        for (int grp = 0; grp < 2; ++grp) {
          const int64_t c = cbase + grp * kGroup;
          if (!kFull && c >= p.cols) break;
          if (kFull || g.staged) {  // the group's 2 x bits bytes: bits / 2 words
            uint32_t* dst = &codes_out[row][step % fs * step_words + (chunk * kTileChunk + grp * kGroup) * bits / 32];
            for (int j = 0; j < bits / 2; ++j) dst[j] = codes[grp][j];
          } else {
            const int nc = int(std::min<int64_t>(kGroup, p.cols - c));
            store_bytes(p.codes + int64_t(r) * p.row_bytes + c * bits / 8, codes[grp], (nc * bits + 7) / 8);
          }
        }
        const int local = step * C + chunk * kTileChunk;  // the chunk's first column in the span
#pragma unroll
        for (int q = 0; q < 4; ++q)  // each block's scale from the entry of its first 8 columns
          if ((q * 8 & (block - 1)) == 0) scale_out[row][(local + q * 8) >> lg] = uint8_t(scale[q]);
      }
      if ((kFull || g.staged) && (step % fs == fs - 1 || step + 1 == n)) {
        __syncthreads();  // the steps' codes are in codes_out (the next step's barrier keeps them until flushed)
        flush(step - step % fs, step, full_tag);
      }
    }
  };
  if (full) run(std::true_type{});
  else run(std::false_type{});

  // The span's scales: blocks b0 .. b0 + nbs - 1 of the CTA's rows (r0 < rows_ext: pad rows' are zero).
  __syncthreads();
  const int nbs = kSpanCols / block;  // 16, 32 or 64
  const uint32_t b0 = uint32_t(cs / block);
  if (p.layout == ScaleLayout::Tiled128x4 && g.words) {
    // Word i of a 512-byte tile holds row (i / 4) + 32 (i % 4)'s four blocks (scale_layout.h tiled_offset).
    const uint32_t groups = uint32_t(tiled_cols(p.blocks) / 4), tile0 = rt * groups + b0 / 4;
    for (int i = threadIdx.x; i < kTileRows * nbs / 4; i += kThreads) {
      const int k = i / kTileRows, wi = i % kTileRows, rr = wi / 4 + 32 * (wi % 4);
      if (b0 / 4 + k < groups)
        reinterpret_cast<uint32_t*>(p.scales)[(uint64_t(tile0) + k) * 128 + wi] =
            *reinterpret_cast<const uint32_t*>(&scale_out[rr][4 * k]);
    }
  } else if (p.layout == ScaleLayout::RowMajor && g.words) {
    const int nw = nbs / 4;  // (blocks % 4 == 0: a row's span starts on a word)
    for (int i = threadIdx.x; i < kTileRows * nw; i += kThreads) {
      const int rr = i / nw, k = i % nw;
      if (r0 + rr < p.rows && b0 + 4 * k < p.blocks)
        reinterpret_cast<uint32_t*>(p.scales + (uint64_t(r0 + rr) * p.blocks + b0))[k] =
            *reinterpret_cast<const uint32_t*>(&scale_out[rr][4 * k]);
    }
  } else {
    for (int i = threadIdx.x; i < kTileRows * nbs; i += kThreads) {
      const int rr = i / nbs, k = i % nbs;
      if (r0 + rr < p.rows_ext && b0 + k < p.blocks) store_scale(p, r0 + rr, b0 + k, scale_out[rr][k]);
    }
  }
}

// Whether the tile kernel takes p: blocks of 8, 16 or 32 columns, elements of 4, 6 or 8 bits; rows
// contiguous in runs of kTileRows (the innermost row axis of stride 1 and a multiple of kTileRows long, or
// all rows one run); 16-byte aligned runs and columns.
bool tile_fits(const QuantizeParams& p, size_t elem_bytes) {
  const int block = p.format.block, bits = p.format.elem.bits;
  if (!p.by_columns || (block != 8 && block != 16 && block != 32) || (bits != 4 && bits != 6 && bits != 8)) return false;
  if (p.cols > 0x7fffffff || reinterpret_cast<uintptr_t>(p.x) % 16 != 0 || (p.col_stride * int64_t(elem_bytes)) % 16 != 0)
    return false;
  const int inner = p.row.dims - 1;
  if (p.row.stride[inner] != 1 || (inner > 0 && p.row.extent[inner].divisor % kTileRows != 0)) return false;
  for (int d = 0; d < inner; ++d)
    if ((p.row.stride[d] * int64_t(elem_bytes)) % 16 != 0) return false;
  const uint64_t ctas = (uint64_t(p.rows_ext) + kTileRows - 1) / kTileRows * ((uint64_t(p.cols) + kSpanCols - 1) / kSpanCols);
  return ctas < 0x7fffffffu;
}

// A quantize kernel's launch: after the tensor-scale pass, as its programmatic dependent (QuantizeParams::after_amax).
template <typename... Params, typename... Args>
cudaError_t start(const QuantizeParams& p, void (*kernel)(Params...), uint32_t grid, int smem, cudaStream_t stream,
                  const Args&... args) {
  const cudaLaunchConfig_t cfg = dependent_launch(dim3(grid), kThreads, size_t(smem), stream, p.after_amax);
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

template <DType T, typename Codec, ScaleKind S>
cudaError_t launch(const QuantizeParams& p, const Codec& codec, cudaStream_t stream) {
  if (p.items == 0) return cudaSuccess;
  if (tile_fits(p, sizeof(typename Input<T>::type))) {
    TileGrid g;
    g.spans = uint32_t((p.cols + kSpanCols - 1) / kSpanCols);
    g.staged = reinterpret_cast<uintptr_t>(p.codes) % 16 == 0 && p.row_bytes % 16 == 0;
    g.words = reinterpret_cast<uintptr_t>(p.scales) % 4 == 0 && (p.layout == ScaleLayout::Tiled128x4 || p.blocks % 4 == 0);
    const uint32_t ctas = (p.rows_ext + kTileRows - 1) / kTileRows * g.spans;
    constexpr int kSmem = tile_smem_bytes<T>();
    const Launchable l = launchable(reinterpret_cast<const void*>(quantize_tile_kernel<T, Codec, S>), kThreads, kSmem);
    if (l.error != cudaSuccess) return l.error;
    return start(p, quantize_tile_kernel<T, Codec, S>, ctas, kSmem, stream, p, codec, g);
  } else if (p.by_columns) {
    const uint32_t grid = (p.items + kThreads - 1) / kThreads;
    return start(p, quantize_columns_kernel<T, Codec>, grid, 0, stream, p, codec);
  } else {
    RowsGrid g;
    g.tiled = p.layout == ScaleLayout::Tiled128x4;
    g.tiles_per_row = uint32_t(tiled_cols(p.blocks) / 4);
    g.lanes_log2 = uint32_t(std::countr_zero(p.lanes));
    // The chunk holding the row's last block also writes the tiled padding columns (store_scale).
    g.scale_end = g.tiled && p.blocks % 4 != 0 ? p.blocks - 1 : p.blocks;
    g.dense = p.lanes == 1 && p.cols % chunk_elems(T) == 0 && reinterpret_cast<uintptr_t>(p.codes) % 16 == 0;
    const uint32_t tiles = uint32_t((uint64_t(p.items) + kThreads - 1) / kThreads);
    constexpr int kSmem = 2 * kThreads * 64;
    const void* staged = reinterpret_cast<const void*>(quantize_rows_staged_kernel<T, Codec, S>);
    const bool fits = g.dense && p.row.dims == 1 && p.row.stride[0] == p.cols && p.vec_load &&
                      p.rows_kernel != RowsKernel::Direct;
    const Launchable l = fits ? launchable(staged, kThreads, kSmem) : Launchable{};
    if (l.error != cudaSuccess) return l.error;
    const uint64_t resident = uint64_t(l.sms) * l.blocks_per_sm;
    // The encoders that spend the most a chunk (NVFP4's and the UE4M3 kinds' block scales, 6-bit codes) from
    // 16-bit inputs gain by the staged kernel's overlap from one wave of its short CTAs (H200, 64 MiB BF16, % of
    // the same-size copy, direct / staged: NVFP4 67 / 73, MXFP6 E2M3 78 / 80, e2m3/k16/ue4m3 66 / 71); MXFP4 and
    // MXFP8 lose there (83 / 80, 89 / 88) and keep the direct kernel below a wave of 8-tile CTAs.
    constexpr bool kHeavy = kPairInput<T> && (S == ScaleKind::Nvfp4 || kUe4m3Kind<S> || Codec::kBits == 6);
    const uint64_t staged_from = resident * (kHeavy ? kStagedTailSpan : kStagedSpan);
    if (fits && (p.rows_kernel == RowsKernel::Staged || tiles >= staged_from)) {
      // The last wave's worth of tiles in short CTAs (kStagedTailSpan), which fill the SMs as the long ones end.
      const uint64_t tail_tiles = std::min<uint64_t>(tiles, resident * kStagedSpan);
      StagedSpans sp{tiles, uint32_t((tiles - tail_tiles) / kStagedSpan), kStagedTailSpan};
      const uint32_t rest = tiles - sp.long_ctas * kStagedSpan;
      const uint32_t ctas = sp.long_ctas + (rest + kStagedTailSpan - 1) / kStagedTailSpan;
      return start(p, quantize_rows_staged_kernel<T, Codec, S>, ctas, kSmem, stream, p, codec, g, sp);
    }
    return start(p, quantize_rows_kernel<T, Codec, S>, tiles, 0, stream, p, codec, g);
  }
}

// MX formats (E8M0 scales on blocks of 32), E8M0 on blocks of 16 and NVFP4 with the element and the scales
// at compile time; other formats with the scales at run time (custom e3m2/k16/ue8m0 ran at 66% of copy
// that way, and the run-time kind takes 63 registers against 40-48).
template <DType T, typename Codec>
cudaError_t launch_for_scale(const QuantizeParams& p, const Codec& codec, cudaStream_t stream) {
  if (p.format.scale == ScaleType::E8M0 && p.format.block == 32) return launch<T, Codec, ScaleKind::E8m0>(p, codec, stream);
  if (p.format.scale == ScaleType::E8M0 && p.format.block == 16) return launch<T, Codec, ScaleKind::E8m0K16>(p, codec, stream);
  if constexpr (std::is_same_v<Codec, CodecE2M1>) {
    if (p.format.rule == ScaleRule::Nvfp4 && p.format.block == 16 && p.format.tensor_scale)
      return launch<T, Codec, ScaleKind::Nvfp4>(p, codec, stream);
  }
  // The pair route's elements under UE4M3 scales (custom formats): their own kernels, with the pair routes
  // (the run-time kind has the float route only for UE4M3 scales); blocks of 16 at compile time (with the block
  // at run time, e2m1/k16/ue4m3 ran ~96 warp instructions a chunk more than NVFP4's kernel, ncu).
  if constexpr (kPairCodec<Codec>) {
    if (p.format.scale == ScaleType::UE4M3 && p.format.block == 16) return launch<T, Codec, ScaleKind::Ue4m3K16>(p, codec, stream);
    if (p.format.scale == ScaleType::UE4M3) return launch<T, Codec, ScaleKind::Ue4m3>(p, codec, stream);
  }
  return launch<T, Codec, ScaleKind::Any>(p, codec, stream);
}

template <DType T>
cudaError_t launch_for_element(const QuantizeParams& p, cudaStream_t stream) {
  const Element e = p.format.elem;
  if (e == CodecE4M3::elem()) return launch_for_scale<T>(p, CodecE4M3{}, stream);
  if (e == CodecE5M2::elem()) return launch_for_scale<T>(p, CodecE5M2{}, stream);
  if (e == CodecE2M3::elem()) return launch_for_scale<T>(p, CodecE2M3{}, stream);
  if (e == CodecE3M2::elem()) return launch_for_scale<T>(p, CodecE3M2{}, stream);
  if (e == CodecE2M1::elem()) return launch_for_scale<T>(p, CodecE2M1{}, stream);
  if (e == CodecInt8::elem()) return launch_for_scale<T>(p, CodecInt8{}, stream);
  return launch_for_scale<T>(p, CodecRuntime{e}, stream);
}

}  // namespace

cudaError_t launch_quantize(const QuantizeParams& params, cudaStream_t stream) {
  QuantizeParams p = params;
  if (p.after_amax) {  // (programmatic launches: sm_90+)
    DeviceInfo d;
    p.after_amax = current_device(&d) == cudaSuccess && d.major >= 9;
  }
  p.elem_max = p.format.elem.max_value();
  p.ue4m3_factor = ue4m3_factor(p.format.elem, p.format.rule);
  switch (p.dtype) {
    case DType::F32: return launch_for_element<DType::F32>(p, stream);
    case DType::F16: return launch_for_element<DType::F16>(p, stream);
    default: return launch_for_element<DType::BF16>(p, stream);
  }
}

}  // namespace mxattn::kernels
