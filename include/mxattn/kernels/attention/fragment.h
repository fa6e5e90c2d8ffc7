// Fragment maps of mma.sync m16n8k16 (bf16/f16 operands, f32 accumulators) as constexpr functions,
// and the operand permutations the decode kernel uses to read the KV cache with 16-byte loads.
// Host-compilable: tests/cpp/fragment_test.cpp checks each map against its inverse.
//
// g = lane / 4 (0..7), t = lane % 4 (0..3); each register holds two 16-bit elements (half 0 low).
//
//   A 16x16 (row)              B 16x8 (col): (k, n)        C/D 16x8 f32
//          cols 0-7 | 8-15       k 0-7  : b0 (2t+h, g)        rows 0-7 : c0 c1 (g, 2t), (g, 2t+1)
//   rows 0-7   a0   |  a2        k 8-15 : b1 (8+2t+h, g)      rows 8-15: c2 c3 (g+8, 2t), (g+8, 2t+1)
//   rows 8-15  a1   |  a3
//   a_r holds (g + 8*(r%2), 2t + h + 8*(r/2))
//
// ldmatrix.x4 (non-transposed) from a row-major [row][k] tile: lane i points at row
// (i%8) + 8*((i/8)%2), column 8*(i/16) for an A fragment, and at row (i%8) + 8*(i/16),
// column 8*((i/8)%2) for two B fragments (n-tiles n0 and n0+8) of a [n][k] tile.
#pragma once

namespace mxattn::frag {

struct RowCol {
  int row, col;
};
struct LaneReg {
  int lane, reg, half;
};

constexpr RowCol mma_a(int lane, int reg, int half) {
  return {lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + half + 8 * (reg / 2)};
}
constexpr LaneReg mma_a_owner(int row, int col) {
  return {(row % 8) * 4 + (col % 8) / 2, (row / 8) + 2 * (col / 8), col % 2};
}

// B as (k, n).
constexpr RowCol mma_b(int lane, int reg, int half) { return {2 * (lane % 4) + half + 8 * reg, lane / 4}; }
constexpr LaneReg mma_b_owner(int k, int n) { return {n * 4 + (k % 8) / 2, k / 8, k % 2}; }

// C: reg 0..3 (one f32 each); half is unused (0).
constexpr RowCol mma_c(int lane, int reg) { return {lane / 4 + 8 * (reg / 2), 2 * (lane % 4) + reg % 2}; }
constexpr LaneReg mma_c_owner(int row, int col) { return {(row % 8) * 4 + col / 2, 2 * (row / 8) + col % 2, 0}; }

// mma.sync m16n8k32 with 8-bit operands (E4M3): each register holds four codes (byte 0 lowest).
//   A 16x32: a_r byte b holds (g + 8*(r%2), 4t + b + 16*(r/2));  B 32x8 (k, n): b_r byte b holds (4t + b + 16r, g).
// The kernels do not use it (the portable kernel is BF16); `mxattn probe` measures it against these.
constexpr RowCol mma_a8(int lane, int reg, int byte) {
  return {lane / 4 + 8 * (reg % 2), 4 * (lane % 4) + byte + 16 * (reg / 2)};
}
constexpr RowCol mma_b8(int lane, int reg, int byte) { return {4 * (lane % 4) + byte + 16 * reg, lane / 4}; }

// mma.sync m16n8k64 with packed 4-bit operands (sm_120a kind::mxf4nvf4): eight E2M1 codes a register, nibble j
// in bits 4j..4j+3.  A 16x64: a_r nibble j holds (g + 8*(r%2), 8t + j + 32*(r/2));  B 64x8: b_r nibble j holds
// (8t + j + 32r, g).
constexpr RowCol mma_a4(int lane, int reg, int nibble) {
  return {lane / 4 + 8 * (reg % 2), 8 * (lane % 4) + nibble + 32 * (reg / 2)};
}
constexpr RowCol mma_b4(int lane, int reg, int nibble) { return {8 * (lane % 4) + nibble + 32 * reg, lane / 4}; }

// Row and column a lane addresses for ldmatrix.x4 of an A fragment / of two B fragments.
constexpr RowCol ldmatrix_a_addr(int lane) { return {lane % 8 + 8 * ((lane / 8) % 2), 8 * (lane / 16)}; }
constexpr RowCol ldmatrix_b2_addr(int lane) { return {lane % 8 + 8 * (lane / 16), 8 * ((lane / 8) % 2)}; }

// Decode, S = Q K^T: the contraction index of k-step s, slot kappa (0..15, as in A's columns and B's k)
// is the head-dim channel d = t*(D/4) + 4s + p with t = (kappa%8)/2 and p = kappa%2 + 2*(kappa/8).
// So lane t holds D/4 consecutive channels of each key: one 16-byte load of FP8 codes for D = 64,
// two for D = 128. Q's A fragments are loaded with the same map, so the dot products are unchanged.
//
//   D = 128, lane t:  k-step 0 -> d 32t+0..3,  k-step 1 -> d 32t+4..7,  ...,  k-step 7 -> d 32t+28..31
constexpr int qk_channel(int head_dim, int kstep, int kappa) {
  return ((kappa % 8) / 2) * (head_dim / 4) + 4 * kstep + kappa % 2 + 2 * (kappa / 8);
}
struct StepSlot {
  int kstep, kappa;
};
constexpr StepSlot qk_channel_slot(int head_dim, int d) {
  const int t = d / (head_dim / 4), r = d % (head_dim / 4), p = r % 4;
  return {r / 4, 2 * t + p % 2 + 8 * (p / 2)};
}

// Decode, O = P V: output n-tile i, column n (0..7, the B fragment's n = lane/4) is channel
// d = n*(D/8) + i, so lane g holds D/8 consecutive channels of each key it reads.
constexpr int pv_channel(int head_dim, int ntile, int n) { return n * (head_dim / 8) + ntile; }
struct TileCol {
  int ntile, n;
};
constexpr TileCol pv_channel_slot(int head_dim, int d) { return {d % (head_dim / 8), d / (head_dim / 8)}; }

// Decode with keys and channels in M ("swapped": S^T = K Q^T, O^T = V^T P^T, query rows in N = 8).
// S^T: A = K (16 keys x 16 channels; lane g holds keys g, g+8), B = Q^T; the contraction slots keep
// qk_channel, so a lane still holds D/4 consecutive channels of 4 keys.
// O^T: A = V^T (16 channel slots m x 16 keys), C = O^T (m, query row). Channel m-tile i, slot m is
//   d = (m%8)*(D/8) + 2i + m/8,
// so lane g (A rows g and g+8) holds D/8 consecutive channels of each key it reads, and register
// a0/a2 (m = g) and a1/a3 (m = g+8) of m-tile i are the lane's channels 2i and 2i+1.
//
//   D = 128, lane g:  m-tile 0 -> d 16g+0 (a0,a2), 16g+1 (a1,a3);  ...;  m-tile 7 -> d 16g+14, 16g+15
constexpr int pvt_channel(int head_dim, int mtile, int m) { return (m % 8) * (head_dim / 8) + 2 * mtile + m / 8; }
struct TileRow {
  int mtile, m;
};
constexpr TileRow pvt_channel_slot(int head_dim, int d) {
  const int r = d % (head_dim / 8);
  return {r / 2, d / (head_dim / 8) + 8 * (r % 2)};
}

// Decode: where lane (g, t) reads a tile's codes. A tile is 32 consecutive cache rows (keys) of
// row_bytes each, for K and for V. S^T's A fragments: key tile j (0..3) -> row 8j + g, bytes
// [t * row_bytes/4, +row_bytes/4) (qk_channel's D/4 channels). O^T's A fragments: PV step kk, slot r
// (0..3) -> row decode_v_key(kk, r, t), bytes [g * row_bytes/8, +row_bytes/8) (pvt_channel's D/8).
constexpr int decode_k_row(int j, int g) { return 8 * j + g; }
constexpr int decode_v_key(int kk, int r, int t) { return 16 * kk + 2 * t + r % 2 + 8 * (r / 2); }

// Decode stage layout: a tile's rows are copied as they are in memory (each copy instruction moves
// 512 contiguous bytes), with the 16-byte chunks of every 128-byte line L XOR-swizzled: chunk q
// lands at q ^ s(L), s(L) = ((L * mul) ^ (L >> shift)) & mask. The parameters per row width come
// from a search over small values, kept where s does not change over 8 rows (so a lane's offsets
// for rows 8m + x are its offsets for row x plus 8m rows: computed once per lane). They make the
// decode kernel's fragment reads (above) hit every bank once per phase for 32-, 64- and 128-byte rows
// and at most twice for 256-byte rows; 6-bit rows are not swizzled. Kernels that read V by
// ldmatrix (8 consecutive rows' same 16-byte chunk a phase: decode_traits.h kVFold) take `ldmatrix_rows`,
// under which those reads and K's above hit every bank once (no one swizzle of this family serves
// both V reads at 32- and 64-byte rows). fragment_test.cpp checks this.
struct StageSwizzle {
  int mul, shift, mask;
};
constexpr StageSwizzle stage_swizzle(int row_bytes, bool ldmatrix_rows = false) {
  switch (row_bytes) {
    case 32: return ldmatrix_rows ? StageSwizzle{1, 30, 1} : StageSwizzle{2, 30, 2};  // s(L) = L & 1, 2L & 2
    case 64: return ldmatrix_rows ? StageSwizzle{1, 30, 3} : StageSwizzle{2, 30, 6};  // s(L) = L & 3, 2L & 6
    case 128: return {1, 30, 7};  // s(L) = L & 7
    case 256: return {0, 1, 7};   // s(L) = (L >> 1) & 7 = row & 7
    default: return {0, 30, 0};   // 48, 96, 192 (6-bit codes): none
  }
}
// Byte offset in the stage of byte `off` of a tile whose rows are row_bytes wide.
constexpr int stage_offset(int row_bytes, int off, bool ldmatrix_rows = false) {
  const StageSwizzle z = stage_swizzle(row_bytes, ldmatrix_rows);
  const int line = off >> 7, chunk = (off >> 4) & 7;
  return (line << 7) | ((chunk ^ (((line * z.mul) ^ (line >> z.shift)) & z.mask)) << 4) | (off & 15);
}

}  // namespace mxattn::frag
