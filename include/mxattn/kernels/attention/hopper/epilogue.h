// A consumer warpgroup's epilogue on its 64 rows of a query tile: normalize O, apply V's channel factors,
// write O and the log-sum-exp. A channel is NaN in the rows that see a key of one of its NaN blocks
// (fold_kernel.h v_nan), as the reference has it.
//
// O is stored from registers, a 4-byte pair of channels at a time. (H200, bench/prefill_notes.md v19: O
// staged per warp in shared memory and copied out by a bulk copy a row was 3-6% slower at 1k; by 16-byte
// stores, and with half this epilogue's instructions, within the spread at D = 128 and slower at D = 64.)
#pragma once
#include "mxattn/kernels/attention/params.h"

namespace mxattn::kernels::hopper {

// Rows row0 and row0 + 8 (this thread's) of sequence span sp (b: the LSE's batch index), head h.
// o.out(i): accumulator i's value of O (fragment.h's layout); any_key: whether the rows saw a KV tile at
// all (a row that saw no key writes zeros, whatever its channel factors).
template <int D, typename Softmax, typename OAcc>
__device__ __forceinline__ void epilogue(const PrefillParams& p, const SeqSpan& sp, Softmax& sm, const OAcc& o, bool any_key,
                                         const float* v_factor, const int* v_nan_key, int b, int h, int row0, int t) {
  sm.finish();
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (sp.bad) {  // offsets that cannot be right: the sequence's LSE is NaN (api/attention.h)
      if (p.lse && t == 0 && row < p.seq_q) lse_at(p, b, h, row) = NAN;
      continue;
    }
    if (row >= sp.seq_q) continue;
    const float f = sm.inv_sum(r);
    const int last_key = p.causal ? min(sp.seq_kv - 1, row + sp.diag()) : sp.seq_kv - 1;
    const OutRow out = out_row(p, sp.b, sp.q0 + row, h);
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      const int d = 8 * i + 2 * t;
      const float2 vf = *reinterpret_cast<const float2*>(&v_factor[d]);
      const int2 nan_key = *reinterpret_cast<const int2*>(&v_nan_key[d]);
      const float o0 = any_key ? o.out(4 * i + 2 * r) * vf.x * f : 0.0f;
      const float o1 = any_key ? o.out(4 * i + 2 * r + 1) * vf.y * f : 0.0f;
      out.store_pair(d, nan_key.x <= last_key ? NAN : o0, nan_key.y <= last_key ? NAN : o1);
    }
    if (p.lse && t == 0) lse_at(p, b, h, row) = sm.lse(r);
  }
}

}  // namespace mxattn::kernels::hopper
