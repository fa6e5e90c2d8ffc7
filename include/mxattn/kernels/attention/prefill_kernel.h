// The portable fused attention kernel (sm_80+): one thread block per (64 query rows, query head,
// batch entry); each warp owns 16 query rows. Per KV tile of 64 keys: dequantize K and V into
// shared memory, S = Q K^T and O += P V on mma.sync m16n8k16 BF16 with FP32 accumulators, online
// softmax in between (softmax.h). Scores never leave registers.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mxattn/kernels/attention/fragment.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/kernels/attention/prefill_load.h"
#include "mxattn/kernels/attention/prefill_tile.h"
#include "mxattn/ptx/ldmatrix.h"
#include "mxattn/ptx/mma.h"

namespace mxattn::kernels {

template <int D>
__global__ void __launch_bounds__(PrefillTraits<D>::kThreads) prefill_kernel(const __grid_constant__ PrefillParams p) {
  using T = PrefillTraits<D>;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  auto& ss = *reinterpret_cast<PrefillShared<D>*>(smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.x * T::kBlockM, h = blockIdx.y, b = blockIdx.z, hk = h / p.group;
  const SeqSpan sp = seq_span(p, b);
  if (sp.bad) {  // offsets that cannot be right: the sequence's LSE is NaN (api/attention.h)
    for (int row = m0 + tid; p.lse && row < min(m0 + T::kBlockM, p.seq_q); row += T::kThreads)
      lse_at(p, b, h, row) = NAN;
    return;
  }
  if (m0 >= sp.seq_q) return;  // a packed batch's shorter sequence

  if (p.q_is_mx) build_element_table(ss.q_table, p.q_mx.format, tid, T::kThreads);
  build_element_table(ss.k_table, p.k.format, tid, T::kThreads);
  build_element_table(ss.v_table, p.v.format, tid, T::kThreads);
  __syncthreads();
  load_q_tile<D>(ss, p, sp, h, m0, tid);

  float o[T::kDimTiles][4];
#pragma unroll
  for (int i = 0; i < T::kDimTiles; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  OnlineSoftmax sm;

  const float scale_log2 =
      p.softmax_scale * kLog2e * p.k.inv_tensor_scale() * (p.q_is_mx ? p.q_mx.inv_tensor_scale() : 1.0f);
  const float out_scale = p.v.inv_tensor_scale();
  const int kv_end = prefill_kv_end(p, sp, m0, T::kBlockM);
  const int row0 = m0 + warp * 16 + g;  // this thread's rows: row0 and row0 + 8
  const auto a_addr = frag::ldmatrix_a_addr(lane);
  const auto b_addr = frag::ldmatrix_b2_addr(lane);

  for (int j0 = 0; j0 < kv_end; j0 += T::kBlockN) {
    __syncthreads();  // the previous tile's K and V are no longer read
    load_k_tile<D>(ss, p, sp, hk, j0, tid);
    load_v_tile<D>(ss, p, sp, hk, j0, tid);
    __syncthreads();

    // S = Q K^T for this warp's 16 rows and 64 keys.
    float s[T::kKeyTiles][4];
#pragma unroll
    for (int j = 0; j < T::kKeyTiles; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < T::kKSteps; ++ks) {
      uint32_t a[4];
      ptx::ldmatrix_x4_b16(a, &ss.q[warp * 16 + a_addr.row][ks * 16 + a_addr.col]);
#pragma unroll
      for (int j = 0; j < T::kKeyTiles; j += 2) {
        uint32_t kb[4];
        ptx::ldmatrix_x4_b16(kb, &ss.k[j * 8 + b_addr.row][ks * 16 + b_addr.col]);
        const uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
        ptx::mma_m16n8k16_row_col_f32_bf16(s[j], a, b0, s[j]);
        ptx::mma_m16n8k16_row_col_f32_bf16(s[j + 1], a, b1, s[j + 1]);
      }
    }

    scale_and_mask(s, p, sp, j0, m0, row0, lane, scale_log2);
    float rescale[2];
    sm.update(s, rescale);
    rescale_rows(o, rescale);

    mma_pv_bf16(ss.vt, lane, s, o);
  }

  write_rows(p, sp, b, h, row0, t, o, sm, out_scale);  // V's tensor scale folded in
}

}  // namespace mxattn::kernels
