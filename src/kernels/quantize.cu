// Quantize kernels: FP32/FP16/BF16 -> packed codes + block scales, bit-identical to
// reference/quantize.cpp. Two shapes of work:
//   rows:    the block axis is contiguous (Q, K, a KV cache). A thread takes 16 consecutive elements
//            (two 16-byte loads of BF16) and stores their 2*bits code bytes; the `lanes` threads of
//            one block reduce its amax with shuffles.
//   columns: the block axis is strided (prefill V blocked along S). A thread takes a whole block,
//            neighbouring threads take neighbouring rows (= neighbouring addresses), and the block is
//            read twice (amax, then encode; the second read hits L1/L2).
//   fp4:     BF16 -> E2M1 (MXFP4, NVFP4) along contiguous rows, the formats whose generic route is
//            limited by arithmetic: a thread takes 32 elements (one MX block, two NVFP4 blocks) and
//            encodes two elements per instruction on bf16x2 lanes (codecs.h).
// All compute each block's scale with Format::block_scale and each code with Element::encode (or a
// route tested equal to it, codecs.h). Tiled scales: the kernels also write the zero padding.
#include <cuda_runtime.h>

#include <algorithm>
#include <optional>
#include <type_traits>

#include "mxattn/format/format.h"
#include "mxattn/kernels/codecs.h"
#include "mxattn/kernels/quantize_kernels.h"
#include "mxattn/kernels/tensor_io.h"

namespace mxattn::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 2;  // groups per thread whose loads are in flight together

struct BlockCode {
  uint32_t code;
  float mult;
  bool exact_only;  // a product may be NaN: Element::encode for every element
};

// The element comes from the codec, so that for the named elements its constants (max_value, emax,
// 1 / max_value) fold at compile time inside Format::block_scale.
template <DType T, typename Codec>
__device__ __forceinline__ BlockCode block_code(const QuantizeParams& p, const Codec& codec, uint32_t key,
                                                float s_enc) {
  const bool nonfinite = key >= Input<T>::kInf;
  const Format f{codec.element(), p.format.block, p.format.scale, p.format.rule, p.format.tensor_scale};
  const BlockScale s = f.block_scale(Input<T>::key_to_float(key), nonfinite, s_enc);
  return {s.code, s.mult, nonfinite || !is_finite_bits(s.mult) || !p.fast_codecs};
}

// Block b's scale of row r, and the tiled layout's zero columns after the row's last block.
__device__ __forceinline__ void store_scale(const QuantizeParams& p, uint32_t r, uint32_t b, uint32_t code) {
  const size_t cols = p.blocks;
  p.scales[scale_offset(p.layout, r, b, cols)] = uint8_t(code);
  if (p.layout == ScaleLayout::Tiled128x4 && b + 1 == p.blocks)
    for (size_t c = cols; c < tiled_cols(cols); ++c) p.scales[tiled_offset(r, c, cols)] = 0;
}

template <DType T, typename Codec>
__global__ void __launch_bounds__(kThreads) quantize_rows_kernel(const QuantizeParams p, const Codec codec) {
  constexpr int W = Input<T>::kWords;
  const float s_enc = p.format.tensor_scale ? *p.tensor_scale : 1.0f;
  const int bits = codec.bits();
  const int block = p.format.block;

  uint32_t w[kUnroll][W];
  uint32_t row[kUnroll], group[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const uint32_t item = (blockIdx.x * kUnroll + u) * kThreads + threadIdx.x;
    row[u] = 0xffffffffu, group[u] = 0;
    if (item < p.items) p.groups_padded.divmod(item, row[u], group[u]);
    const bool load = row[u] < p.rows && group[u] < p.groups;
    if (load) {
      load_group<T, true>(p.x, p.row.offset(row[u]), int64_t(group[u]) * kGroup, p.cols, 1, p.vec_load, w[u]);
    } else {
#pragma unroll
      for (int j = 0; j < W; ++j) w[u][j] = 0;
    }
  }

#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const uint32_t r = row[u], g = group[u];
    // Block scales. Threads past the end carry zeros through the shuffles: every lane takes part.
    BlockCode bc[2];
    if (block >= kGroup) {
      uint32_t key = abs_key<T>(w[u], 0, kGroup);
      for (uint32_t o = 1; o < p.lanes; o <<= 1) key = max(key, __shfl_xor_sync(0xffffffffu, key, o));
      bc[0] = bc[1] = block_code<T>(p, codec, key, s_enc);
    } else {  // block 8: two blocks per group
      bc[0] = block_code<T>(p, codec, abs_key<T>(w[u], 0, 8), s_enc);
      bc[1] = block_code<T>(p, codec, abs_key<T>(w[u], 8, 8), s_enc);
    }
    if (r >= p.rows_ext || g >= p.groups) continue;

    if (r < p.rows) {
      const int64_t c0 = int64_t(g) * kGroup;
      const int valid = int(std::min<int64_t>(kGroup, p.cols - c0));
      float v[kGroup];
#pragma unroll
      for (int i = 0; i < kGroup; ++i) v[i] = Input<T>::element(w[u], i) * bc[i / 8].mult;
      uint32_t words[4];
      encode_pack16(codec, v, valid, !(bc[0].exact_only || bc[1].exact_only), words);
      const int64_t byte0 = int64_t(g) * 2 * bits;
      store_bytes(p.codes + int64_t(r) * p.row_bytes + byte0, words, int(std::min<int64_t>(2 * bits, p.row_bytes - byte0)));
    }
    const bool pad_row = r >= p.rows;
    if (block >= kGroup) {
      if (g % p.lanes == 0) store_scale(p, r, g / p.lanes, pad_row ? 0u : bc[0].code);
    } else {
      store_scale(p, r, 2 * g, pad_row ? 0u : bc[0].code);
      if (2 * g + 1 < p.blocks) store_scale(p, r, 2 * g + 1, pad_row ? 0u : bc[1].code);
    }
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
  const BlockCode bc = block_code<T>(p, codec, key, s_enc);

  uint8_t* out = p.codes + int64_t(r) * p.row_bytes;
  for (int64_t c = c0; c < end; c += kGroup) {
    uint32_t w[W];
    load_group<T, false>(p.x, off, c, end, p.col_stride, false, w);
    float v[kGroup];
#pragma unroll
    for (int i = 0; i < kGroup; ++i) v[i] = Input<T>::element(w, i) * bc.mult;
    const int valid = int(std::min<int64_t>(kGroup, end - c));
    uint32_t words[4];
    encode_pack16(codec, v, valid, !bc.exact_only, words);
    // Blocks are whole bytes (block * bits is a multiple of 8), so this thread owns these bytes.
    store_bytes(out + c * bits / 8, words, (valid * bits + 7) / 8);
  }
  store_scale(p, r, b, bc.code);
}

// ---- along columns through shared memory (prefill V) ----------------------------------------------
// The columns kernel reads a block element by element, twice (2-byte loads at the column stride): ~20% of
// copy. Where the rows are contiguous in runs of kTileRows (V [B, S, H, D] blocked along S: rows (b, h, d),
// h and d contiguous), a CTA takes kTileRows rows x kTileCols columns: 16-byte loads of each column's run
// of rows (a warp reads two columns' 256 contiguous bytes of BF16), column-major in shared memory; a thread
// per (row, 32-column chunk) reads its row down the columns (consecutive threads, consecutive rows: no bank
// conflicts), encodes it as the rows kernel does and leaves the codes in shared memory, from where each
// row's codes leave in 16-byte pieces, neighbouring threads' pieces neighbours in memory (stored directly,
// a warp's 32 stores are 32 rows', half a sector each: L2 ran at 92% for DRAM's 56%). Blocks of 8, 16 or
// 32 columns; elements of 4, 6 or 8 bits (a group's codes are whole 32-bit words).
constexpr int kTileRows = 128, kTileCols = 64, kTileChunk = 32;

struct TileGrid {
  FastDivmod col_tiles;  // per row tile
  uint32_t tiles;
  bool staged;  // the codes leave through shared memory (16-byte aligned rows and codes)
};

template <DType T, typename Codec>
__global__ void __launch_bounds__(kThreads) quantize_tile_kernel(const QuantizeParams p, const Codec codec,
                                                                 const TileGrid g) {
  using In = Input<T>;
  using E = typename In::type;
  constexpr int C = kTileCols, W = In::kWords, kVec = 16 / sizeof(E), kVecsPerCol = kTileRows / kVec;
  constexpr int kLoads = C * kVecsPerCol / kThreads, kChunks = kTileRows * C / kTileChunk / kThreads;
  constexpr int kOutWords = C * 8 / 32;  // a row's codes at 8 bits; fewer bits use the first words
  static_assert(C * kVecsPerCol % kThreads == 0 && kTileRows * C % (kTileChunk * kThreads) == 0);
  __shared__ alignas(16) E tile[C][kTileRows];
  __shared__ uint32_t codes_out[kTileRows][kOutWords + 1];  // (+1: a row's words start one bank later)
  uint32_t rt, ct;
  g.col_tiles.divmod(blockIdx.x, rt, ct);
  const uint32_t r0 = rt * kTileRows;
  const int64_t c0 = int64_t(ct) * C;
  const E* x = static_cast<const E*>(p.x) + (r0 < p.rows ? p.row.offset(r0) : 0);

  uint4 v[kLoads];
#pragma unroll
  for (int l = 0; l < kLoads; ++l) {
    const int i = threadIdx.x + l * kThreads, col = i / kVecsPerCol, row = i % kVecsPerCol * kVec;
    const int64_t c = c0 + col;
    const uint32_t r = r0 + row;
    v[l] = make_uint4(0, 0, 0, 0);
    if (c < p.cols && r < p.rows) {
      const E* src = x + row + c * p.col_stride;
      if (r + kVec <= p.rows) {
        v[l] = __ldcs(reinterpret_cast<const uint4*>(src));
      } else {  // the last rows (a tensor whose rows are one contiguous run)
        uint32_t t[4] = {0, 0, 0, 0};
#pragma unroll
        for (int j = 0; j < kVec; ++j)
          if (r + j < p.rows) t[j * 4 / kVec] |= In::raw(src + j) << (kVec == 8 ? 16 * (j % 2) : 0);
        v[l] = make_uint4(t[0], t[1], t[2], t[3]);
      }
    }
  }
#pragma unroll
  for (int l = 0; l < kLoads; ++l) {
    const int i = threadIdx.x + l * kThreads;
    *reinterpret_cast<uint4*>(&tile[i / kVecsPerCol][i % kVecsPerCol * kVec]) = v[l];
  }
  __syncthreads();

  const int row = threadIdx.x % kTileRows, block = p.format.block, bits = codec.bits();
  const uint32_t r = r0 + row;
  const float s_enc = p.format.tensor_scale ? *p.tensor_scale : 1.0f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int chunk = threadIdx.x / kTileRows + k * (kThreads / kTileRows);
    const int64_t cbase = c0 + int64_t(chunk) * kTileChunk;
    if (r >= p.rows_ext || cbase >= p.cols) continue;
    const uint32_t b0 = uint32_t(cbase / block);
    if (r >= p.rows) {  // a tiled layout's pad row: zero scales
      for (uint32_t b = b0; b < b0 + kTileChunk / block && b < p.blocks; ++b) store_scale(p, r, b, 0);
      continue;
    }
    uint32_t w[2][W];
#pragma unroll
    for (int grp = 0; grp < 2; ++grp)
#pragma unroll
      for (int i = 0; i < kGroup; ++i) {
        const uint32_t e = In::raw(&tile[chunk * kTileChunk + grp * kGroup + i][row]);
        if constexpr (W == 16) {
          w[grp][i] = e;
        } else if (i % 2 == 0) {
          w[grp][i / 2] = e;
        } else {
          w[grp][i / 2] |= e << 16;
        }
      }
    // Block scales of the chunk's 32 columns, one entry per 8: a block of 32, two of 16, or four of 8.
    BlockCode bc[4];
    if (block == 32) {
      bc[0] = block_code<T>(p, codec, max(abs_key<T>(w[0], 0, kGroup), abs_key<T>(w[1], 0, kGroup)), s_enc);
      bc[1] = bc[2] = bc[3] = bc[0];
    } else if (block == 16) {
      bc[0] = bc[1] = block_code<T>(p, codec, abs_key<T>(w[0], 0, kGroup), s_enc);
      bc[2] = bc[3] = block_code<T>(p, codec, abs_key<T>(w[1], 0, kGroup), s_enc);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) bc[q] = block_code<T>(p, codec, abs_key<T>(w[q / 2], 8 * (q % 2), 8), s_enc);
    }
#pragma unroll
    for (int grp = 0; grp < 2; ++grp) {
      const int64_t c = cbase + grp * kGroup;
      const int valid = int(std::min<int64_t>(kGroup, p.cols - c));
      if (valid <= 0) break;
      const BlockCode& lo = bc[2 * grp];
      const BlockCode& hi = bc[2 * grp + 1];
      float e[kGroup];
#pragma unroll
      for (int i = 0; i < kGroup; ++i) e[i] = In::element(w[grp], i) * (i < 8 ? lo.mult : hi.mult);
      uint32_t words[4];
      encode_pack16(codec, e, valid, !(lo.exact_only || hi.exact_only), words);
      if (g.staged) {  // the group's 2 x bits bytes: bits / 2 words at word (c - c0) * bits / 32
        uint32_t* dst = &codes_out[row][(c - c0) * bits / 32];
        for (int j = 0; j < bits / 2; ++j) dst[j] = words[j];
      } else {
        store_bytes(p.codes + int64_t(r) * p.row_bytes + c * bits / 8, words, (valid * bits + 7) / 8);
      }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {  // each block's scale from the entry of its first 8 columns
      const uint32_t b = b0 + uint32_t(q * 8 / block);
      if (q * 8 % block == 0 && b < p.blocks) store_scale(p, r, b, bc[q].code);
    }
  }
  if (!g.staged) return;
  // The codes out: each row's bytes of this tile in 16-byte pieces (row_bytes and the codes 16-byte aligned,
  // so each row's share of the tile is whole pieces), a warp's pieces consecutive along rows.
  __syncthreads();
  const int64_t byte0 = c0 * bits / 8;
  const int pieces = int(std::min<int64_t>(C * bits / 8, p.row_bytes - byte0) / 16);
  for (int i = threadIdx.x; i < kTileRows * pieces; i += kThreads) {
    const int rr = i / pieces, piece = i % pieces;
    if (r0 + rr >= p.rows) break;
    const uint32_t* src = &codes_out[rr][4 * piece];
    __stcs(reinterpret_cast<uint4*>(p.codes + int64_t(r0 + rr) * p.row_bytes + byte0) + piece,
           make_uint4(src[0], src[1], src[2], src[3]));
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
  const uint64_t tiles = (uint64_t(p.rows_ext) + kTileRows - 1) / kTileRows * ((uint64_t(p.cols) + kTileCols - 1) / kTileCols);
  return tiles < 0x7fffffffu;
}

// ---- BF16 -> E2M1 along rows ---------------------------------------------------------------------
// Per thread 32 consecutive elements: four 16-byte loads, one 16-byte store of codes. The arithmetic
// per element pair (codecs.h): MX, where the multiplier is 2^k, one bf16x2 fma rounds |x| * 2^k onto
// the E2M1 grid; NVFP4, whose multiplier S_enc / s is any float, multiplies in FP32 as the reference
// does and rounds the two products to odd bf16 first. A block the packed route does not cover (NaN or
// Inf inside, a scale outside the range the proofs assume) takes Element::encode, as everywhere.
enum class Fp4Rule : uint8_t { MxRceil, MxFloor, Nvfp4 };

constexpr int kFp4Elems = 32;
constexpr int kFp4Words = kFp4Elems / 2;  // bf16x2 words

template <Fp4Rule R>
struct Fp4Traits {
  MXATTN_HD static constexpr Format format() {
    return R == Fp4Rule::Nvfp4
               ? Format{Element::minifloat(2, 1), 16, ScaleType::UE4M3, ScaleRule::Nvfp4, true}
               : Format{Element::minifloat(2, 1), 32, ScaleType::E8M0,
                        R == Fp4Rule::MxFloor ? ScaleRule::Floor : ScaleRule::Rceil, false};
  }
  static constexpr int kBlock = format().block;
  static constexpr int kBlocks = kFp4Elems / kBlock;
  static constexpr int kBlockWords = kBlock / 2;
};

// Items (row, 32-column chunk), rows padded as the layout asks; and what the epilogue may assume.
struct Fp4Grid {
  FastDivmod chunks;  // per row
  uint32_t items;
  uint32_t tiles_per_row;  // tiled layout: tiled_cols(blocks) / 4
  uint32_t pair_end;       // NVFP4: blocks b, b + 1 with b + 2 <= pair_end go out as one 16-bit store
  bool tiled;              // Tiled128x4 scales
  bool codes16;            // every full chunk's 16 code bytes are 16-byte aligned
};

struct Fp4Block {
  uint32_t code;  // the scale byte
  float mult;     // the reference's multiplier (NaN for a block holding NaN or Inf)
  E2M1Pow2 pow2;  // MX: mult = 2^k for the packed route
  bool packed;    // the packed route gives Element::encode's codes for every element of this block
};

// S_enc / s for the UE4M3 code c, as choose_block_scale computes it (capped at FLT_MAX; 0 for s = 0
// and for the NaN code, which the NVFP4 rule never picks for a finite block).
__device__ __forceinline__ float nvfp4_mult(uint32_t c, float s_enc) {
  const float s = decode_ue4m3(c);
  const float max_float = bits_float(0x7f7fffffu);
  const float mult = s > 0.0f ? s_enc / s : 0.0f;
  return mult < max_float ? mult : max_float;
}

template <Fp4Rule R>
__device__ __forceinline__ Fp4Block fp4_block(const uint32_t* a, float s_enc, const float* nv_mult) {
  using Tr = Fp4Traits<R>;
  uint32_t m = 0;
#pragma unroll
  for (int j = 0; j < Tr::kBlockWords; j += 2) m = __vimax3_u16x2(m, a[j], a[j + 1]);
  const uint32_t key = max_u16x2(m, m >> 16) & 0xffffu;  // |x| bits are ordered as the values
  const bool nonfinite = key >= 0x7f80u;
  const float amax = bits_float(key << 16);
  if constexpr (R == Fp4Rule::Nvfp4) {
    // e4m3().encode(amax * S_enc / 6): the IEEE quotient's code by a corrected reciprocal and the
    // conversion instruction (equal on every float, codec_test.cu); the multiplier from a table of all
    // 128 codes. The packed route takes blocks whose products stay below 7 (no clamp needed): false
    // for NaN/Inf inside (amax Inf or NaN), an infinite multiplier, and saturated or subnormal scales
    // whose products reach 7; those take Element::encode.
    const uint32_t c = nonfinite ? kUE4M3Nan : nvfp4_scale_code(__fmul_rn(amax, s_enc));
    const float mult = nv_mult[c & 0x7fu];
    return {c, nonfinite ? quiet_nan() : mult, e2m1_pow2(0), __fmul_rn(amax, fabsf(mult)) < 7.0f};
  } else {
    const BlockScale s = Tr::format().block_scale(amax, nonfinite);
    // The packed route needs 2^k a normal bf16 and |v| = |x| 2^k below 6 (RCEIL: encode never clips,
    // so no clamp) or 8 (FLOOR: code 8 clamped to 7), which both rules give for every finite BF16
    // block; and k <= 124, so that a subnormal x, which the fma might flush, has |v| < 0.25 (code 0
    // either way). Blocks with k > 124 have amax < 6 * 2^-124: only tiny inputs take Element::encode.
    const int k = 127 - int(s.code);
    const float vmax = amax * s.mult;  // exact: a power of two
    const bool in_range = R == Fp4Rule::MxFloor ? vmax < 8.0f : vmax <= 6.0f;
    return {s.code, s.mult, e2m1_pow2(k), !nonfinite && k >= -126 && k <= 124 && in_range};
  }
}

// Byte offset of block b's scale in row r: tiled_offset in 32-bit pieces (the tile index fits in 32
// bits: it is below scale_bytes / 512), or the row-major offset.
__device__ __forceinline__ uint64_t fp4_scale_offset(const QuantizeParams& p, const Fp4Grid& g, uint32_t r,
                                                     uint32_t b) {
  if (g.tiled) {
    const uint32_t tile = (r >> 7) * g.tiles_per_row + (b >> 2);
    return uint64_t(tile) * 512 + (((r & 31u) << 4) | ((r >> 3) & 12u) | (b & 3u));
  }
  return uint64_t(r) * p.blocks + b;
}

template <Fp4Rule R>
__global__ void __launch_bounds__(kThreads) quantize_fp4_bf16_kernel(const QuantizeParams p, const Fp4Grid g) {
  using Tr = Fp4Traits<R>;
  const uint32_t item = blockIdx.x * kThreads + threadIdx.x;
  const bool active = item < g.items;
  uint32_t r = 0, chunk = 0;
  if (active) g.chunks.divmod(item, r, chunk);
  const uint32_t block0 = chunk * Tr::kBlocks;
  // NVFP4 needs S_enc (a load) and a table built from it before the first block scale: the data
  // loads go out first, so that they are in flight while the table is built.
  float s_enc = 1.0f;
  if constexpr (R == Fp4Rule::Nvfp4) s_enc = *p.tensor_scale;

  const int64_t c0 = int64_t(chunk) * kFp4Elems;
  const int64_t off = p.row.dims == 1 ? int64_t(r) * p.row.stride[0] : p.row.offset(r);  // same value
  uint32_t w[kFp4Words], a[kFp4Words];  // raw bf16x2 words; |x|
  if (active && r < p.rows) {
    if (c0 + kFp4Elems <= p.cols) {  // all four loads in flight before the first use
      const auto* src = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.x) + off + c0);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint4 t = __ldcs(src + q);
        w[4 * q] = t.x, w[4 * q + 1] = t.y, w[4 * q + 2] = t.z, w[4 * q + 3] = t.w;
      }
    } else {  // the row's last chunk: columns past the end read as +0, which encodes as code 0
      uint32_t in[2][8];
      load_group<DType::BF16, true>(p.x, off, c0, p.cols, 1, true, in[0]);
      load_group<DType::BF16, true>(p.x, off, c0 + kGroup, p.cols, 1, true, in[1]);
#pragma unroll
      for (int j = 0; j < kFp4Words; ++j) w[j] = in[j / 8][j % 8];
    }
  }

  __shared__ float nv_mult[128];  // NVFP4: S_enc / s for every UE4M3 code
  if constexpr (R == Fp4Rule::Nvfp4) {
    if (threadIdx.x < 128) nv_mult[threadIdx.x] = nvfp4_mult(threadIdx.x, s_enc);
    __syncthreads();
  }
  if (!active) return;

  if (r >= p.rows) {  // padding rows of the tiled layout: zero scales
#pragma unroll
    for (int b = 0; b < Tr::kBlocks; ++b)
      if (block0 + b < p.blocks) store_scale(p, r, block0 + b, 0);
    return;
  }

#pragma unroll
  for (int j = 0; j < kFp4Words; ++j) a[j] = w[j] & kBf16x2Abs;

  Fp4Block blk[Tr::kBlocks];
  bool packed = true;
#pragma unroll
  for (int b = 0; b < Tr::kBlocks; ++b) {
    blk[b] = fp4_block<R>(a + b * Tr::kBlockWords, s_enc, nv_mult);
    packed &= blk[b].packed;
  }

  uint32_t codes[4];  // 8 elements per word
  if (packed) {
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const Fp4Block& bk = blk[h * 8 / Tr::kBlock];
      uint32_t mag[4], sign[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t x = w[4 * h + j];
        if constexpr (R == Fp4Rule::Nvfp4) {
          // The magnitudes of the reference's FP32 products, |x| * |S_enc / s|, then one rounding to
          // odd bf16 (exact for E2M1, codecs.h); every product is below 7 (fp4_block): no clamp. The
          // sign is x's, flipped below where the multiplier is negative.
          const float m = fabsf(bk.mult);
          const uint32_t t = bf16x2_round_to_odd(__fmul_rn(fabsf(bits_float(x << 16)), m),
                                                 __fmul_rn(bits_float(x & 0x7fff0000u), m));
          mag[j] = e2m1x2_magnitude_unit(t);
          sign[j] = x;
        } else {
          mag[j] = e2m1x2_magnitude(a[4 * h + j], bk.pow2);
          if constexpr (R == Fp4Rule::MxFloor) mag[j] = min_u16x2(mag[j], 0x00070007u);
          sign[j] = x;  // 2^k > 0: the product has x's sign
        }
      }
      codes[h] = pack_e2m1x8(mag, sign);
    }
    // NVFP4: x * (S_enc / s) has the sign of x xor that of the multiplier, which is S_enc's, or +0
    // where s = 0 (FLT_MAX where S_enc is NaN): only a negative S_enc flips signs.
    if constexpr (R == Fp4Rule::Nvfp4) {
      if (float_bits(s_enc) >> 31) {
#pragma unroll
        for (int h = 0; h < 4; ++h)
          codes[h] ^= uint32_t(int32_t(float_bits(blk[h * 8 / Tr::kBlock].mult)) >> 31) & 0x88888888u;
      }
    }
  } else {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float v[kGroup];
#pragma unroll
      for (int i = 0; i < kGroup; ++i) {
        const uint32_t x = w[8 * half + i / 2];
        v[i] = __fmul_rn(bits_float(i % 2 ? x & 0xffff0000u : x << 16), blk[(kGroup * half + i) / Tr::kBlock].mult);
      }
      const int valid = int(std::clamp<int64_t>(p.cols - c0 - kGroup * half, 0, kGroup));
      uint32_t words[4];
      encode_pack16(CodecE2M1{}, v, valid, false, words);
      codes[2 * half] = words[0], codes[2 * half + 1] = words[1];
    }
  }

  if (c0 + kFp4Elems > p.cols) {
    // Columns past the row's end read as +0, but +0 times a negative S_enc / s is -0 (code 8); the
    // reference leaves them 0. (Only an odd column count stores such a nibble.)
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int64_t n = p.cols - c0 - 8 * h;  // valid elements in this word
      codes[h] &= n >= 8 ? 0xffffffffu : n <= 0 ? 0u : (1u << (4 * n)) - 1;
    }
  }

  const int64_t byte0 = int64_t(chunk) * (kFp4Elems / 2);
  uint8_t* const dst = p.codes + int64_t(r) * p.row_bytes + byte0;
  if (g.codes16 && c0 + kFp4Elems <= p.cols) {
    __stcs(reinterpret_cast<uint4*>(dst), make_uint4(codes[0], codes[1], codes[2], codes[3]));
  } else {
    store_bytes(dst, codes, int(std::min<int64_t>(16, p.row_bytes - byte0)));
  }

  // Scales: the chunk's blocks with no tiled padding column after them, in one store (NVFP4: blocks
  // 2c and 2c + 1 are neighbouring bytes in either layout, at an even offset); the rest as before.
  if (block0 + Tr::kBlocks <= g.pair_end) {
    const uint64_t o = fp4_scale_offset(p, g, r, block0);
    if constexpr (Tr::kBlocks == 2) {
      *reinterpret_cast<uint16_t*>(p.scales + o) = uint16_t(blk[0].code | blk[1].code << 8);
    } else {
      p.scales[o] = uint8_t(blk[0].code);
    }
    return;
  }
#pragma unroll
  for (int b = 0; b < Tr::kBlocks; ++b)
    if (block0 + b < p.blocks) store_scale(p, r, block0 + b, blk[b].code);
}

uint64_t fp4_items(const QuantizeParams& p) {
  return (uint64_t(p.cols) + kFp4Elems - 1) / kFp4Elems * p.rows_ext;
}

// The fp4 kernel's rule for p, if it takes p: BF16, contiguous 16-byte aligned rows, fast codecs.
std::optional<Fp4Rule> fp4_rule(const QuantizeParams& p) {
  if (p.dtype != DType::BF16 || p.by_columns || !p.vec_load || !p.fast_codecs) return std::nullopt;
  if (p.cols == 0 || fp4_items(p) > 0xffffffffu - kThreads) return std::nullopt;
  if (p.format == Fp4Traits<Fp4Rule::MxRceil>::format()) return Fp4Rule::MxRceil;
  if (p.format == Fp4Traits<Fp4Rule::MxFloor>::format()) return Fp4Rule::MxFloor;
  if (p.format == Fp4Traits<Fp4Rule::Nvfp4>::format()) return Fp4Rule::Nvfp4;
  return std::nullopt;
}

cudaError_t launch_fp4(const QuantizeParams& p, Fp4Rule rule, cudaStream_t stream) {
  const uint32_t items = uint32_t(fp4_items(p));
  Fp4Grid g{FastDivmod(uint32_t((p.cols + kFp4Elems - 1) / kFp4Elems)), items};
  g.tiled = p.layout == ScaleLayout::Tiled128x4;
  g.tiles_per_row = uint32_t(tiled_cols(p.blocks) / 4);
  // The chunk holding the row's last block also writes the tiled padding columns (store_scale).
  g.pair_end = g.tiled && p.blocks % 4 != 0 ? p.blocks - 1 : p.blocks;
  if (rule == Fp4Rule::Nvfp4) {
    const bool even = reinterpret_cast<uintptr_t>(p.scales) % 2 == 0 && (g.tiled || p.blocks % 2 == 0);
    if (!even) g.pair_end = 0;
  }
  g.codes16 = reinterpret_cast<uintptr_t>(p.codes) % 16 == 0 && p.row_bytes % 16 == 0;
  const uint32_t grid = uint32_t((items + kThreads - 1) / kThreads);
  switch (rule) {
    case Fp4Rule::MxRceil: quantize_fp4_bf16_kernel<Fp4Rule::MxRceil><<<grid, kThreads, 0, stream>>>(p, g); break;
    case Fp4Rule::MxFloor: quantize_fp4_bf16_kernel<Fp4Rule::MxFloor><<<grid, kThreads, 0, stream>>>(p, g); break;
    case Fp4Rule::Nvfp4: quantize_fp4_bf16_kernel<Fp4Rule::Nvfp4><<<grid, kThreads, 0, stream>>>(p, g); break;
  }
  return cudaGetLastError();
}

template <DType T, typename Codec>
cudaError_t launch(const QuantizeParams& p, const Codec& codec, cudaStream_t stream) {
  if (p.items == 0) return cudaSuccess;
  if constexpr (T == DType::BF16 && std::is_same_v<Codec, CodecE2M1>) {
    if (const auto rule = fp4_rule(p)) return launch_fp4(p, *rule, stream);
  }
  if (tile_fits(p, sizeof(typename Input<T>::type))) {
    const uint32_t col_tiles = uint32_t((p.cols + kTileCols - 1) / kTileCols);
    const bool staged = reinterpret_cast<uintptr_t>(p.codes) % 16 == 0 && p.row_bytes % 16 == 0;
    const TileGrid g{FastDivmod(col_tiles), (p.rows_ext + kTileRows - 1) / kTileRows * col_tiles, staged};
    quantize_tile_kernel<T><<<g.tiles, kThreads, 0, stream>>>(p, codec, g);
  } else if (p.by_columns) {
    const uint32_t grid = (p.items + kThreads - 1) / kThreads;
    quantize_columns_kernel<T><<<grid, kThreads, 0, stream>>>(p, codec);
  } else {
    const uint32_t per_block = kThreads * kUnroll;
    const uint32_t grid = uint32_t((uint64_t(p.items) + per_block - 1) / per_block);
    quantize_rows_kernel<T><<<grid, kThreads, 0, stream>>>(p, codec);
  }
  return cudaGetLastError();
}

template <DType T>
cudaError_t launch_for_element(const QuantizeParams& p, cudaStream_t stream) {
  const Element e = p.format.elem;
  if (e == CodecE4M3::elem()) return launch<T>(p, CodecE4M3{}, stream);
  if (e == CodecE5M2::elem()) return launch<T>(p, CodecE5M2{}, stream);
  if (e == CodecE2M3::elem()) return launch<T>(p, CodecE2M3{}, stream);
  if (e == CodecE3M2::elem()) return launch<T>(p, CodecE3M2{}, stream);
  if (e == CodecE2M1::elem()) return launch<T>(p, CodecE2M1{}, stream);
  if (e == CodecInt8::elem()) return launch<T>(p, CodecInt8{}, stream);
  return launch<T>(p, CodecRuntime{e}, stream);
}

}  // namespace

cudaError_t launch_quantize(const QuantizeParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case DType::F32: return launch_for_element<DType::F32>(p, stream);
    case DType::F16: return launch_for_element<DType::F16>(p, stream);
    default: return launch_for_element<DType::BF16>(p, stream);
  }
}

}  // namespace mxattn::kernels
