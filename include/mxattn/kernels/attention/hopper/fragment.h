// Fragment maps of wgmma m64nNk32 with E4M3 operands (and m64nNk16 with BF16 A) and FP32 accumulators, the K-major swizzled
// shared-memory tile wgmma reads, and the key order that lets P go from accumulators straight into
// an A fragment. Host-compilable: tests/cpp/hopper_fragment_test.cpp checks each map against its inverse.
//
// A warpgroup is 4 warps; warp w owns rows 16w .. 16w+15 of the 64-row tile; g = lane / 4, t = lane % 4.
//
//   Accumulator (64 x N, f32), register r = 4i + q:       A from registers (64 x 32 E4M3), reg r, byte b:
//            cols 8i+2t  8i+2t+1                                     k 4t..4t+3   k 16+4t..16+4t+3
//   row g     d[4i+0]    d[4i+1]                          row g        a0            a2
//   row g+8   d[4i+2]    d[4i+3]                          row g+8      a1            a3
//
// P = softmax(S) sits in S's accumulator layout, where a thread holds keys 8i+2t and 8i+2t+1. The A
// fragment wants keys 4t..4t+3 in one register. Rather than moving bytes between lanes, the kernel
// packs the keys it holds (8i+2t, 8i+2t+1, 8(i+1)+2t, 8(i+1)+2t+1) into a0 and stores V^T with its keys
// in the same order (pv_slot_key): the contraction runs over the same pairs, in another order.
//
//   slot (position along k in a k32 step) -> key within the step's 32:
//   slots  0- 3: keys 0 1 8 9    4- 7: 2 3 10 11    8-11: 4 5 12 13   12-15: 6 7 14 15   (16-31: +16)
//
// The exact mode's P is BF16 (two values a register), whose k16 A fragment is the accumulator's layout
// as it stands: no key order to change.
//
//   A from registers (64 x 16 BF16), register r, half h (0: low):
//            k 2t, 2t+1   k 8+2t, 8+2t+1
//   row g       a0           a2
//   row g+8     a1           a3
#pragma once
#include <cstdint>

namespace mxattn::frag {

struct WgRowCol {
  int row, col;
};
struct WgOwner {
  int thread, reg;  // thread 0..127 of the warpgroup; reg: accumulator index, or A register * 4 + byte
};

// Accumulator register r of warpgroup thread `thread` -> (row, col) of the 64 x N tile.
constexpr WgRowCol wgmma_acc(int thread, int r) {
  const int warp = thread / 32, lane = thread % 32, i = r / 4, q = r % 4;
  return {16 * warp + lane / 4 + 8 * (q / 2), 8 * i + 2 * (lane % 4) + q % 2};
}
constexpr WgOwner wgmma_acc_owner(int row, int col) {
  const int warp = row / 16, g = row % 8, half = (row % 16) / 8, i = col / 8, t = (col % 8) / 2;
  return {32 * warp + 4 * g + t, 4 * i + 2 * half + col % 2};
}

// A fragment of an 8-bit k32 step: register `reg` (0..3), byte `byte` (0..3) -> (row, k).
constexpr WgRowCol wgmma_a8(int thread, int reg, int byte) {
  const int warp = thread / 32, lane = thread % 32;
  return {16 * warp + lane / 4 + 8 * (reg % 2), 16 * (reg / 2) + 4 * (lane % 4) + byte};
}
constexpr WgOwner wgmma_a8_owner(int row, int k) {
  const int warp = row / 16, g = row % 8, half = (row % 16) / 8, t = (k % 16) / 4;
  return {32 * warp + 4 * g + t, 4 * (2 * (k / 16) + half) + k % 4};
}

// A fragment of a 16-bit k16 step: register `reg` (0..3), half `half` (0: the low 16 bits) -> (row, k).
constexpr WgRowCol wgmma_a16(int thread, int reg, int half) {
  const int warp = thread / 32, lane = thread % 32;
  return {16 * warp + lane / 4 + 8 * (reg % 2), 8 * (reg / 2) + 2 * (lane % 4) + half};
}
constexpr WgOwner wgmma_a16_owner(int row, int k) {
  const int warp = row / 16, g = row % 8, half = (row % 16) / 8, t = (k % 8) / 2;
  return {32 * warp + 4 * g + t, 2 * (2 * (k / 8) + half) + k % 2};
}

// P V: slot (0..31) of a k32 step -> the key (0..31) whose probability and V row sit there, and back.
constexpr int pv_slot_key(int slot) {
  const int h = slot / 16, t = (slot % 16) / 4, b = slot % 4;
  return 16 * h + 8 * (b / 2) + 2 * t + b % 2;
}
constexpr int pv_key_slot(int key) {
  const int h = key / 16, k = key % 16;
  return 16 * h + 4 * ((k % 8) / 2) + 2 * (k / 8) + k % 2;
}

// stmatrix.x4 number k of a warp's accumulators as 16-bit values (ptx/stmatrix.h): its matrices j = 0..3 are
// accumulator block 2k + j / 2, rows + 8 (j % 2) of the warp's 16, so each thread's registers go as they
// are. Lane l addresses row l % 8 of matrix l / 8: the 64-row tile's row and first channel of it.
//
//   lanes  0- 7: rows 16w +  0..7, channels 16k ..    lanes 16-23: rows 16w +  0..7, channels 16k + 8 ..
//   lanes  8-15: rows 16w +  8..15, channels 16k ..   lanes 24-31: rows 16w +  8..15, channels 16k + 8 ..
constexpr WgRowCol stmatrix_acc_row(int warp, int lane, int k) {
  const int j = lane / 8;
  return {16 * warp + 8 * (j % 2) + lane % 8, 8 * (2 * k + j / 2)};
}

// A K-major FP8 operand tile of Rows x Cols bytes (Cols: the contraction extent), as wgmma reads it
// with a Width-byte swizzle (Width = 128 when Cols is a multiple of 128, else 64): Cols / Width panels
// of Rows x Width bytes, panel after panel; in each, the 16-byte chunk c of row r lands at chunk
// c ^ (r % 8) (128 B) or c ^ ((r / 2) % 4) (64 B): the address bits [4:6] ^= [7:9] of the swizzle,
// taken on offsets from a 1024-byte aligned base.
//
//   128 B swizzle, chunk position of (row, chunk):   row 0: 0 1 2 3 4 5 6 7
//                                                     row 1: 1 0 3 2 5 4 7 6   ...   row 7: 7 6 5 4 3 2 1 0
template <int Rows, int Cols>
struct KMajorTile {
  static constexpr int kWidth = Cols % 128 == 0 ? 128 : 64;
  static constexpr int kPanels = Cols / kWidth;
  static constexpr int kBytes = Rows * Cols;
  static constexpr int kPanelBytes = Rows * kWidth;
  static constexpr int kGroupBytes = 8 * kWidth;  // the descriptor's stride: one 8-row group
  static_assert(Cols % 64 == 0 && Rows % 8 == 0, "K-major FP8 tiles are whole 8-row groups of 64-byte multiples");

  // Byte offset of (row, col); col a multiple of 16 addresses a whole chunk.
  static constexpr uint32_t offset(int row, int col) {
    const uint32_t lin = uint32_t(row * kWidth + col % kWidth);
    const uint32_t bits = kWidth == 128 ? (lin >> 7) & 7 : (lin >> 7) & 3;
    return uint32_t((col / kWidth) * Rows * kWidth) + (lin ^ (bits << 4));
  }
  // Where a descriptor for rows row0.. at contraction byte k0 (a multiple of 32) starts.
  static constexpr uint32_t desc_offset(int row0, int k0) {
    return uint32_t((k0 / kWidth) * Rows * kWidth + row0 * kWidth + k0 % kWidth);
  }
};

}  // namespace mxattn::frag
