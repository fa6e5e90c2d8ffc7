// Device view of the paged, block-scaled KV cache (api/kv_cache.h describes it for users).
//
// Pages hold page_size tokens of every KV head, head-major ("HND"), so one head's tokens of a page
// are contiguous:
//   codes  [num_pages][heads_kv][page_size][row_bytes]      row_bytes = packed_bytes(D, bits)
//   scales [num_pages][heads_kv][page_size][D / block]      one byte per block of the row
// K and V are both blocked along D, per token (a token is quantized once, when it is appended).
// A sequence's token j lives in page block_table[b][j / page_size], slot j % page_size.
#pragma once
#include <cstdint>

#include "mxattn/format/format.h"
#include "mxattn/format/pack.h"

namespace mxattn::kernels {

struct PagedTensor {
  uint8_t* codes = nullptr;
  uint8_t* scales = nullptr;
  const float* tensor_scale = nullptr;  // device S_enc where format.tensor_scale
  Format format;

  __host__ __device__ int row_bytes(int head_dim) const { return int(packed_bytes(size_t(head_dim), format.elem.bits)); }
  __host__ __device__ int row_scales(int head_dim) const { return (head_dim + format.block - 1) / format.block; }
};

struct PagedKv {
  PagedTensor k, v;
  int num_pages = 0, page_size = 16, page_shift = 4, heads_kv = 1, head_dim = 128;
  const int32_t* block_table = nullptr;  // [batch][max_pages_per_seq]
  int max_pages_per_seq = 0;

  // Row index of (page, head, slot) in the codes/scales arrays.
  __host__ __device__ int64_t row(int32_t page, int head, int slot) const {
    return (int64_t(page) * heads_kv + head) * page_size + slot;
  }
};

}  // namespace mxattn::kernels
