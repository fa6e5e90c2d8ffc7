// Kernel parameters of the attention kernels: plain device-side views, filled by api/attention.h
// and api/kv_cache.h after validation.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/format/format.h"

namespace mxattn::kernels {

// Rows of packed codes (format/pack.h) along the block axis, addressed by three outer indices,
// with row-major scales (one byte per block) addressed the same way. Strides in bytes.
struct MxRows {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  int64_t code_stride[3] = {0, 0, 0};
  int64_t scale_stride[3] = {0, 0, 0};
  Format format;
  const float* tensor_scale = nullptr;  // device S_enc where format.tensor_scale, else null

  __device__ float inv_tensor_scale() const { return tensor_scale && format.tensor_scale ? 1.0f / *tensor_scale : 1.0f; }

  __host__ __device__ const uint8_t* row_codes(int64_t i0, int64_t i1, int64_t i2) const {
    return codes + i0 * code_stride[0] + i1 * code_stride[1] + i2 * code_stride[2];
  }
  __host__ __device__ const uint8_t* row_scales(int64_t i0, int64_t i1, int64_t i2) const {
    return scales + i0 * scale_stride[0] + i1 * scale_stride[1] + i2 * scale_stride[2];
  }
};

// A dense BF16 or FP16 tensor [B, S, H, D] with element strides for B, S, H (D contiguous).
struct DenseRows {
  void* data = nullptr;
  int64_t stride[3] = {0, 0, 0};
  bool fp16 = false;
};

struct PrefillParams {
  int batch = 1, seq_q = 1, seq_kv = 1, heads_q = 1, heads_kv = 1, group = 1;
  bool causal = false;
  float softmax_scale = 0;  // 1/S_enc of Q and K and log2(e) are folded in on the device

  bool q_is_mx = false;
  DenseRows q;       // when !q_is_mx
  MxRows q_mx;       // outer (b, s, h), rows along D
  MxRows k;          // outer (b, s, h), rows along D
  MxRows v;          // outer (b, h, d), rows along S_kv (channel-major, blocked along S_kv)
  bool v_vector = false;  // V's rows allow vector loads (aligned row starts)

  DenseRows out;          // [B, S_q, H_q, D]
  float* lse = nullptr;   // [B, H_q, S_q] natural log; may be null
};

// Two adjacent output channels d, d+1 of (b, row, h), rounded to the output's BF16 or FP16.
__device__ __forceinline__ void store_out_pair(const PrefillParams& p, int b, int row, int h, int d, float x0, float x1) {
  const int64_t off = b * p.out.stride[0] + int64_t(row) * p.out.stride[1] + h * p.out.stride[2] + d;
  if (p.out.fp16) {
    *reinterpret_cast<__half2*>(static_cast<__half*>(p.out.data) + off) = __floats2half2_rn(x0, x1);
  } else {
    *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p.out.data) + off) = __floats2bfloat162_rn(x0, x1);
  }
}

// Keys a query block can see: [0, end). Causal masks align bottom-right: row i sees j <= i + S_kv - S_q.
__device__ __forceinline__ int prefill_kv_end(const PrefillParams& p, int m0, int block_m) {
  if (!p.causal) return p.seq_kv;
  const int last_row = min(m0 + block_m, p.seq_q) - 1;
  const int end = last_row + p.seq_kv - p.seq_q + 1;
  return end < 0 ? 0 : (end > p.seq_kv ? p.seq_kv : end);
}

}  // namespace mxattn::kernels
