// A consumer warpgroup's epilogue on its 64 rows of a query tile: normalize O, apply V's channel factors,
// write O and the log-sum-exp. A channel is NaN in the rows that see a key of one of its NaN blocks
// (fold_kernel.h v_nan), as the reference has it.
//
// Where O is staged (traits.h kOStaged: D = 128), it goes into the warpgroup's stage in shared memory, by
// stmatrix (four 8 x 8 blocks an instruction, 128-byte swizzled: conflict-free), and a store warp takes it
// from there (store.h); the warpgroup goes on to its next tile. Elsewhere each thread stores its part of O
// from registers, a pair of channels at a time.
#pragma once
#include "mxattn/kernels/attention/hopper/fragment.h"
#include "mxattn/kernels/attention/hopper/store.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/ptx/stmatrix.h"

namespace mxattn::kernels::hopper {

// Rows row0 and row0 + 8 (this thread's: warp `warp`, lane `lane`, t = lane % 4) of sequence span sp (b: the
// LSE's batch index), head h; wg: the consumer warpgroup, `stage` its O stage (kStaged). o.out(i): accumulator
// i's value of O (fragment.h's layout); any_key: whether the rows saw a KV tile at all (a row that saw no key
// writes zeros, whatever its channel factors).
template <int D, bool kStaged, typename Softmax, typename OAcc>
__device__ __forceinline__ void epilogue(const PrefillParams& p, const SeqSpan& sp, Softmax& sm, const OAcc& o, bool any_key,
                                         const float* v_factor, const int* v_nan_key, int b, int h, int row0, int warp,
                                         int lane, int wg, uint8_t* stage) {
  const int t = lane % 4;
  if constexpr (kStaged) o_stage_acquire(wg);
  sm.finish();
  float f[2];
  int last_key[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    f[r] = sm.inv_sum(r);
    last_key[r] = p.causal ? min(sp.seq_kv - 1, row + sp.diag()) : sp.seq_kv - 1;
  }
  // Channels d, d + 1 of row r (accumulator block i), rounded to the output's type.
  auto pair = [&](int i, int r, float2 vf, int2 nan_key) {
    const float o0 = any_key ? o.out(4 * i + 2 * r) * vf.x * f[r] : 0.0f;
    const float o1 = any_key ? o.out(4 * i + 2 * r + 1) * vf.y * f[r] : 0.0f;
    return OutRow::pack(p.out.fp16, nan_key.x <= last_key[r] ? NAN : o0, nan_key.y <= last_key[r] ? NAN : o1);
  };
  if constexpr (kStaged) {
    // Every row goes into the stage; the store warp copies the sequence's (none where sp.bad). Lane `lane`'s
    // row of stmatrix k lies at its row of stmatrix 0, its 16-byte chunk XOR 2k % 8 (the 128-byte swizzle
    // flips the chunk bits, which the tile's 1024-byte alignment leaves clear), in the panel of 64 channels
    // 2k / 8 (tests/cpp/hopper_fragment_test.cpp OStageRowsOfStmatrix).
    using Tile = frag::KMajorTile<64, 2 * D>;
    const frag::WgRowCol at = frag::stmatrix_acc_row(warp, lane, 0);
    const uint32_t base = ptx::smem_addr(stage) + Tile::offset(at.row, 2 * at.col);
#pragma unroll
    for (int k = 0; k < D / 16; ++k) {
      uint32_t x[4];
#pragma unroll
      for (int j = 0; j < 4; j += 2) {
        const int i = 2 * k + j / 2, d = 8 * i + 2 * t;
        const float2 vf = *reinterpret_cast<const float2*>(&v_factor[d]);
        const int2 nan_key = *reinterpret_cast<const int2*>(&v_nan_key[d]);
        x[j] = pair(i, 0, vf, nan_key);
        x[j + 1] = pair(i, 1, vf, nan_key);
      }
      ptx::stmatrix_x4_b16((base ^ ((2 * k % 8) << 4)) + 2 * k / 8 * Tile::kPanelBytes, x);
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (sp.bad) {  // offsets that cannot be right: the sequence's LSE is NaN (api/attention.h)
      if (p.lse && t == 0 && row < p.seq_q) lse_at(p, b, h, row) = NAN;
      continue;
    }
    if (row >= sp.seq_q) continue;
    if constexpr (!kStaged) {
      const OutRow out = out_row(p, sp.b, sp.q0 + row, h);
#pragma unroll
      for (int i = 0; i < D / 8; ++i) {
        const int d = 8 * i + 2 * t;
        out.store_word(d, pair(i, r, *reinterpret_cast<const float2*>(&v_factor[d]),
                               *reinterpret_cast<const int2*>(&v_nan_key[d])));
      }
    }
    if (p.lse && t == 0) lse_at(p, b, h, row) = sm.lse(r);
  }
  if constexpr (kStaged) o_stage_release(wg);
}

}  // namespace mxattn::kernels::hopper
