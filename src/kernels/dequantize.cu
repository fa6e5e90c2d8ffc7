// Dequantize: packed codes + block scales -> FP32/FP16/BF16, as reference/quantize.cpp's dequantize:
// x = e * s, or e * s / S_enc with a tensor scale, then one rounding to the output type. The element
// values come from a shared-memory table filled by Element::decode, the scales from decode_scale.
//   pieces:  rows of 16-byte aligned, contiguous outputs whose columns come in whole pieces. A lane takes
//            16 bytes of consecutive outputs (a piece: 8 BF16/F16, 4 F32) and the lanes of a warp 32
//            consecutive pieces, so that every store instruction writes 512 bytes; a warp takes kPieces
//            such runs at a time, their code and scale loads in flight together, kRuns times. NVFP4 needs
//            no division an element (nvfp4_magnitude). 6-bit codes to BF16/F16 take pieces of 16 outputs
//            (12 code bytes), two codes at a time from a table of code pairs (PieceScale::Pairs).
//   groups:  any other layout, and 6-bit codes to F32. A thread takes 16 consecutive codes of a row.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "mxattn/format/format.h"
#include "mxattn/kernels/codecs.h"
#include "mxattn/kernels/quantize_kernels.h"
#include "mxattn/kernels/tensor_io.h"

namespace mxattn::kernels {
namespace {

constexpr int kThreads = 256;

template <DType T>
struct Output;
template <>
struct Output<DType::F32> {
  using type = float;
  __device__ static uint32_t pack2(float lo, float hi) = delete;
};
template <>
struct Output<DType::BF16> {
  using type = __nv_bfloat16;
  __device__ static uint32_t pack2(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  __device__ static uint32_t mul2(uint32_t a, uint32_t b) { return bf16x2_mul(a, b); }
};
template <>
struct Output<DType::F16> {
  using type = __half;
  __device__ static uint32_t pack2(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  __device__ static uint32_t mul2(uint32_t a, uint32_t b) { return f16x2_mul(a, b); }
};

template <DType T>
__device__ __forceinline__ typename Output<T>::type convert(float v) {
  if constexpr (T == DType::F32) return v;
  else if constexpr (T == DType::BF16) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}

// Code i (of 16) from the bit stream in words[].
template <int kBits>
__device__ __forceinline__ uint32_t unpack16(const uint32_t (&words)[4], int i, int bits) {
  const int n = kBits ? kBits : bits;
  const int bit = i * n;
  uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (bit / 32 == j) lo = words[j];
    if (bit / 32 + 1 == j) hi = words[j];
  }
  const uint64_t window = (uint64_t(hi) << 32 | lo) >> (bit % 32);
  return uint32_t(window) & ((1u << n) - 1);
}

// A group: 16 consecutive codes of a row (kGroup), its row and index in the row, its code bytes and the
// scale bytes of its blocks; r = ~0u where the thread has no group.
struct Group {
  uint32_t r, g, words[4], sc0, sc1;
};

// The group's code and scale bytes, loaded before the CTA builds its table so that they are in flight
// meanwhile. H200, 1 GiB, % of copy, 6-bit codes to F32: 81 with the loads after the table, 85-86 before
// it; to BF16 unchanged (70-73 over the calls), and 64-69 with two groups a thread (all four loads first;
// at 32 registers they spill, at 40 six CTAs an SM fit instead of eight).
__device__ __forceinline__ Group load_group(const DequantizeParams& p, uint32_t item, int bits) {
  Group u{~0u, 0, {0, 0, 0, 0}, 0, 0};
  if (item >= p.items) return u;
  if (p.by_columns) {
    p.rows_div.divmod(item, u.g, u.r);
  } else {
    p.groups_div.divmod(item, u.r, u.g);
  }
  const int64_t byte0 = int64_t(u.g) * 2 * bits;
  load_bytes(p.codes + int64_t(u.r) * p.row_bytes + byte0, int(std::min<int64_t>(2 * bits, p.row_bytes - byte0)), u.words);
  const int block = p.format.block;
  const uint32_t b0 = block % kGroup == 0 ? u.g / uint32_t(block / kGroup) : uint32_t(int64_t(u.g) * kGroup / block);
  u.sc0 = p.scales[scale_offset(p.layout, u.r, b0, p.blocks)];
  u.sc1 = block < kGroup && b0 + 1 < p.blocks ? p.scales[scale_offset(p.layout, u.r, b0 + 1, p.blocks)] : u.sc0;
  return u;
}

// Where 16-byte chunk i of a warp's 2 KB of F32 outputs sits in its stage: chunk i ^ (i / 8 mod 8), so that
// both a lane's four chunks (i = 4 lane + q: 64 bytes apart) and a store's 32 (i = 32 q + lane) fall on
// eight different 16-byte bank groups in each quarter-warp; unswizzled, the lanes' writes were 4-way conflicts.
__device__ __forceinline__ int stage_slot(int i) { return i ^ ((i >> 3) & 7); }

// A group's 16 outputs leave as 16-byte pieces. F32: where the warp's 32 groups are one run of memory (a
// row's consecutive groups), they go through shared memory so that each store writes 512 contiguous
// bytes; stored by each thread, a warp's store covers a quarter of each of 64 sectors (6-bit codes to F32:
// 51% of copy that way on the H200, 81% staged, 93-94% with the stage swizzled). A 16-bit output's 32
// bytes are one sector in two stores, which L2 merges: staged, 6-bit to BF16 went from 72-73% to 68-69%
// (measured twice).
template <DType T, int kBits>
__device__ __forceinline__ void store_group(const DequantizeParams& p, uint32_t item, const Group& u, int bits,
                                            const float* table, uint4* stage) {
  const int block = p.format.block;
  const float s0 = decode_scale(p.format.scale, u.sc0);
  const float s1 = block < kGroup ? decode_scale(p.format.scale, u.sc1) : s0;  // (blocks of 16 and more: one)
  const bool two_level = p.format.tensor_scale;
  const float s_enc = two_level ? *p.tensor_scale : 1.0f;

  float v[kGroup];
#pragma unroll
  for (int i = 0; i < kGroup; ++i) {
    const float e = table[unpack16<kBits>(u.words, i, bits)];
    const float s = block < kGroup && i >= 8 ? s1 : s0;
    v[i] = two_level ? e * s / s_enc : e * s;
  }

  using Out = typename Output<T>::type;
  Out* y = static_cast<Out*>(p.y) + p.row.offset(u.r);
  const int64_t c0 = int64_t(u.g) * kGroup;
  const int valid = int(std::min<int64_t>(kGroup, p.cols - c0));
  if constexpr (T == DType::F32) {
    // A warp whose 32 items all exist (a warp's items are consecutive: no lane of it has no group).
    if ((item | 31u) < p.items) {
      const int lane = threadIdx.x % 32;
      uint4* const dst = reinterpret_cast<uint4*>(y + c0);
      uint4* const dst0 = reinterpret_cast<uint4*>(__shfl_sync(0xffffffffu, reinterpret_cast<uintptr_t>(dst), 0));
      if (__all_sync(0xffffffffu, p.vec_store && valid == kGroup && dst == dst0 + 4 * lane)) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          stage[stage_slot(4 * lane + q)] = make_uint4(float_bits(v[4 * q]), float_bits(v[4 * q + 1]),
                                                       float_bits(v[4 * q + 2]), float_bits(v[4 * q + 3]));
        __syncwarp();
#pragma unroll
        for (int q = 0; q < 4; ++q) __stcs(dst0 + 32 * q + lane, stage[stage_slot(32 * q + lane)]);
        return;
      }
    }
  }
  if (p.vec_store && valid == kGroup) {
    uint4* dst = reinterpret_cast<uint4*>(y + c0);
    if constexpr (T == DType::F32) {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        __stcs(dst + q, make_uint4(float_bits(v[4 * q]), float_bits(v[4 * q + 1]), float_bits(v[4 * q + 2]),
                                   float_bits(v[4 * q + 3])));
    } else {
#pragma unroll
      for (int q = 0; q < 2; ++q)
        __stcs(dst + q, make_uint4(Output<T>::pack2(v[8 * q], v[8 * q + 1]), Output<T>::pack2(v[8 * q + 2], v[8 * q + 3]),
                                   Output<T>::pack2(v[8 * q + 4], v[8 * q + 5]),
                                   Output<T>::pack2(v[8 * q + 6], v[8 * q + 7])));
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kGroup; ++i)
    if (i < valid) y[(c0 + i) * p.col_stride] = convert<T>(v[i]);
}

// A thread per group (grid: p.items threads); 32 registers (F32 outputs: 8 bytes of spills), eight CTAs an SM.
template <DType T, int kBits>
__global__ void __launch_bounds__(kThreads, 8) dequantize_kernel(const DequantizeParams p) {
  __shared__ float table[256];
  __shared__ uint4 stage[T == DType::F32 ? kThreads / 32 : 1][32 * 4];  // (F32 only)
  const int bits = kBits ? kBits : p.format.elem.bits;
  const uint32_t item = blockIdx.x * kThreads + threadIdx.x;
  const Group u = load_group(p, item, bits);
  for (int i = threadIdx.x; i < (1 << bits); i += kThreads) table[i] = p.format.elem.decode(uint32_t(i));
  __syncthreads();
  if (u.r != ~0u) store_group<T, kBits>(p, item, u, bits, table, stage[T == DType::F32 ? threadIdx.x / 32 : 0]);
}

// ---- pieces ------------------------------------------------------------------------------------------
constexpr int kPieces = 4;  // pieces a lane a run
// Outputs a piece: 16 bytes (8 BF16/F16, 4 F32), so that a warp's store writes 512 contiguous bytes; 6-bit
// codes 16 outputs (12 bytes of codes; two stores, each half of the lanes' sectors, which L2 merges).
template <DType T, int kBits>
constexpr int kPieceElems = kBits == 6 ? kGroup : 16 / int(sizeof(typename Output<T>::type));
// Runs a warp: the tables are built once a CTA (NVFP4's take two divisions a scale code), so a CTA does
// several runs (kRunsOf below). H200, 1 GiB to BF16, % of copy for 1 / 2 / 4 / 8 runs and a resident grid:
// MXFP8 85 / 93 / 93 / 92 / 88, NVFP4 46 / 65 / 78 / 85 / 83; later runs: kRunsOf.
constexpr int kRuns = 8;

// How a piece's values come from its element values e and its block's scale s.
enum class PieceScale : uint8_t {
  Plain,   // e * s
  Nvfp4,   // e * s / S_enc for E2M1 with UE4M3 scales: two quotients a scale code (below)
  Divide,  // e * s / S_enc, one division an element (other formats with a tensor scale)
  Pairs,   // e * s for 6-bit codes to BF16/F16, two elements an HMUL2 (below)
};

// 6-bit codes to BF16/F16 without a conversion an element: two consecutive codes are 12 bits of the stream,
// and a table of all 4096 pairs holds both element values in the output type (exact there: pair_range).
// A pair is then one shift-and-mask, one shared load and one HMUL2 by the block's scale s = 2^k in the
// output type. Where every e * s of the element lies in the output type's normal range, e * s is exact
// there, so the multiply's rounding is the reference's one rounding of e * s; blocks whose scale code lies
// outside [lo, lo + n) (NaN scales too) take the float route, e * s rounded once.
struct PairRange {
  uint32_t lo = 0, n = 0;  // n = 0: no pair route
  __device__ bool has(uint32_t scale_code) const { return scale_code - lo < n; }
};
// Where pair c0 | c1 << 6 sits in the table: its shared-memory bank is (c0 ^ c1) mod 32, not c0's five low
// bits. A warp's 32 lanes read 32 pairs of one position in 32 pieces, and the codes of normal data crowd
// into a few magnitudes: with the bank c0's, lanes with one c0 and different c1 or signs queue on one bank.
// H200, 1 GiB of MXFP6 codes to BF16, % of copy: 72-74 without the swizzle, 88-90 with it (80 with no
// table read at all, the index multiplied as it is: the loads are not the only cost).
__device__ __forceinline__ uint32_t pair_slot(uint32_t pair) { return pair ^ ((pair >> 6) & 31u); }

// The element tables (Plain) and the pair table (Pairs) are cheap to build: more CTAs of fewer runs. H200,
// 1 GiB, % of copy: MXFP6 to BF16 for 1 / 2 / 4 / 8 / 16 / 32 runs 86 / 89-91 / 88-89 / 88-90 / 86 / 82; Plain
// for 2 / 4 / 8 runs (same call, two alternations) MXFP4 to F32 92 / 89-90 / 87-88, to BF16 91 / 92 / 90,
// MXFP8 to F32 94.5 / 92.5 / 90, to BF16 93.5 either way; NVFP4 at 16 runs -1 to -2%.
template <DType T, PieceScale K>
constexpr int kRunsOf = K == PieceScale::Pairs ? 2 : K == PieceScale::Plain ? (T == DType::F32 ? 2 : 4) : kRuns;

// NVFP4 without a division an element: every output is one of 128 x 8 magnitudes e * s / S_enc (scale code,
// element magnitude) with the code's sign, which a CTA computes first into shared memory. With
// e = m * 2^j, m in {1, 3} (every E2M1 value), RN(e * s / S_enc) = 2^j * RN(m * s / S_enc) wherever that
// scaling is exact (both quotients finite, and normal or zero, so that halving one is exact): two
// divisions a scale code, t1 = s / S_enc and t3 = 3 s / S_enc (3 s is exact: s has at most 4 significant
// bits), then t1 or t3 times 2^j. Scale codes where the scaling is not exact divide for each magnitude. A
// negative code is the magnitude's value with its sign flipped: the reference's -e * s / S_enc (-0 for
// code 8: -0 times the sign of S_enc, the same as flipping +0 * t1). nvfp4_scale divides once a scale code.
struct Nvfp4Scale {
  float s, t1, t3;
  bool exact;
};
__device__ __forceinline__ Nvfp4Scale nvfp4_scale(uint32_t sc, float s_enc) {
  const float s = decode_ue4m3(sc), t1 = __fdiv_rn(s, s_enc), t3 = __fdiv_rn(3.0f * s, s_enc), a1 = fabsf(t1);
  return {s, t1, t3, is_finite_bits(t1) && is_finite_bits(t3) && (a1 == 0.0f || a1 >= 0x1p-125f)};
}
__device__ __forceinline__ float nvfp4_magnitude(const Nvfp4Scale& q, uint32_t m, float s_enc) {
  if (!q.exact) return Element::minifloat(2, 1).decode(m) * q.s / s_enc;
  const uint32_t n = (0x23120100u >> (4 * m)) & 0xfu;  // j + 1 for m = 1..7: 0 1 0 2 1 3 2
  return bits_float(m ? (126u + n) << 23 : 0u) * ((0xa8u >> m) & 1u ? q.t3 : q.t1);
}

// F32 outputs: values[16 * scale code + code].
__device__ __forceinline__ void nvfp4_values(float* values, float s_enc) {
  static_assert(kThreads == 256);
  const uint32_t sc = threadIdx.x / 2, m0 = threadIdx.x % 2 * 4;  // 4 magnitudes a thread
  const Nvfp4Scale q = nvfp4_scale(sc, s_enc);
#pragma unroll
  for (uint32_t m = m0; m < m0 + 4; ++m) {
    const float v = nvfp4_magnitude(q, m, s_enc);
    values[16 * sc + m] = v;
    values[16 * sc + m + 8] = -v;
  }
}

// BF16/F16 outputs: each scale code's 8 magnitudes in the output type as byte planes (low bytes of
// magnitudes 0..3, of 4..7, high bytes of 0..3, of 4..7): a piece reads its 16 bytes once and gathers
// four outputs a prmt with the codes' magnitudes as the selector, then flips the signs.
template <DType T>
__device__ __forceinline__ void nvfp4_planes(uint4* planes, float s_enc) {
  if (threadIdx.x >= 128) return;
  uint32_t plane[4] = {0, 0, 0, 0};
  const Nvfp4Scale q = nvfp4_scale(threadIdx.x, s_enc);
#pragma unroll
  for (uint32_t m = 0; m < 8; ++m) {
    const uint32_t h = Output<T>::pack2(nvfp4_magnitude(q, m, s_enc), 0.0f) & 0xffffu;
    plane[m / 4] |= (h & 0xffu) << (8 * (m % 4));
    plane[2 + m / 4] |= (h >> 8) << (8 * (m % 4));
  }
  planes[threadIdx.x] = make_uint4(plane[0], plane[1], plane[2], plane[3]);
}

// Eight BF16/F16 outputs (four words) from eight E2M1 codes (a word) and their scale code's planes.
__device__ __forceinline__ void nvfp4_gather8(uint32_t w, uint4 planes, uint32_t (&out)[4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t c = w >> (16 * h), sel = c & 0x7777u;  // four codes' magnitudes
    const uint32_t lo = prmt_b32(planes.x, planes.y, sel), hi = prmt_b32(planes.z, planes.w, sel);
    // Signs: code k's bit 3 (bit 4k + 3 of c) to bit 15 or 31 of its output pair.
    out[2 * h] = prmt_b32(lo, hi, 0x5140) ^ (((c << 12) & 0x8000u) | ((c << 24) & 0x80000000u));
    out[2 * h + 1] = prmt_b32(lo, hi, 0x7362) ^ (((c << 4) & 0x8000u) | ((c << 16) & 0x80000000u));
  }
}

// One warp's run: lane takes pieces first, first + 32, ...: their codes (bits bytes each), rows, columns
// and scale bytes.
struct Run {
  uint32_t codes[kPieces][4], r[kPieces], c[kPieces], scale[kPieces];
};

// The launch's facts for the runs: pieces a row, pieces, the tiled layout's tiles a row, and whether every
// piece's codes are one aligned load (the codes' address and row bytes multiples of a piece's code bytes).
struct PieceGrid {
  FastDivmod per_row;
  uint32_t pieces, tiles_per_row;
  bool aligned;
};

// A piece's code bytes (kBytes of them at src): one load where they are a power of two and aligned.
template <int kBytes>
__device__ __forceinline__ void load_piece_codes(const uint8_t* src, bool aligned, uint32_t (&words)[4]) {
  if constexpr (kBytes == 2 || kBytes == 4 || kBytes == 8) {
    if (aligned) {
      words[1] = words[2] = words[3] = 0;
      if constexpr (kBytes == 2) words[0] = __ldcs(reinterpret_cast<const unsigned short*>(src));
      else if constexpr (kBytes == 4) words[0] = __ldcs(reinterpret_cast<const unsigned int*>(src));
      else {
        const uint2 t = __ldcs(reinterpret_cast<const uint2*>(src));
        words[0] = t.x, words[1] = t.y;
      }
      return;
    }
  }
  load_bytes(src, kBytes, words);
}

template <DType T, int kBits>
__device__ __forceinline__ Run load_run(const DequantizeParams& p, const PieceGrid& g, uint64_t first, int bits,
                                        uint32_t block_shift) {
  constexpr int P = kPieceElems<T, kBits>;
  const bool tiled = p.layout == ScaleLayout::Tiled128x4;
  Run u;
#pragma unroll
  for (int q = 0; q < kPieces; ++q) {
    const uint64_t piece = first + 32 * q;
    u.r[q] = 0xffffffffu, u.c[q] = 0, u.scale[q] = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) u.codes[q][j] = 0;
    if (piece < g.pieces) {
      uint32_t pc;
      g.per_row.divmod(uint32_t(piece), u.r[q], pc);
      u.c[q] = pc * P;
      const uint8_t* src = p.codes + int64_t(u.r[q]) * p.row_bytes + int64_t(u.c[q]) * bits / 8;
      if constexpr (kBits != 0) load_piece_codes<P * kBits / 8>(src, g.aligned, u.codes[q]);
      else load_bytes(src, P * bits / 8, u.codes[q]);
      const uint32_t b = u.c[q] >> block_shift;
      u.scale[q] = p.scales[tiled ? tiled_offset_u32(u.r[q], b, g.tiles_per_row) : uint64_t(u.r[q]) * p.blocks + b];
    }
  }
  return u;
}

// The run's outputs.
template <DType T, int kBits, PieceScale K>
__device__ __forceinline__ void store_run(const DequantizeParams& p, const Run& u, int bits, float s_enc,
                                          const float* table, const float* scale_of, const uint4* planes,
                                          const uint32_t* pairs, PairRange range) {
  constexpr bool kPlanes = K == PieceScale::Nvfp4 && T != DType::F32;
  using Out = typename Output<T>::type;
#pragma unroll
  for (int q = 0; q < kPieces; ++q) {
    if (u.r[q] == 0xffffffffu) continue;
    const int64_t row = p.row.dims == 1 ? int64_t(u.r[q]) * p.row.stride[0] : p.row.offset(u.r[q]);  // (the same)
    uint4* dst = reinterpret_cast<uint4*>(static_cast<Out*>(p.y) + row + u.c[q]);
    if constexpr (kPlanes) {
      uint32_t out[4];
      nvfp4_gather8(u.codes[q][0], planes[u.scale[q] & 0x7fu], out);  // (UE4M3 ignores the top bit)
      __stcs(dst, make_uint4(out[0], out[1], out[2], out[3]));
      continue;
    }
    if constexpr (K == PieceScale::Pairs) {
      static_assert(kBits == 6 && T != DType::F32, "pairs: 6-bit codes to 16-bit outputs");
      uint32_t out[8];
      const uint32_t sc = u.scale[q];
      const float s = scale_of[sc];
      if (range.has(sc)) {
        const uint32_t m = Output<T>::pack2(s, s);
#pragma unroll
        for (int j = 0; j < 8; ++j) out[j] = Output<T>::mul2(pairs[pair_slot(unpack16<12>(u.codes[q], j, 12))], m);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j)
          out[j] = Output<T>::pack2(table[unpack16<6>(u.codes[q], 2 * j, 6)] * s,
                                    table[unpack16<6>(u.codes[q], 2 * j + 1, 6)] * s);
      }
      __stcs(dst, make_uint4(out[0], out[1], out[2], out[3]));
      __stcs(dst + 1, make_uint4(out[4], out[5], out[6], out[7]));
      continue;
    }
    constexpr int P = kPieceElems<T, kBits>;
    float v[P];
    if constexpr (K == PieceScale::Nvfp4) {
      const float* row_values = table + 16 * (u.scale[q] & 0x7fu);  // (UE4M3 ignores the top bit)
#pragma unroll
      for (int i = 0; i < P; ++i) v[i] = row_values[unpack16<kBits>(u.codes[q], i, bits)];
    } else {
      const float s = scale_of[u.scale[q]];
#pragma unroll
      for (int i = 0; i < P; ++i) {
        const float e = table[unpack16<kBits>(u.codes[q], i, bits)];
        v[i] = K == PieceScale::Divide ? e * s / s_enc : e * s;
      }
    }
    if constexpr (T == DType::F32) {
      __stcs(dst, make_uint4(float_bits(v[0]), float_bits(v[1]), float_bits(v[2]), float_bits(v[3])));
    } else {
      __stcs(dst, make_uint4(Output<T>::pack2(v[0], v[1]), Output<T>::pack2(v[2], v[3]), Output<T>::pack2(v[4], v[5]),
                             Output<T>::pack2(v[6], v[7])));
    }
  }
}

template <DType T, int kBits, PieceScale K>
__global__ void __launch_bounds__(kThreads) dequantize_pieces_kernel(const DequantizeParams p,
                                                                     const PieceGrid g, const PairRange range) {
  constexpr bool kPlanes = K == PieceScale::Nvfp4 && T != DType::F32;
  // Element values (NVFP4 to F32: the 128 x 16 output values), each scale code's value.
  __shared__ float table[K == PieceScale::Nvfp4 ? (kPlanes ? 1 : 128 * 16) : 256];
  __shared__ float scale_of[256];
  __shared__ uint4 planes[kPlanes ? 128 : 1];
  __shared__ uint32_t pairs[K == PieceScale::Pairs ? 4096 : 1];
  const int bits = kBits ? kBits : p.format.elem.bits;
  const uint32_t lane = threadIdx.x % 32, block_shift = __ffs(p.format.block) - 1;
  const float s_enc = K != PieceScale::Plain ? *p.tensor_scale : 1.0f;
  if constexpr (kPlanes) {
    nvfp4_planes<T>(planes, s_enc);
  } else if constexpr (K == PieceScale::Nvfp4) {
    nvfp4_values(table, s_enc);
  } else {
    for (int i = threadIdx.x; i < (1 << bits); i += kThreads) table[i] = p.format.elem.decode(uint32_t(i));
    scale_of[threadIdx.x] = decode_scale(p.format.scale, threadIdx.x);
  }
  __syncthreads();
  if constexpr (K == PieceScale::Pairs) {
    // Pair c0 | c1 << 6: c0's value in the low half (the lower address), c1's in the high.
    for (uint32_t i = threadIdx.x; i < 4096; i += kThreads) pairs[pair_slot(i)] = Output<T>::pack2(table[i & 63], table[i >> 6]);
    __syncthreads();
  }

  // The CTA's warps walk runs of 32 x kPieces pieces (kRuns each), the next run's loads in flight while
  // this one's outputs are made.
  const uint64_t runs = (uint64_t(g.pieces) + 32 * kPieces - 1) / (32 * kPieces);
  const uint64_t stride = uint64_t(gridDim.x) * (kThreads / 32);
  uint64_t run = uint64_t(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  Run cur = load_run<T, kBits>(p, g, run * 32 * kPieces + lane, bits, block_shift);
  for (; run < runs; run += stride) {
    const Run next = load_run<T, kBits>(p, g, (run + stride) * 32 * kPieces + lane, bits, block_shift);
    store_run<T, kBits, K>(p, cur, bits, s_enc, table, scale_of, planes, pairs, range);
    cur = next;
  }
}

template <DType T, int kBits, PieceScale K>
void launch_pieces_kernel(const DequantizeParams& p, cudaStream_t stream, PairRange range = {}) {
  const uint32_t per_row = uint32_t(p.cols / kPieceElems<T, kBits>), pieces = per_row * p.rows;
  const uint64_t per_cta = uint64_t(kThreads / 32) * kRunsOf<T, K> * 32 * kPieces;
  const uint32_t grid = uint32_t(std::max<uint64_t>(1, (pieces + per_cta - 1) / per_cta));
  const int piece_bytes = kPieceElems<T, kBits> * p.format.elem.bits / 8;
  const bool aligned = piece_bytes > 0 && reinterpret_cast<uintptr_t>(p.codes) % piece_bytes == 0 && p.row_bytes % piece_bytes == 0;
  const PieceGrid g{FastDivmod(per_row), pieces, uint32_t(tiled_cols(p.blocks) / 4), aligned};
  dequantize_pieces_kernel<T, kBits, K><<<grid, kThreads, 0, stream>>>(p, g, range);
}

// The scale codes whose blocks take the pair route (PairRange) for this element and output type: every
// value of the element exact in T, and e * s normal or zero in T for every e and s = 2^k normal in T.
// Empty where an element value is not finite or not exact in T, or the scales are not powers of two.
template <DType T>
PairRange pair_range(const Format& f) {
  PairRange r;
  if (f.scale != ScaleType::E8M0 || f.tensor_scale || f.elem.bits != 6) return r;
  constexpr int kMantissa = T == DType::BF16 ? 7 : 10, kEmin = T == DType::BF16 ? -126 : -14,
                kEmax = T == DType::BF16 ? 127 : 15;
  int lo_exp = 1 << 20, hi_exp = -(1 << 20);  // binades of the element's smallest and largest nonzero value
  for (uint32_t c = 0; c < 64; ++c) {
    const double e = std::fabs(double(f.elem.decode(c)));
    if (!std::isfinite(e)) return r;
    if (e == 0.0) continue;
    int x;
    const double m = std::frexp(e, &x);  // e = m 2^x, m in [0.5, 1)
    if (std::ldexp(m, kMantissa + 1) != std::floor(std::ldexp(m, kMantissa + 1))) return r;  // not exact in T
    lo_exp = std::min(lo_exp, x - 1), hi_exp = std::max(hi_exp, x - 1);
  }
  if (hi_exp < lo_exp || lo_exp < kEmin || hi_exp > kEmax) return r;  // none nonzero, or not all normal in T
  // k: 2^k normal in T, 2^(lo_exp + k) >= 2^kEmin, 2^(hi_exp + k) < 2^(kEmax + 1); scale code = k + 127.
  const int k_lo = std::max(kEmin, kEmin - lo_exp), k_hi = std::min(kEmax, kEmax - hi_exp);
  if (k_hi < k_lo) return r;
  r.lo = uint32_t(k_lo + 127), r.n = uint32_t(k_hi - k_lo + 1);
  return r;
}

template <DType T, int kBits>
void launch_pieces(const DequantizeParams& p, cudaStream_t stream) {
  if constexpr (kBits == 6) {
    static_assert(T != DType::F32, "6-bit codes to F32 take the groups kernel");
    launch_pieces_kernel<T, 6, PieceScale::Pairs>(p, stream, pair_range<T>(p.format));
  } else {
    if (!p.format.tensor_scale) return launch_pieces_kernel<T, kBits, PieceScale::Plain>(p, stream);
    if constexpr (kBits == 4) {
      if (p.format.elem == Element::minifloat(2, 1) && p.format.scale == ScaleType::UE4M3)
        return launch_pieces_kernel<T, 4, PieceScale::Nvfp4>(p, stream);
    }
    launch_pieces_kernel<T, kBits, PieceScale::Divide>(p, stream);
  }
}

template <DType T>
cudaError_t launch(const DequantizeParams& p, cudaStream_t stream) {
  if (p.items == 0) return cudaSuccess;
  // 6-bit codes take pieces of 16 outputs to BF16/F16 (PieceScale::Pairs; blocks of 16 or more, no tensor
  // scale); to F32 the groups kernel, whose warps store 512-byte runs through shared memory (pieces of 16
  // F32 outputs, four 16-byte stores a lane at 64-byte strides, ran at half its speed on the H200).
  const int bits = p.format.elem.bits;
  const bool six = bits == 6;
  const int P = six ? kPieceElems<T, 6> : kPieceElems<T, 0>;
  const bool pieces_fit = !six || (T != DType::F32 && !p.format.tensor_scale && p.format.block % kGroup == 0);
  if (p.vec_store && pieces_fit && p.cols % P == 0 && P * bits % 8 == 0 &&
      uint64_t(p.cols / P) * p.rows <= 0xffffffffu - kThreads * kPieces) {
    switch (p.format.elem.bits) {
      case 8: launch_pieces<T, 8>(p, stream); break;
      case 6:
        if constexpr (T != DType::F32) launch_pieces<T, 6>(p, stream);
        break;
      case 4: launch_pieces<T, 4>(p, stream); break;
      default: launch_pieces<T, 0>(p, stream); break;
    }
    return cudaGetLastError();
  }
  const uint32_t grid = (p.items + kThreads - 1) / kThreads;
  switch (p.format.elem.bits) {
    case 8: dequantize_kernel<T, 8><<<grid, kThreads, 0, stream>>>(p); break;
    case 6: dequantize_kernel<T, 6><<<grid, kThreads, 0, stream>>>(p); break;
    case 4: dequantize_kernel<T, 4><<<grid, kThreads, 0, stream>>>(p); break;
    default: dequantize_kernel<T, 0><<<grid, kThreads, 0, stream>>>(p); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_dequantize(const DequantizeParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case DType::F32: return launch<DType::F32>(p, stream);
    case DType::F16: return launch<DType::F16>(p, stream);
    default: return launch<DType::BF16>(p, stream);
  }
}

}  // namespace mxattn::kernels
