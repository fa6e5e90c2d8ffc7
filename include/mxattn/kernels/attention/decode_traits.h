// Sizes of the split-KV decode kernel (flash-decoding, DESIGN.md §4).
//
// A thread block serves one (batch entry, KV head, 8-row query tile, KV split), and one block fills
// an SM: its kWarps warps take the split's 32-key tiles from a shared counter as they go, so they
// all finish within a tile of each other. (Blocks of 4 warps with fixed tiles, 3 per SM, finished
// far apart: the SM's scheduler favours the oldest warps, and the last block ran alone at a quarter
// of the SM's warps; bench/decode_notes.md v7.) The 8 query rows are the query tokens times the GQA
// group's query heads (row r: token r / group, head r % group). Decode has few rows (GQA 4 x 1 token
// = 4), so they go in the MMA's N dimension (n8) and keys / channels in M (m16): S^T = K Q^T and
// O^T = V^T P^T (fragment.h, "swapped"). Each warp keeps its own online softmax; the warps combine
// through shared memory at the end, and the last block of a query tile to finish merges the splits
// by log-sum-exp (decode_merge.h).
//
// Per 32-key tile a lane reads from the warp's stage, with 16-byte loads where the widths allow
// (fragment.h maps; K and V each in its own format, CacheCodec):
//   K: 4 keys (8j + g), channels [t*D/4, (t+1)*D/4)   -> the A fragments of S^T = K Q^T
//   V: 8 keys (16kk + 2t, 2t+1, 2t+8, 2t+9), channels [g*D/8, (g+1)*D/8)  -> the A fragments of O^T
// and the scale bytes of those channel ranges; then dequantizes them in registers. P^T, the B operand
// of O^T, is S^T's accumulator transposed in registers (movmatrix).
#pragma once
#include <cstdint>

#include "mxattn/kernels/attention/decode_codec.h"
#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/attention/fragment.h"

namespace mxattn::kernels {

// One tensor's (K's or V's) cache format as the kernel is compiled for it: its decoder (decode_codec.h),
// element bits and block size. K and V may differ (a wider K than V, say).
template <Codec C, int Bits, int Block>
struct CacheCodec {
  static constexpr Codec kCodec = C;
  static constexpr int kBits = Bits, kBlock = Block;
};

// A tensor's share of a 32-key tile: Channels channels of a key per lane.
template <int HeadDim, class F, int Channels>
struct DecodeTensor {
  static constexpr Codec kCodec = F::kCodec;
  static constexpr int kBits = F::kBits, kBlock = F::kBlock, kChannels = Channels;
  // A cache row (one token of one head) is D codes then D / Block scale bytes: compile-time strides, so
  // a tile's addresses are one base plus immediates.
  static constexpr int kRowBytes = HeadDim * kBits / 8;
  static constexpr int kRowScales = HeadDim / kBlock;
  static constexpr int kBytes = Channels * kBits / 8;  // a lane's code bytes of a key
  static constexpr int kWords = (kBytes + 3) / 4;
  // Scale bytes per lane per key: the blocks its channel range touches (ranges start on block edges
  // or lie inside one block).
  static constexpr int kScales = Channels >= kBlock ? Channels / kBlock : 1;
  static constexpr int kCodeBytes = 32 * kRowBytes;    // a tile's code rows
  static constexpr int kScaleBytes = 32 * kRowScales;  // a tile's scale rows
  static_assert(kScales <= 4, "scale bytes of a lane fit one word");
  static_assert(kScaleBytes % 16 == 0, "a tile's scale rows are whole 16-byte chunks");
  static_assert(kRowBytes % 16 == 0, "code rows are whole 16-byte chunks");
};

template <int HeadDim, class KF, class VF>
struct DecodeTraits {
  static constexpr int kHeadDim = HeadDim;
  static constexpr int kRows = 8;       // N tile: query tokens x GQA heads
  static constexpr int kTileKeys = 32;  // keys per warp step
  static constexpr int kKeyTiles = kTileKeys / 8;   // 8-key groups: a lane holds key g of each
  static constexpr int kPvSteps = kTileKeys / 16;   // m-tiles of S^T = k-steps of O^T
  static constexpr int kKSteps = HeadDim / 16;      // k-steps of S^T
  static constexpr int kKChains = 2;                // independent accumulators per S^T m-tile: MMA latency
  static constexpr int kDimTiles = HeadDim / 16;    // m-tiles of O^T
  using K = DecodeTensor<HeadDim, KF, HeadDim / 4>;  // a lane: 4 keys, D / 4 channels each
  using V = DecodeTensor<HeadDim, VF, HeadDim / 8>;  // a lane: 8 keys, D / 8 channels each
  // A tile's code rows (32 keys, K then V) and scale rows (K then V) go through a shared-memory stage
  // per warp with cp.async, copied by the whole warp as they lie in the page (fragment.h stage_offset
  // swizzles the code rows' 16-byte chunks).
  static constexpr int kCodeStageBytes = K::kCodeBytes + V::kCodeBytes;
  static constexpr int kStageBytes = kCodeStageBytes + K::kScaleBytes + V::kScaleBytes;  // one warp, one tile
  // Warps per block (= per SM) and tiles in flight per warp (the one in use and kStages - 1 ahead).
  // The register budget is 65536 / (32 x warps): 16 warps (128 registers) for E2M1 and at head_dim 64, 12
  // (168) for 6-bit codes at head_dim 128, 10 (200) for E4M3 there, 8 (255) for other 8-bit codes and head_dim
  // 256 (bench/decode_notes.md v4,
  // v6); fewer where the stages do not fit the 227 KB of shared memory, two at a time (head_dim 256 with
  // 8-bit K and V: 6 warps, where stepping by 4 gave 4: 59% -> 87% of copy at 32k keys on the H200,
  // bench/decode_notes.md). With 8 or 12 warps claiming
  // tiles, one tile ahead per warp keeps the copies going: 3 stages measured up to 5% slower than 2
  // (8-bit codes, 4k keys), and no faster anywhere (bench/decode_notes.md v7).
  static constexpr int kStages = 2;
  static constexpr bool fits(int warps) {
    return warps * kStages * kStageBytes + 2 * int(sizeof(ElementTable)) + 64 <= 232448;
  }
  static constexpr int kWarps = [] {
    // E2M1 K and V (~120 registers) take 16 warps (128 registers): on the H200 1.5-5% faster than 12 (it was 4%
    // slower on the H100, v7: its bandwidth hid the latency the extra warps cover).
    if (is_e2m1(KF::kCodec) && is_e2m1(VF::kCodec) && HeadDim <= 128) return 16;
    // Head dim 64 fits 128 registers for every format but a 6-bit side with an 8-bit side (150): 16 warps,
    // on the H200 4-5% faster than 8 for 8-bit codes (12: no better), 1.5-3% faster than 12 for 6-bit ones.
    if (HeadDim == 64 && !((KF::kBits == 8 || VF::kBits == 8) && (KF::kBits == 6 || VF::kBits == 6))) return 16;
    // E4M3 K and V at head_dim 128 need 168 registers when held to them (202 at 8 warps, no spills either
    // way): 10 warps, 3-5% faster than 8 at 128k keys on the H200 and the same at 32k (12: 5% faster at
    // 128k, 3% slower at 32k).
    if (HeadDim == 128 && KF::kCodec == Codec::E4M3 && VF::kCodec == Codec::E4M3) return 10;
    int w = HeadDim > 128 || KF::kBits == 8 || VF::kBits == 8 ? 8 : 12;
    while (w > 4 && !fits(w)) w -= 2;
    return w;
  }();
  static constexpr int kThreads = 32 * kWarps;
  // How many parts a lane's K and V channels are decoded in, each just before its MMAs: at head dim 256
  // (255 registers) K in halves, and V too where it is E2M1 or K's scales apply after the MMA (kKAfter, whose
  // per-block accumulators an 8-bit V decoded whole spilled beside); decoded whole, a 6-bit K with an E2M1 or E4M3
  // V spilled 4-40 bytes (ptxas -v).
  static constexpr int kKParts = HeadDim == 256 ? 2 : 1;
  static constexpr int kVParts = HeadDim == 256 && (is_e2m1(VF::kCodec) || KF::kCodec == Codec::E2M1E8m0) ? 2 : 1;
  // The warps' partial outputs in shared memory: row r, channel d = k * D/8 + j (lane g = k holds
  // channels k * D/8 ..) at r * kCombineRow + k * (D/8 + 1) + j. The pad word per D/8 channels and
  // a row stride of 4 mod 16 words put a warp's 32 stores (rows 2t + c, channels of g) in 32
  // distinct banks; channel order with a stride of D + 4 put them in 4 (8-way conflicts: 3 us of
  // a 120 us call, bench/decode_notes.md v7).
  // E2M1 values with E8M0 scales in blocks of 32 (decode_codec.h E2M1E8m0): V's scales are folded into P, so an
  // O^T m-tile must hold channels of one block. Lane (g, t) reads V by ldmatrix.trans, a 16-byte matrix row being
  // one block of one key: it gets channels 32b + 4g .. 32b + 4g + 3 of keys 2t, 2t + 1 (and 2t + 8, 2t + 9), and
  // m-tile 2b + h holds block b's channels 32b + 4 (m % 8) + 2h + m / 8 (slot m = g, g + 8).
  static constexpr bool kVFold = VF::kCodec == Codec::E2M1E8m0;
  // The same codec for K: its block scales after the MMA. ldmatrix gives lane (g, t) word t (channels 32b + 8t ..
  // + 7) of each block of its keys, so the two k-steps of a code word lie inside one block: per-block accumulators,
  // then one FFMA a score and block (Q's words block-major to match, decode_kernel.h load_q_words).
  static constexpr bool kKAfter = KF::kCodec == Codec::E2M1E8m0;
  static constexpr int kVBlocks = HeadDim / 32;
  static constexpr int o_channel(int mtile, int m) {
    return kVFold ? 32 * (mtile / 2) + 4 * (m % 8) + 2 * (mtile % 2) + m / 8 : frag::pvt_channel(HeadDim, mtile, m);
  }
  // Where channel d's slot sits in the warps' partials, which are stored by slot in pvt_channel's order (the
  // conflict-free stores below): d itself without the fold.
  static constexpr int combine_pos(int d) {
    if (!kVFold) return d;
    const int b = d / 32, r = d % 32;
    return frag::pvt_channel(HeadDim, 2 * b + (r % 4) / 2, r / 4 + 8 * (r % 2));
  }
  static constexpr int kCombineRow = (8 * (HeadDim / 8 + 1) + 11) / 16 * 16 + 4;
  static constexpr int combine_at(int d) { return d / (HeadDim / 8) * (HeadDim / 8 + 1) + d % (HeadDim / 8); }
  static constexpr bool combine_stores_conflict_free() {
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < HeadDim / 16; ++i)
        for (int h = 0; h < 2; ++h) {
          uint32_t banks = 0;
          for (int lane = 0; lane < 32; ++lane)
            banks |= 1u << ((2 * (lane % 4) + c) * kCombineRow + combine_at(frag::pvt_channel(HeadDim, i, lane / 4 + 8 * h))) % 32;
          if (banks != 0xFFFFFFFFu) return false;
        }
    return true;
  }
  static_assert(HeadDim == 64 || HeadDim == 128 || HeadDim == 256, "head_dim 64, 128 or 256");
  static_assert(combine_stores_conflict_free(), "a warp's combine stores hit 32 banks");
  static constexpr bool combine_pos_is_the_slot() {
    for (int i = 0; i < HeadDim / 16; ++i)
      for (int m = 0; m < 16; ++m)
        if (combine_pos(o_channel(i, m)) != frag::pvt_channel(HeadDim, i, m)) return false;
    return true;
  }
  static_assert(combine_pos_is_the_slot(), "the combine reads channel d where its slot was stored");
  // decode_kernel.h's ldmatrix rows of V blocks 2q, 2q + 1: the lane's row of blocks 0, 1 XOR 32q.
  static constexpr bool ldmatrix_rows_by_xor() {
    constexpr int rb = V::kRowBytes;
    for (int lane = 0; lane < 32; ++lane)
      for (int q = 0; kVFold && q < kVBlocks / 2; ++q) {
        const int row = (8 * (lane / 8 % 2) + lane % 8) * rb;
        if (frag::stage_offset(rb, row + 16 * (2 * q + lane / 16), true) != (frag::stage_offset(rb, row + 16 * (lane / 16), true) ^ 32 * q))
          return false;
      }
    return true;
  }
  static_assert(ldmatrix_rows_by_xor(), "V's ldmatrix rows step by XOR");
  // The same for K's (kKAfter): block b of keys 0..15 at the lane's row of block 0 XOR 16b.
  static constexpr bool k_ldmatrix_rows_by_xor() {
    constexpr int rb = K::kRowBytes;
    for (int lane = 0; lane < 16; ++lane)
      for (int b = 0; kKAfter && b < kVBlocks; ++b)
        if (frag::stage_offset(rb, lane * rb + 16 * b, true) != (frag::stage_offset(rb, lane * rb, true) ^ 16 * b)) return false;
    return true;
  }
  static_assert(k_ldmatrix_rows_by_xor(), "K's ldmatrix rows step by XOR");
  static_assert(kCombineRow >= 8 * (HeadDim / 8 + 1), "padded rows do not overlap");
  static_assert(fits(kWarps), "the stages fit shared memory");
};

template <class T>
struct DecodeShared {
  ElementTable k_table, v_table;
  union {
    uint8_t stage[T::kWarps][T::kStages][T::kStageBytes];  // per warp: code rows, then scale rows
    struct {
      float o[T::kWarps][T::kRows][T::kCombineRow];  // per-warp partial outputs (combine_at)
      float row_max[T::kWarps][T::kRows], row_sum[T::kWarps][T::kRows];
      // The block's normalized partial and its rows' log-sum-exps, where the splits merge in their cluster
      // (decode_kernel.h): read by the cluster's first block.
      alignas(8) float part_o[T::kRows][T::kHeadDim];
      float part_lse[T::kRows];
    } combine;  // after the mainloop
  };
  // Per warp, V's running block-scale references where its scales fold into P (decode_kernel.h v_ref): warp-uniform
  // values, kept here rather than in registers (a 6-bit K beside them spilled).
  int v_ref[T::kWarps][T::kVFold ? T::kVBlocks : 1];
  int next_tile;  // the split's next unclaimed tile
  int is_last;    // this block merges the splits
};

}  // namespace mxattn::kernels
