// Where the sm_120a prefill kernel's block-scaled mma.sync operands come from (ptx/mma_block_scale.h,
// m16n8k32 kind::mxf8f6f4, scale_vec::1X, selectors {0, 0}). Host-compilable: tests/cpp/sm120_fragment_test.cpp
// assembles a warp's registers with these maps and runs them through the CPU model of the instruction
// (probe/probe.h mma_model) against FP64 attention math.
//
// Shared-memory tiles hold one element a byte, as the instruction reads them (E4M3 / E5M2 whole, 6-bit codes
// in bits 5:0, E2M1 in bits 5:2): Q [rows][D], K [keys][D], V^T [channels][keys] with each 32-key group's keys
// in P's slot order (hopper/fragment.h pv_slot_key: P goes from the accumulators into A fragments without
// moving between lanes, as in the Hopper kernel). Scales stay bytes: Q's and K's per row and 32 channels, V's
// per channel and 32 keys (V blocked along S), and P's one UE8M0 a row, 2^-8: P is stored times 2^8 (in
// [0, 256], E4M3's range) and the instruction scales it back exactly.
//
//   S = Q K^T, k-step ks (channels 32 ks ..), key tile j (keys 8j ..):
//     A register r of lane (g, t): 4 bytes at Q[g + 8 (r % 2)][32 ks + 4t + 16 (r / 2)]
//     B register r:                4 bytes at K[8j + g][32 ks + 4t + 16 r]
//     scale A: lane 4g row g's, lane 4g + 1 row g + 8's (byte 0); scale B: lane 4g key 8j + g's
//   O += P V, k-step kk (keys 32 kk ..), channel tile i (channels 8i ..):
//     A register r byte b: P of S's key tile 4 kk + 2 (r / 2) + b / 2, accumulator 2 (r % 2) + b % 2
//     B register r:        4 bytes at V^T[8i + g][32 kk + 4t + 16 r]
//     scale B: lane 4g channel 8i + g's block of keys 32 kk ..
#pragma once
#include <cstdint>

#include "mxattn/kernels/attention/fragment.h"
#include "mxattn/kernels/attention/hopper/fragment.h"

namespace mxattn::frag::sm120 {

// A code of `bits` bits in the byte the instruction reads.
constexpr uint8_t mma_byte(int bits, uint32_t code) { return uint8_t(bits == 4 ? code << 2 : code); }

// The byte (row, column) of the tile where A register `reg` of `lane` starts (its four bytes follow).
constexpr RowCol qk_a_at(int lane, int reg, int ks) {
  const RowCol x = mma_a8(lane, reg, 0);
  return {x.row, 32 * ks + x.col};
}
constexpr RowCol qk_b_at(int lane, int reg, int key_tile, int ks) {
  const RowCol x = mma_b8(lane, reg, 0);  // (k, n)
  return {8 * key_tile + x.col, 32 * ks + x.row};
}
constexpr RowCol pv_b_at(int lane, int reg, int channel_tile, int kk) {
  const RowCol x = mma_b8(lane, reg, 0);
  return {8 * channel_tile + x.col, 32 * kk + x.row};
}

// The row of A (of the 16) whose scale a lane supplies, or -1; the column of B (of the 8), or -1.
constexpr int scale_a_row(int lane) { return lane % 4 < 2 ? lane / 4 + 8 * (lane % 4) : -1; }
constexpr int scale_b_col(int lane) { return lane % 4 == 0 ? lane / 4 : -1; }

// V^T's column of a key of the tile (its 32-key group's keys in slot order).
constexpr int vt_column(int key) { return 32 * (key / 32) + pv_key_slot(key % 32); }

// P's A register `reg`, byte `byte` of PV k-step kk: S's key tile and accumulator (mma_c) it comes from.
struct Acc {
  int key_tile, reg;
};
constexpr Acc p_source(int reg, int byte, int kk) { return {4 * kk + 2 * (reg / 2) + byte / 2, 2 * (reg % 2) + byte % 2}; }

// S = Q K^T of packed E2M1 codes on m16n8k64 kind::mxf4nvf4 (NVFP4 with scale_vec::4X and UE4M3 scales, MXFP4
// with 2X and UE8M0): tiles hold the codes packed as in memory (two a byte, the lower element in the lower
// nibble), so a register is 4 bytes of a row: 8 codes. k-step ks covers channels 64 ks ..
//     A register r: bytes from Q[g + 8 (r % 2)][(64 ks + 8t + 32 (r / 2)) / 2]
//     B register r: bytes from K[8j + g][(64 ks + 8t + 32 r) / 2]
//     scale A / B: the lanes as above, bytes 0-3 the scales of channels 64 ks + 16 b .. (4X; 2X: bytes 0-1 of
//     channels 64 ks + 32 b ..): a row's scales of the k-step are consecutive bytes, one 32-bit load (4X)
constexpr RowCol qk4_a_at(int lane, int reg, int ks) {
  const RowCol x = mma_a4(lane, reg, 0);
  return {x.row, (64 * ks + x.col) / 2};
}
constexpr RowCol qk4_b_at(int lane, int reg, int key_tile, int ks) {
  const RowCol x = mma_b4(lane, reg, 0);  // (k, n)
  return {8 * key_tile + x.col, (64 * ks + x.row) / 2};
}

// P's scale code: UE8M0 2^-8 (P is stored times 2^8).
inline constexpr uint32_t kPScale = 127 - 8;
inline constexpr float kPOffset = 256.0f;

}  // namespace mxattn::frag::sm120
