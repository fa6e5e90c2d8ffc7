// The fold: Q, K and V folded into E4M3 once per call (fold.h; the exact mode's V into BF16), beside the
// attention kernel.
//
// Folding inside the attention kernel repeats the work for every query tile that reads a KV tile
// (S_q / 128 times: 128x at S = 16k), and the producer warpgroup measured at 2.4k instructions a
// warp per tile, twice the consumers' (bench/prefill_notes.md v3). Folded once, Q, K and V are plain
// E4M3 tiles the producer copies, and the fold runs at memory speed. Each tile is byte for byte the
// swizzled shared-memory tile wgmma reads (traits.h), so one bulk copy moves it.
//
// The fold runs in units of one (b, h_kv), in the attention kernel's order, and raises a unit's ready count
// as each of its items (Q or K tiles, a group of V's channels) is stored; the attention kernel's
// producer waits for its unit's count before the copies (ptx/flag.h). Every SM folds the first units; then
// the fold blocks on all but a few SMs stop, those SMs take the attention kernel's blocks, and the rest of
// the fold runs beside them (FoldGrid: keep_sms, exit_items).
//
//   header                   the attention kernel's tile counter (scheduler.h), the fold's two item counters,
//                            then the ready counts: one a unit (B x H_kv), one for tile_start; zeroed
//                            before the fold (Folded::header_bytes)
//   Q'    [B, H_q, m_tiles]  tiles of kBlockM query rows x D (Traits::QTile); rows at or past S_q zero;
//                            dense Q: two such tiles a query tile, hi then lo (q_terms = 2)
//   q_f   [B, H_q, m_tiles x kBlockM]  FP32, each query row's factor 2^(R - 127) (0 past S_q)
//   K'    [B, H_kv, k_tiles] tiles of kBlockN keys x D (Traits::KTile); keys at or past S_kv zero
//                            (S_pad = k_tiles x kBlockN)
//   V'^T  [B, H_kv, k_tiles] tiles of D channels x kBlockN keys (Traits::VTile), the keys of every 16
//                            in P's fragment order (fragment.h pv_key_slot); zero past S_kv. The exact
//                            mode: BF16, keys in order
//   v_f   [B, H_kv, D]       FP32, each channel's factor over the whole sequence
//   v_nan [B, H_kv, D]       int, each channel's first key in a NaN block (kNoNanKey: none); V'^T holds
//                            zeros there, and the attention kernel writes NaN to the rows that see it
//                            (not 0 x NaN on the tensor cores, which would reach the rows of a tile whose
//                            causal mask hides the key)
//   k_f   [B, H_kv, k_tiles] FP32, each KV tile's factor 2^(R - 127) (padded to a multiple of 4: the
//                            producer copies the 16-byte group that holds a tile's)
//   tile_start [B + 1]       int, a packed batch's first query tile of each sequence (scheduler.h), then
//                            the total: only the sequences' own tiles are scheduled
#pragma once
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "mxattn/kernels/attention/hopper/fold.h"
#include "mxattn/kernels/attention/hopper/traits.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/kernels/fast_div.h"
#include "mxattn/format/pack.h"
#include "mxattn/ptx/flag.h"
#include "mxattn/ptx/griddep.h"
#include "mxattn/ptx/prmt.h"

namespace mxattn::kernels::hopper {

inline constexpr int kNoNanKey = 0x7FFFFFFF;  // v_nan: the channel has no NaN block

struct Folded {
  int* tile_counter = nullptr;  // the attention kernel's (scheduler.h)
  int* item_counter = nullptr;  // the fold's items drawn, two counters (fold_kernel)
  int* ready = nullptr;         // items stored, one count a unit (b, hk), then tile_start's
  uint8_t* q = nullptr;
  float* q_factor = nullptr;
  uint8_t* k = nullptr;
  float* k_factor = nullptr;
  uint8_t* vt = nullptr;
  float* v_factor = nullptr;
  int* v_nan_key = nullptr;
  int* tile_start = nullptr;
  int s_pad = 0;
  int k_tiles = 0;  // KV tiles of the attention kernel: S_pad / kBlockN
  int m_tiles = 0;  // query tiles: ceil(S_q / kBlockM)
  int q_terms = 1;   // E4M3 tiles a query tile: 1 (MX Q), 2 (dense Q: hi + lo)
  int pv_bytes = 1;  // bytes of a V'^T element: 1 (E4M3), 2 (BF16: the exact mode)
  // A unit's ready count once it is folded: its items (FoldGrid), early_unit_items for the first early_units units.
  int early_units = 0, early_unit_items = 0, unit_items = 0;
  __device__ int unit_count(int unit) const { return unit < early_units ? early_unit_items : unit_items; }

  // Index of KV tile `tile` of (b, hk) in K', V'^T and k_f.
  __host__ __device__ int64_t kv_tile(int b, int hk, int tile, int heads_kv) const {
    return (int64_t(b) * heads_kv + hk) * k_tiles + tile;
  }
  // Index of query tile `tile` of (b, h) in Q' (and, times kBlockM, in q_f).
  __host__ __device__ int64_t q_tile(int b, int h, int tile, int heads_q) const {
    return (int64_t(b) * heads_q + h) * m_tiles + tile;
  }
  // The header: the counters (the attention kernel's tile counter, the fold's two item counters), then the ready
  // counts; its bytes, zeroed before the fold.
  static constexpr size_t kCounterBytes = 12;
  static size_t header_bytes(const PrefillParams& p) {
    return (kCounterBytes + (size_t(p.batch) * p.heads_kv + 1) * 4 + 15) / 16 * 16;
  }
  // The workspace's parts from its start: the header, the 4-byte arrays (q_f, v_f, v_nan, k_f, tile_start),
  // then the tiles (Q', K', V'^T), each 16-byte aligned for the bulk copies. Returns its bytes; with a base,
  // points the members there.
  size_t layout(uint8_t* base, const PrefillParams& p, int d, int block_m) {
    const size_t kv_rows = size_t(p.batch) * p.heads_kv, q_rows = size_t(p.batch) * p.heads_q * m_tiles * block_m;
    const size_t at_qf = header_bytes(p), at_vf = at_qf + q_rows * 4, at_vn = at_vf + kv_rows * d * 4;
    const size_t at_kf = at_vn + kv_rows * d * 4, at_ts = at_kf + (kv_rows * k_tiles + 3) / 4 * 16;
    const size_t at_q = (at_ts + (size_t(p.batch) + 1) * 4 + 15) / 16 * 16, at_k = at_q + q_rows * d * q_terms;
    const size_t at_vt = at_k + kv_rows * s_pad * d, end = at_vt + kv_rows * s_pad * d * pv_bytes;
    if (base) {
      tile_counter = reinterpret_cast<int*>(base);
      item_counter = reinterpret_cast<int*>(base + 4);
      ready = reinterpret_cast<int*>(base + kCounterBytes);
      q_factor = reinterpret_cast<float*>(base + at_qf);
      v_factor = reinterpret_cast<float*>(base + at_vf);
      v_nan_key = reinterpret_cast<int*>(base + at_vn);
      k_factor = reinterpret_cast<float*>(base + at_kf);
      tile_start = reinterpret_cast<int*>(base + at_ts);
      q = base + at_q, k = base + at_k, vt = base + at_vt;
    }
    return end;
  }
};

inline constexpr int kFoldThreads = 256;  // a fold block
inline constexpr int kVLanes = 4;          // the lanes of one V channel (fold_v_rows)
inline constexpr int kVItemRows = kFoldThreads / kVLanes;  // the channels of one of V's items
inline constexpr int kLoadBatch = 4;       // the chunks a thread loads before folding the first (load_chunk)
inline constexpr int kVKeyGrain = 16 * kVLanes * kLoadBatch;  // V's items span a multiple of these keys

// How a unit (b, h_kv) is cut into items: V's channel groups in ranges of v_keys keys first (the slowest items),
// then its K tiles and its group's Q tiles, `tiles` tiles an item.
struct UnitItems {
  int v_keys = 0;                      // a multiple of kVKeyGrain: whole load batches and whole KV tiles
  int tiles = 0;                       // the Q or K tiles of one item
  int v_items = 0, k_items = 0;        // V's and K's items (Q's follow)
  FastDivmod v_ranges, q_items, count;  // V's items a channel group; Q's items a head; all of the unit's

  static UnitItems of(const Folded& f, int groups, int group, int v_keys, int tiles) {
    UnitItems u;
    u.v_keys = v_keys, u.tiles = tiles;
    const int ranges = std::max(1, (f.s_pad + v_keys - 1) / v_keys), q_items = (f.m_tiles + tiles - 1) / tiles;
    u.v_ranges = FastDivmod(uint32_t(ranges));
    u.v_items = groups * ranges;
    u.k_items = (f.k_tiles + tiles - 1) / tiles;
    u.q_items = FastDivmod(uint32_t(std::max(q_items, 1)));
    u.count = FastDivmod(uint32_t(u.v_items + u.k_items + q_items * group));
    return u;
  }
};

// The fold's items in the attention kernel's order (scheduler.h): for a packed batch its tile_start first, then
// unit by unit (b, then h_kv). Items of several tiles, and V's channels kVLanes lanes each, share what an item
// costs before its first chunk among more chunks: at one tile or one channel a warp, that was most of the fold's
// instructions (bench/prefill_notes.md v27). But an item's tiles are folded one after another, ~2.5 us each, and
// the attention kernel's first waves wait for their units: those units are cut finer (`early`: two tiles an item,
// V's channels in ranges of 512 keys; at 1k keys no more items than the fold has blocks), so they are ready
// sooner (1-2% of the call at 1k and 4k keys; one tile an item measured the same; bench/prefill_notes.md v30).
// FoldGrid also holds what every item would otherwise derive on its own: the divisors of its index and of the
// operands' block sizes as multiply-highs, and the operands' headrooms (fold.h). Integer divisions, the format's
// largest value and 64-bit index products per row were a third of the pre-pass's instructions
// (bench/prefill_notes.md v24).
struct FoldGrid {
  int first = 0;        // items before the units: 1 for a packed batch's tile_start
  int items = 0;        // all of them
  int early_units = 0;  // the units cut as `early`, the first ones
  UnitItems early, late;
  FastDivmod heads_kv;
  FastDivmod q_block, k_block, v_block;  // the formats' block sizes
  int q_headroom = 0, k_headroom = 0, v_headroom = 0;
  // Blocks on SMs with an id below keep_sms (and block 0) fold until no item is left; the others fold only
  // items below exit_items (the early units'), which frees their SMs for the attention kernel.
  uint32_t keep_sms = 0;
  int exit_items = 0;

  // Where the fold runs: every SM folds the units of the attention kernel's first kWaves waves of query tiles,
  // then the fold's blocks stop on all but keep_sms SMs. keep_sms is the fold's share of the call's SM time,
  // from rates measured on the H200 (bench/prefill_notes.md v27, v28): the fold ~2100 chunks of 16 E4M3 or E2M1
  // elements a SM-us at D = 64 and 128 (a quarter of that at D = 256, where fewer fold SMs made the call slower at
  // 1k keys, the cause not yet measured; NVFP4's and the FP16 table's code kinds by their instructions a chunk
  // against MXFP8's), the attention kernel ~6 MFLOP a SM-us; 1.3 times that share (fewer SMs left the attention
  // kernel waiting for its units: 16 of 132 SMs at 1k keys, D = 128, MXFP8, with v27's fold), at least 8. Between
  // that and several times as many fold SMs the call's time stays the same (v28): the attention kernel finishes
  // when its SM time and the fold's have passed on the whole GPU, wherever the fold runs. A packed batch counts
  // every sequence at the longest's lengths.
  template <typename T>
  static FoldGrid of(const PrefillParams& p, const Folded& f, int sms) {
    constexpr int kGroups = T::kHeadDim / kVItemRows;  // V's channel groups
    static_assert(T::kHeadDim % kVItemRows == 0, "whole groups of V's channels");
    constexpr double kWaves = 1.5, kFlopPerSmUs = 6e6, kMargin = 1.3;
    FoldGrid g;
    g.first = p.cu_seqlens_q ? 1 : 0;
    g.early = UnitItems::of(f, kGroups, p.group, 2 * kVKeyGrain, 2);
    g.late = UnitItems::of(f, kGroups, p.group, 8 * kVKeyGrain, 4);
    const int units = p.batch * p.heads_kv;
    g.early_units = std::min(units, int(std::ceil(kWaves * sms / std::max(1, f.m_tiles * p.group))) + 1);
    g.exit_items = g.first + g.early_units * int(g.early.count.divisor);
    g.items = g.exit_items + (units - g.early_units) * int(g.late.count.divisor);
    g.heads_kv = FastDivmod(uint32_t(p.heads_kv));
    g.q_block = FastDivmod(uint32_t(p.q_is_mx ? p.q_mx.format.block : 16));
    g.k_block = FastDivmod(uint32_t(p.k.format.block));
    g.v_block = FastDivmod(uint32_t(p.v.format.block));
    g.q_headroom = p.q_is_mx ? fold_headroom(p.q_mx.format) : 0;
    g.k_headroom = fold_headroom(p.k.format);
    g.v_headroom = fold_headroom(p.v.format);

    const int d = T::kHeadDim;
    const double chunks_per_sm_us = d == 256 ? 525 : 2100;
    auto cost = [](const Format& fmt) {  // a chunk's, in MXFP8 chunks (with_codes: which fold a format takes)
      const Element e4m3 = Element::minifloat(4, 3, Specials::NanOnly), e2m1 = Element::minifloat(2, 1);
      if (fmt.scale == ScaleType::E8M0 && (fmt.elem == e4m3 || fmt.elem == e2m1)) return 1.0;
      return fmt.scale == ScaleType::UE4M3 && fmt.elem == e2m1 ? 1.3 : 2.0;
    };
    const double q_rows = double(p.seq_q) * p.heads_q * (p.q_is_mx ? cost(p.q_mx.format) : 1.0);
    const double kv_rows = double(p.seq_kv) * p.heads_kv * (cost(p.k.format) + cost(p.v.format));
    const double chunks = double(p.batch) * d / 16 * (q_rows + kv_rows);
    const double flop = 4.0 * p.batch * p.heads_q * double(p.seq_q) * p.seq_kv * d * (p.causal ? 0.5 : 1.0);
    const double fold = chunks / chunks_per_sm_us, attention = flop / kFlopPerSmUs;
    g.keep_sms = uint32_t(std::clamp(int(std::ceil(kMargin * sms * fold / (fold + attention))), std::min(8, sms), sms));
    return g;
  }
};

struct FoldTablesStorage {
  uint16_t value[256];
  uint2 e2m1[kE2M1MaxShift - kE2M1MinShift + 1];
};

// The tables a kind of codes reads (fold.h), built by the whole block; E4M3 and NVFP4's codes need none. (Every
// block of a launch takes the same branch of with_codes, so the barrier is reached by all threads.)
template <typename Codes>
__device__ __forceinline__ FoldTables build_fold_tables(Codes, FoldTablesStorage& t, const Format& f) {
  if constexpr (std::is_same_v<Codes, E4M3Codes> || std::is_same_v<Codes, Ue4m3Codes<4>>) return {nullptr, nullptr};
  if constexpr (std::is_same_v<Codes, E2M1Codes>) build_e2m1_table(t.e2m1, threadIdx.x, blockDim.x);
  else build_value_table(t.value, f, threadIdx.x, blockDim.x);
  __syncthreads();
  return {t.value, t.e2m1};
}

// A chunk's scale byte and codes, or zeros where it is out of bounds. Q's and K's items load kLoadBatch chunks
// before folding the first (V's items too, with their own bounds): one chunk's two loads at a time left the fold
// waiting on memory (issue 1.2 a cycle of 4; bench/prefill_notes.md v27).
template <typename Codes>
__device__ __forceinline__ void load_chunk(bool in, const uint8_t* scale, const uint8_t* codes, uint32_t& e,
                                           uint32_t (&w)[4]) {
  e = in ? *scale : 0u;
  if (in) load_codes16(Codes::kBits, codes, true, 16, w);
  else w[0] = w[1] = w[2] = w[3] = 0;
}

// Q: `tiles` query tiles of kBlockM rows from `tile0`, D/16 consecutive threads per row, so a row's reference (its
// largest finite block exponent less the format's headroom) is a max over those lanes. Rows at or past S_q become
// zeros with factor 0. A thread's rows are kRowsPerPass apart: its pointers step by a constant (a multiple of 8
// rows keeps a chunk's place in the swizzle, fragment.h KMajorTile), tile after tile.
template <typename T>
__device__ __forceinline__ void fold_q_tiles(const PrefillParams& p, const Folded& out, const FoldGrid& g,
                                             FoldTablesStorage& ts, int tile0, int tiles, int h, int b) {
  using QTile = typename T::QTile;
  constexpr int kChunks = T::kHeadDim / 16, kRowsPerPass = kFoldThreads / kChunks, kPasses = T::kBlockM / kRowsPerPass;
  constexpr int kBatch = kPasses < kLoadBatch ? kPasses : kLoadBatch;
  static_assert(kRowsPerPass % 8 == 0 && T::kBlockM % kRowsPerPass == 0, "whole passes of whole 8-row groups");
  static_assert(kPasses % kBatch == 0 && kBatch <= kChunks, "whole batches of loads; a lane a row for each factor");
  const int c = threadIdx.x % kChunks, r = threadIdx.x / kChunks;
  const SeqSpan sp = seq_span(p, b);
  const int row = sp.q0 + tile0 * T::kBlockM + r;
  int rows = sp.seq_q - tile0 * T::kBlockM;  // the tile's rows in bounds
  const uint8_t* scale = p.q_mx.row_scales(sp.b, row, h) + g.q_block.div(16 * c);
  const int64_t scale_step = kRowsPerPass * p.q_mx.scale_stride[1], code_step = kRowsPerPass * p.q_mx.code_stride[1];
  const float inv_ts = p.q_mx.inv_tensor_scale();
  const int64_t at = out.q_tile(b, h, tile0, p.heads_q);
  uint8_t* dst = out.q + at * out.q_terms * QTile::kBytes + QTile::offset(r, 16 * c);
  float* factor = out.q_factor + at * T::kBlockM + r;
  with_codes(p.q_mx.format, [&](auto codes) {
    using Codes = decltype(codes);
    const FoldTables tables = build_fold_tables(codes, ts, p.q_mx.format);
    const uint8_t* src = p.q_mx.row_codes(sp.b, row, h) + 2 * Codes::kBits * c;
    for (int t = 0; t < tiles; ++t) {
#pragma unroll
      for (int i0 = 0; i0 < kPasses; i0 += kBatch) {
        uint32_t e[kBatch], w[kBatch][4];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int i = i0 + j;
          load_chunk<Codes>(r + i * kRowsPerPass < rows, scale + i * scale_step, src + i * code_step, e[j], w[j]);
        }
        int lane_ref = 0;  // the reference of this lane's row in pass i0 + c (c < kBatch)
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int i = i0 + j;
          const bool in = r + i * kRowsPerPass < rows;
          uint32_t m = scale_order_key<Codes>(e[j]);
#pragma unroll
          for (int o = 1; o < kChunks; o <<= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
          const int ref = row_max_exponent<Codes>(m) - g.q_headroom;
          const uint4 v =
              in ? fold_codes(codes, w[j], block_scale_parts<Codes>(e[j]), ref, tables, 16) : make_uint4(0, 0, 0, 0);
          *reinterpret_cast<uint4*>(dst + i * kRowsPerPass * QTile::kWidth) = v;
          if (c == j) lane_ref = ref;
        }
        // The batch's row factors, lane c of a row storing pass i0 + c's: one factor a lane and batch, not one a
        // chunk (they were ~15 of Q's ~100 instructions a chunk; bench/prefill_notes.md v28).
        if (c < kBatch) {
          const int i = i0 + c;
          factor[i * kRowsPerPass] = r + i * kRowsPerPass < rows ? fold_factor(lane_ref) * inv_ts : 0.0f;
        }
      }
      rows -= T::kBlockM, scale += kPasses * scale_step, src += kPasses * code_step;
      dst += out.q_terms * QTile::kBytes, factor += T::kBlockM;
    }
  });
}

// Dense BF16/FP16 Q: each row as two E4M3 terms against one factor f = 2^(E - 7), E the exponent of the
// row's largest |element|: hi = E4M3(x / f) (the largest lands in [128, 256)), lo = E4M3(x / f - hi). The
// residual of rounding 8 significant bits to 4 is a multiple of x's last bit of at most 8 of them, so
// hi + lo is x exactly wherever that bit is an E4M3 number: every BF16 element within 2^10 of its row's
// largest (smaller ones keep their leading bits); FP16's 11 bits keep about 8. Inf becomes NaN (E4M3
// has no Inf; its scores are NaN or infinite). Same threads and rows as fold_q_tiles.
template <typename T>
__device__ __forceinline__ void fold_dense_q_tile(const PrefillParams& p, const Folded& out, int tile, int h, int b) {
  using QTile = typename T::QTile;
  constexpr int D = T::kHeadDim, kChunks = D / 16, kRowsPerPass = kFoldThreads / kChunks, kRows = T::kBlockM;
  const int m0 = tile * kRows, c = threadIdx.x % kChunks;
  const SeqSpan sp = seq_span(p, b);
  uint8_t* dst = out.q + out.q_tile(b, h, tile, p.heads_q) * 2 * QTile::kBytes;
  float* factor = out.q_factor + out.q_tile(b, h, tile, p.heads_q) * kRows;
  for (int r = threadIdx.x / kChunks; r < kRows; r += kRowsPerPass) {
    const int row = m0 + r;
    const bool in = row < sp.seq_q;
    float x[16] = {};
    if (in) {
      const uint4* src = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.q.data) + sp.b * p.q.stride[0] +
                                                        int64_t(sp.q0 + row) * p.q.stride[1] + h * p.q.stride[2] + 16 * c);
      const uint4 w0 = src[0], w1 = src[1];
      const uint32_t w[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        if (p.q.fp16) {
          const float2 f2 = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
          x[2 * i] = f2.x, x[2 * i + 1] = f2.y;
        } else {
          x[2 * i] = __uint_as_float(w[i] << 16), x[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
        }
      }
    }
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (isinf(x[i])) x[i] = __int_as_float(0x7FFFFFFF);
      m = fmaxf(m, fabsf(x[i]));  // (NaN ignored)
    }
#pragma unroll
    for (int o = 1; o < kChunks; o <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const int e = m > 0.0f ? max(ilogbf(m), -110) : 0;  // (-110: 2^(7 - e) stays finite)
    const float inv_f = ldexpf(1.0f, 7 - e);
    uint32_t hi[4], lo[4];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float y0 = x[2 * i] * inv_f, y1 = x[2 * i + 1] * inv_f;
      const uint32_t h2 = ptx::cvt_rn_satfinite_e4m3x2_f32(y1, y0);
      const uint32_t b2 = ptx::cvt_rn_f16x2_e4m3x2(h2);  // hi back, exactly
      const float2 back = __half22float2(*reinterpret_cast<const __half2*>(&b2));
      const uint32_t l2 = ptx::cvt_rn_satfinite_e4m3x2_f32(y1 - back.y, y0 - back.x);
      if (i % 2 == 0) hi[i / 2] = h2, lo[i / 2] = l2;
      else hi[i / 2] |= h2 << 16, lo[i / 2] |= l2 << 16;
    }
    *reinterpret_cast<uint4*>(dst + QTile::offset(r, 16 * c)) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
    *reinterpret_cast<uint4*>(dst + QTile::kBytes + QTile::offset(r, 16 * c)) = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    if (c == 0) factor[r] = in ? ldexpf(1.0f, e - 7) : 0.0f;
  }
}

// K: `tiles` KV tiles of the attention kernel (Traits::kBlockN keys) from `tile0`, D/16 consecutive threads per
// key, as Q's rows. A tile's reference is the largest finite block exponent of all its keys, less the format's
// headroom: one factor per tile, which the softmax folds into its scale (a factor per key cost a multiply per
// score and its shared-memory load). A key whose blocks lie below the tile's largest shifts down by the
// difference: exact while its elements stay E4M3 normals (fold.h). The block's maxima alternate between two
// rows of warp_max, so one barrier a tile keeps a tile's writes from the last tile's reads.
template <typename T>
__device__ __forceinline__ void fold_k_tiles(const PrefillParams& p, const Folded& out, const FoldGrid& g,
                                             FoldTablesStorage& ts, uint32_t (&warp_max)[2][kFoldThreads / 32],
                                             int tile0, int tiles, int hk, int b) {
  using KTile = typename T::KTile;
  constexpr int kChunks = T::kHeadDim / 16, kKeysPerPass = kFoldThreads / kChunks, kPasses = T::kBlockN / kKeysPerPass;
  static_assert(kKeysPerPass % 8 == 0 && T::kBlockN % kKeysPerPass == 0, "whole passes of whole 8-row groups");
  static_assert(kPasses <= kLoadBatch, "a tile's loads in flight at once");
  const int c = threadIdx.x % kChunks, r = threadIdx.x / kChunks;
  const SeqSpan sp = seq_span(p, b);
  const int key = sp.k0 + tile0 * T::kBlockN + r;
  int keys = sp.seq_kv - tile0 * T::kBlockN;  // the tile's keys in bounds
  const uint8_t* scale = p.k.row_scales(sp.b, key, hk) + g.k_block.div(16 * c);
  const int64_t scale_step = kKeysPerPass * p.k.scale_stride[1], code_step = kKeysPerPass * p.k.code_stride[1];
  const int64_t at = out.kv_tile(b, hk, tile0, p.heads_kv);
  uint8_t* dst = out.k + at * KTile::kBytes + KTile::offset(r, 16 * c);
  const float inv_ts = p.k.inv_tensor_scale();
  with_codes(p.k.format, [&](auto codes) {
    using Codes = decltype(codes);
    const FoldTables tables = build_fold_tables(codes, ts, p.k.format);
    const uint8_t* src = p.k.row_codes(sp.b, key, hk) + 2 * Codes::kBits * c;
    for (int t = 0; t < tiles; ++t) {
      uint32_t e[kPasses], w[kPasses][4], m = 0;
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        load_chunk<Codes>(r + i * kKeysPerPass < keys, scale + i * scale_step, src + i * code_step, e[i], w[i]);
        m = max(m, scale_order_key<Codes>(e[i]));
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
      if (threadIdx.x % 32 == 0) warp_max[t & 1][threadIdx.x / 32] = m;
      __syncthreads();
#pragma unroll
      for (int wi = 0; wi < kFoldThreads / 32; ++wi) m = max(m, warp_max[t & 1][wi]);
      const int ref = row_max_exponent<Codes>(m) - g.k_headroom;
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        const bool in = r + i * kKeysPerPass < keys;
        const uint4 v =
            in ? fold_codes(codes, w[i], block_scale_parts<Codes>(e[i]), ref, tables, 16) : make_uint4(0, 0, 0, 0);
        *reinterpret_cast<uint4*>(dst + i * kKeysPerPass * KTile::kWidth) = v;
      }
      if (threadIdx.x == 0) out.k_factor[at + t] = fold_factor(ref) * inv_ts;
      keys -= T::kBlockN, scale += kPasses * scale_step, src += kPasses * code_step, dst += KTile::kBytes;
    }
  });
}

// V: kVLanes lanes per channel (V is blocked along S_kv), kVItemRows channels and `keys` keys an item: the
// largest finite block exponent of the whole row first (every item of the row finds the same; the first writes the
// row's factor and first NaN key), then its chunks of 16 keys folded, reordered into P's fragment order (bytes 0 1
// 8 9 | 2 3 10 11 | 4 5 12 13 | 6 7 14 15) and stored; a channel's lanes take 16 kVLanes keys a step. (A warp a
// channel left 2 chunks a lane at 1k keys under ~350 instructions of the row's setup, and 8 lanes a channel still
// ~32 of V's ~110 instructions a chunk (bench/prefill_notes.md v28); items of whole rows made the last unit's V a
// serial tail at 16k keys.) The exact mode writes BF16 in key order (fold.h fold16_bf16;
// fragment.h: P's BF16 fragment needs none).
template <typename T>
__device__ __forceinline__ void fold_v_rows(const PrefillParams& p, const Folded& out, const FoldGrid& g,
                                            FoldTablesStorage& ts, int group, int key_begin, int keys, int hk, int b) {
  using VTile = typename T::VTile;
  constexpr int D = T::kHeadDim, kKeys = T::kBlockN, kStep = 16 * kVLanes;
  const int l = threadIdx.x % kVLanes, d = group * kVItemRows + threadIdx.x / kVLanes;
  const int bits = p.v.format.elem.bits;
  const SeqSpan sp = seq_span(p, b);
  const int nblk = g.v_block.div(sp.seq_kv + p.v.format.block - 1);
  const uint8_t* scales = p.v.row_scales(sp.b, hk, d) + g.v_block.div(sp.k0);  // (v_scales, without its division)
  const uint8_t* codes = v_codes(p, sp, hk, d);
  const bool aligned = reinterpret_cast<uintptr_t>(scales) % 16 == 0;
  const int row_bytes = int(packed_bytes(size_t(sp.seq_kv), bits));
  with_codes(p.v.format, [&](auto kind) {
    using Codes = decltype(kind);
    constexpr int kBits = Codes::kBits;
    FoldTables tables;
    if constexpr (T::kExact) {
      build_value_table(ts.value, p.v.format, threadIdx.x, blockDim.x);
      __syncthreads();
      tables.value = ts.value;
    } else {
      tables = build_fold_tables(kind, ts, p.v.format);
    }
    // The row's largest scale (by its order key) and its first block with a NaN scale.
    uint32_t m = 0;
    int nan_block = kNoNanKey;
    for (int i = 16 * l; i < nblk; i += 16 * kVLanes) {
      if (aligned && i + 16 <= nblk) {
        const uint4 x = *reinterpret_cast<const uint4*>(scales + i);
        m = __vmaxu4(m, __vmaxu4(__vmaxu4(scale_order_keys4<Codes>(x.x), scale_order_keys4<Codes>(x.y)),
                                 __vmaxu4(scale_order_keys4<Codes>(x.z), scale_order_keys4<Codes>(x.w))));
        const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (int k = 3; k >= 0; --k) {
          const uint32_t nan = scale_nan_mask4<Codes>(w[k]);
          if (nan) nan_block = min(nan_block, i + 4 * k + (__ffs(nan) - 1) / 8);
        }
      } else {
        for (int k = 0; k < 16 && i + k < nblk; ++k) {
          m = max(m, scale_order_key<Codes>(scales[i + k]));
          if (nan_block == kNoNanKey && block_scale_parts<Codes>(scales[i + k]).e == kE8M0Nan) nan_block = i + k;
        }
      }
    }
    m = max_bytes(m);
#pragma unroll
    for (int o = 1; o < kVLanes; o <<= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    const int ref = row_max_exponent<Codes>(m) - g.v_headroom;
    if (key_begin == 0) {
      // NaN blocks become zeros in V'^T, and the rows that see their first key get NaN (mainloop.h). (A block
      // is a multiple of 16 keys: its first key is a chunk's.)
#pragma unroll
      for (int o = 1; o < kVLanes; o <<= 1) nan_block = min(nan_block, __shfl_xor_sync(0xffffffffu, nan_block, o));
      if (l == 0) {
        const int64_t row = (int64_t(b) * p.heads_kv + hk) * D + d;
        out.v_factor[row] = fold_factor(ref) * p.v.inv_tensor_scale();
        out.v_nan_key[row] = nan_block == kNoNanKey ? kNoNanKey : nan_block * p.v.format.block;
      }
    }

    // A chunk of keys from key0 goes to tile key0 / kKeys, at key0 % kKeys in it. A lane's chunks lie kStep keys
    // apart and its first lies within kStep of a tile's start: where kStep and kKeys divide one another and a batch
    // spans whole tiles (all but the exact mode's D = 64), chunk j of every batch lies a constant number of tiles
    // and keys past the batch's first, which keeps the lane's first place (a division and the place a chunk were
    // ~15 of V's ~90 instructions a chunk; bench/prefill_notes.md v28).
    static_assert(kLoadBatch * kStep == kVKeyGrain, "an item's keys (a multiple of kVKeyGrain) are whole batches");
    constexpr bool kStaticPlaces = (kKeys % kStep == 0 || kStep % kKeys == 0) && kVKeyGrain % kKeys == 0;
    uint8_t* const tiles = out.vt + out.kv_tile(b, hk, 0, p.heads_kv) * VTile::kBytes;  // the head's first V'^T tile
    const int key_end = min(out.s_pad, key_begin + keys), first = key_begin + 16 * l;
    uint8_t* batch_tile = tiles + (first / kKeys) * VTile::kBytes;  // (kStaticPlaces) a batch's first chunk's tile
    const int first_place = first % kKeys;
    for (int key00 = first; key00 < key_end; key00 += kLoadBatch * kStep) {
      // kLoadBatch chunks' loads first (as Q's and K's items do with load_chunk), then their folds. A batch of
      // whole chunks in bounds loads its codes from one pointer without tests (the tests and a 64-bit address a
      // chunk were ~15 of V's instructions a chunk; bench/prefill_notes.md v28); the sequence's end and rows not
      // aligned for vector loads take the tested loads.
      BlockScaleParts sc[kLoadBatch];
      uint32_t w[kLoadBatch][4];
      if (p.v_vector && key00 + (kLoadBatch - 1) * kStep + 16 <= sp.seq_kv) {
        const uint8_t* const batch_codes = codes + key00 * kBits / 8;
#pragma unroll
        for (int j = 0; j < kLoadBatch; ++j) {
          sc[j] = block_scale_parts<Codes>(scales[g.v_block.div(key00 + j * kStep)]);
          load_codes16(kBits, batch_codes + j * kStep * kBits / 8, true, 0, w[j]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kLoadBatch; ++j) {
          const int key0 = key00 + j * kStep, valid = min(16, sp.seq_kv - key0), byte0 = key0 * kBits / 8;
          sc[j] = valid > 0 ? block_scale_parts<Codes>(scales[g.v_block.div(key0)]) : BlockScaleParts{};
          if (valid > 0 && sc[j].e != kE8M0Nan)
            load_codes16(kBits, codes + byte0, p.v_vector && valid == 16, row_bytes - byte0, w[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < kLoadBatch; ++j) {
        const int key0 = key00 + j * kStep, valid = min(16, sp.seq_kv - key0);
        if (key0 >= key_end) break;
        uint4 y[T::kPvBytes] = {};
        if (valid > 0 && sc[j].e != kE8M0Nan) {  // (NaN blocks: zeros)
          if constexpr (T::kExact) {
            fold16_bf16<kBits>(w[j], sc[j], int(sc[j].e) - ref, tables.value, y);
          } else {
            const uint4 x = fold_codes(kind, w[j], sc[j], ref, tables, valid);
            y[0] = make_uint4(ptx::prmt_b32(x.x, x.z, 0x5410), ptx::prmt_b32(x.x, x.z, 0x7632),
                              ptx::prmt_b32(x.y, x.w, 0x5410), ptx::prmt_b32(x.y, x.w, 0x7632));
          }
        }
        uint8_t* const tile = kStaticPlaces ? batch_tile + j * kStep / kKeys * VTile::kBytes
                                            : tiles + unsigned(key0) / kKeys * VTile::kBytes;
        const int place = kStaticPlaces ? first_place + j * kStep % kKeys : int(unsigned(key0) % kKeys);
#pragma unroll
        for (int jj = 0; jj < T::kPvBytes; ++jj)
          *reinterpret_cast<uint4*>(tile + VTile::offset(d, T::kPvBytes * place + 16 * jj)) = y[jj];
      }
      if constexpr (kStaticPlaces) batch_tile += kLoadBatch * kStep / kKeys * VTile::kBytes;
    }
  });
}

// A packed batch's tile_start (one block): sequence b has H_q x ceil(S_q(b) / kBlockM) query tiles (all of
// the longest's when its offsets are bad, so its LSE rows get their NaN); a scan of those, chunk by chunk.
template <typename T>
__device__ __forceinline__ void packed_tile_starts(const PrefillParams& p, const Folded& out) {
  constexpr int kM = T::kBlockM;
  __shared__ int part[kFoldThreads];
  auto tiles_of = [&](int b) {
    const SeqSpan sp = seq_span<true>(p, b);
    return p.heads_q * (((sp.bad ? p.seq_q : sp.seq_q) + kM - 1) / kM);
  };
  const int per = (p.batch + kFoldThreads - 1) / kFoldThreads, lo = threadIdx.x * per, hi = min(p.batch, lo + per);
  int sum = 0;
  for (int b = lo; b < hi; ++b) sum += tiles_of(b);
  part[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {  // the chunks' starts (kFoldThreads additions)
    int run = 0;
    for (int i = 0; i < kFoldThreads; ++i) {
      const int x = part[i];
      part[i] = run;
      run += x;
    }
    out.tile_start[p.batch] = run;
  }
  __syncthreads();
  int run = part[threadIdx.x];
  for (int b = lo; b < hi; ++b) out.tile_start[b] = run, run += tiles_of(b);
}

// Item `item` of the fold (FoldGrid's order); returns the ready count it raises.
template <typename T>
__device__ __forceinline__ int* fold_item(const PrefillParams& p, const Folded& out, const FoldGrid& g,
                                          FoldTablesStorage& ts, uint32_t (&warp_max)[2][kFoldThreads / 32],
                                          uint32_t item) {
  const int units = p.batch * p.heads_kv;
  if (item < uint32_t(g.first)) {
    packed_tile_starts<T>(p, out);
    return out.ready + units;
  }
  const bool early = item < uint32_t(g.exit_items);
  const UnitItems u = early ? g.early : g.late;
  uint32_t unit, i, b, hk;
  u.count.divmod(item - (early ? g.first : g.exit_items), unit, i);
  unit += early ? 0 : g.early_units;
  g.heads_kv.divmod(unit, b, hk);
  if (i < uint32_t(u.v_items)) {
    uint32_t group, range;
    u.v_ranges.divmod(i, group, range);
    fold_v_rows<T>(p, out, g, ts, group, range * u.v_keys, u.v_keys, hk, b);
  } else if ((i -= u.v_items) < uint32_t(u.k_items)) {
    const int tile = i * u.tiles;
    fold_k_tiles<T>(p, out, g, ts, warp_max, tile, min(u.tiles, out.k_tiles - tile), hk, b);
  } else {
    uint32_t hq, qi;
    u.q_items.divmod(i - u.k_items, hq, qi);
    const int h = hk * p.group + hq, tile = qi * u.tiles, tiles = min(u.tiles, out.m_tiles - tile);
    if (p.q_is_mx) {
      fold_q_tiles<T>(p, out, g, ts, tile, tiles, h, b);
    } else {
      for (int t = tile; t < tile + tiles; ++t) fold_dense_q_tile<T>(p, out, t, h, b);
    }
  }
  return out.ready + unit;
}

// The fold: persistent blocks drawing items from a counter, a block's threads on one item at a time. Each item's
// stores are released on its unit's ready count, which the attention kernel's producer acquires before its bulk
// copies (hence the async-proxy fence). The attention kernel, launched as this kernel's programmatic dependent,
// places its blocks on the SMs whose fold blocks have stopped (FoldGrid: keep_sms, exit_items).
// 4 blocks an SM (64 registers): the items' batched loads (kLoadBatch) spill at 40 or 32 registers, and the fold
// alone took 67 us at 4 blocks an SM against 82 at 6 and 109 at 8 (MXFP8, 1k, bench/prefill_notes.md v27).
template <typename T>
__global__ void __launch_bounds__(kFoldThreads, 4)
    fold_kernel(const __grid_constant__ PrefillParams p, const Folded out, const FoldGrid g) {
  __shared__ FoldTablesStorage ts;
  __shared__ uint32_t warp_max[2][kFoldThreads / 32];
  __shared__ uint32_t drawn[2];
  ptx::griddep_launch_dependents();
  const bool keep = blockIdx.x == 0 || ptx::smid() < g.keep_sms;  // block 0: someone folds every item
  // Items below exit_items come from the first counter, drawn by every block; the rest from the second, drawn by
  // the blocks that keep folding. (One counter and a test of its value before the draw let every block through at
  // the start, as all read it near 0: the 528 blocks took a third of the fold's items at 1k keys while the
  // attention kernel had no SM, ~22 us of a 250 us call; bench/prefill_notes.md v29.)
  bool late = false;  // thread 0's: the first counter has run out
  auto draw = [&] {
    if (!late) {
      const int i = atomicAdd(out.item_counter, 1);
      if (i < g.exit_items) return uint32_t(i);
      late = true;
    }
    return keep ? uint32_t(g.exit_items + atomicAdd(out.item_counter + 1, 1)) : uint32_t(g.items);
  };
  if (threadIdx.x == 0) drawn[0] = draw();
  __syncthreads();
  for (int k = 0;; k ^= 1) {
    const uint32_t item = drawn[k];
    if (item >= uint32_t(g.items)) return;
    // The next item's index is drawn before this one is folded: its atomic's latency passes under the fold.
    const uint32_t next = threadIdx.x == 0 ? draw() : 0u;
    int* ready = fold_item<T>(p, out, g, ts, warp_max, item);
    ptx::fence_proxy_async_global();  // the item's stores, read by the attention kernel's bulk copies
    if (threadIdx.x == 0) drawn[k ^ 1] = next;
    __syncthreads();  // every thread's stores done (and its read of drawn[k], which the draw after next rewrites)
    if (threadIdx.x == 0) ptx::red_release_gpu_add(ready, 1);
  }
}

}  // namespace mxattn::kernels::hopper
