// Merge of the decode kernel's split partials by log-sum-exp: one warp per (batch, KV head, row).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mxattn/kernels/attention/decode_kernel.h"
#include "mxattn/ptx/griddep.h"

namespace mxattn::kernels {

struct MergeParams {
  const float* part_o = nullptr;
  const float* part_lse = nullptr;
  int batch = 1, heads_kv = 1, rows = 1, group = 1, q_len = 1, splits = 1, head_dim = 128;
  const float* v_tensor_scale = nullptr;  // device S_enc of V where its format has one, else null
  void* out = nullptr;                    // [B, q_len, H_q, D]
  int64_t out_stride[3] = {0, 0, 0};
  bool out_fp16 = false;
  float* lse = nullptr;  // [B, H_q, q_len], natural log; may be null
};

// Latency bound (a few KB per warp): the split LSEs are read 32 at a time across the lanes and
// reduced with shuffles, and the partial outputs of 8 splits are loaded before they are summed.
__global__ void decode_merge_kernel(const MergeParams p) {
  const int warps = blockDim.x / 32;
  const int64_t task = int64_t(blockIdx.x) * warps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  ptx::griddep_wait();  // a programmatic dependent of the decode kernel: wait for its partials
  if (task >= int64_t(p.batch) * p.heads_kv * p.rows) return;
  const int r = int(task % p.rows), hk = int(task / p.rows % p.heads_kv), b = int(task / p.rows / p.heads_kv);
  const float* lse = p.part_lse + task * p.splits;
  float m = -INFINITY;
  for (int s = lane; s < p.splits; s += 32) m = fmaxf(m, lse[s]);
#pragma unroll
  for (int mask = 16; mask > 0; mask /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
  const float shift = m == -INFINITY ? 0.0f : m;
  float l = 0.0f;
  for (int s = lane; s < p.splits; s += 32) l += exp2f(lse[s] - shift);
#pragma unroll
  for (int mask = 16; mask > 0; mask /= 2) l += __shfl_xor_sync(0xffffffffu, l, mask);
  const float inv = (l > 0.0f ? 1.0f / l : 0.0f) * (p.v_tensor_scale ? 1.0f / *p.v_tensor_scale : 1.0f);
  const int tok = r / p.group, h = hk * p.group + r % p.group;
  const int64_t out_off = b * p.out_stride[0] + int64_t(tok) * p.out_stride[1] + int64_t(h) * p.out_stride[2];
  const float* part = p.part_o + task * p.splits * p.head_dim;
  for (int d = 2 * lane; d < p.head_dim; d += 64) {
    float x0 = 0.0f, x1 = 0.0f;
#pragma unroll 8
    for (int s = 0; s < p.splits; ++s) {
      const float w = exp2f(lse[s] - shift);
      const float2 v = *reinterpret_cast<const float2*>(part + int64_t(s) * p.head_dim + d);
      x0 += w * v.x, x1 += w * v.y;
    }
    x0 *= inv, x1 *= inv;
    if (p.out_fp16)
      *reinterpret_cast<__half2*>(static_cast<__half*>(p.out) + out_off + d) = __floats2half2_rn(x0, x1);
    else
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p.out) + out_off + d) =
          __floats2bfloat162_rn(x0, x1);
  }
  if (p.lse && lane == 0)
    p.lse[(int64_t(b) * p.heads_kv * p.group + h) * p.q_len + tok] = l > 0.0f ? (m + log2f(l)) * kLn2 : -INFINITY;
}

}  // namespace mxattn::kernels
