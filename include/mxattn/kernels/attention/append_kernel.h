// Append new tokens to the paged KV cache, quantizing them on the way: one thread per block of
// `block` channels of one (token, head) row, with the core's scale rule and codec, so the cache holds
// exactly what reference/quantize.h's quantize_rows would produce for that row.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mxattn/format/pack.h"
#include "mxattn/kernels/attention/paged_kv.h"

namespace mxattn::kernels {

struct AppendParams {
  PagedKv cache;
  const int32_t* positions = nullptr;  // [batch]: where each sequence's first new token goes
  int batch = 1, new_tokens = 1;
  const void* k = nullptr;  // [B, new_tokens, H_kv, D], D contiguous
  const void* v = nullptr;
  int64_t k_stride[3] = {0, 0, 0}, v_stride[3] = {0, 0, 0};  // elements, for b, token, head
  bool fp16 = false;
};

__device__ __forceinline__ float load_half_or_bf16(const void* base, int64_t i, bool fp16) {
  return fp16 ? __half2float(static_cast<const __half*>(base)[i])
              : __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
}

// One block of one row: amax, scale (Format::block_scale), encode, pack.
__device__ __forceinline__ void quantize_block(const void* src, int64_t off, bool fp16, const Format& f, float s_enc,
                                               int c0, int c1, uint8_t* codes, uint8_t* scale) {
  float amax = 0.0f;
  bool nonfinite = false;
  for (int c = c0; c < c1; ++c) {
    const float x = load_half_or_bf16(src, off + c, fp16);
    nonfinite |= !is_finite_bits(x);
    amax = fmaxf(amax, fabsf(x));
  }
  const BlockScale s = f.block_scale(amax, nonfinite, s_enc);
  *scale = uint8_t(s.code);
  for (int c = c0; c < c1; ++c)  // a block covers whole bytes (block * bits is a multiple of 8)
    pack_code(codes, size_t(c), f.elem.bits, f.elem.encode(load_half_or_bf16(src, off + c, fp16) * s.mult));
}

__global__ void kv_append_kernel(const AppendParams p) {
  const PagedKv& kv = p.cache;
  const int D = kv.head_dim;
  const int kb = kv.k.row_scales(D), vb = kv.v.row_scales(D);
  const int64_t per_token = int64_t(kv.heads_kv) * (kb + vb);
  const int64_t total = int64_t(p.batch) * p.new_tokens * per_token;
  for (int64_t id = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; id < total; id += int64_t(gridDim.x) * blockDim.x) {
    const int64_t bt = id / per_token;
    int r = int(id % per_token);
    const int b = int(bt / p.new_tokens), i = int(bt % p.new_tokens);
    const int head = r / (kb + vb);
    r %= (kb + vb);
    const bool is_v = r >= kb;
    const int blk = is_v ? r - kb : r;
    const PagedTensor& t = is_v ? kv.v : kv.k;
    const int pos = p.positions[b] + i;
    const int32_t page = kv.block_table[int64_t(b) * kv.max_pages_per_seq + (pos >> kv.page_shift)];
    const int64_t row = kv.row(page, head, pos & (kv.page_size - 1));
    const int64_t* st = is_v ? p.v_stride : p.k_stride;
    const int64_t off = b * st[0] + int64_t(i) * st[1] + int64_t(head) * st[2];
    const float s_enc = t.format.tensor_scale && t.tensor_scale ? *t.tensor_scale : 1.0f;
    const int c0 = blk * t.format.block, c1 = min(D, c0 + t.format.block);
    quantize_block(is_v ? p.v : p.k, off, p.fp16, t.format, s_enc, c0, c1, t.codes + row * t.row_bytes(D),
                   t.scales + row * t.row_scales(D) + blk);
  }
}

}  // namespace mxattn::kernels
