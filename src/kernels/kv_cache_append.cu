// Host side of the KV-cache append kernel.
#include <string>
#include <utility>

#include "mxattn/api/kv_cache.h"
#include "mxattn/kernels/attention/append_kernel.h"

namespace mxattn {

size_t KvCacheView::code_bytes(const Format& f) const {
  return size_t(num_pages) * heads_kv * page_size * packed_bytes(size_t(head_dim), f.elem.bits);
}
size_t KvCacheView::scale_bytes(const Format& f) const {
  return size_t(num_pages) * heads_kv * page_size * size_t((head_dim + f.block - 1) / f.block);
}

namespace detail {

Status check_cache(const KvCacheView& c) {
  if (c.page_size < 1 || (c.page_size & (c.page_size - 1)))
    return Status::error("cache.page_size: " + std::to_string(c.page_size) + " is not a power of two");
  if (c.num_pages < 1 || c.heads_kv < 1) return Status::error("cache: num_pages and heads_kv must be >= 1");
  for (const Format* f : {&c.k_format, &c.v_format}) {
    const int bits = f->elem.bits;
    if (bits != 4 && bits != 6 && bits != 8)
      return Status::error("cache format: element width " + std::to_string(bits) + " not supported (4, 6 or 8)");
    if ((f->block * bits) % 8 || c.head_dim % f->block)
      return Status::error("cache format: block size " + std::to_string(f->block) + " must divide head_dim " +
                           std::to_string(c.head_dim));
  }
  if (!c.k_codes || !c.k_scales || !c.v_codes || !c.v_scales) return Status::error("cache: null code or scale array");
  // The kernels copy rows of a page with 16-byte loads.
  const std::pair<const void*, const char*> arrays[] = {
      {c.k_codes, "k_codes"}, {c.k_scales, "k_scales"}, {c.v_codes, "v_codes"}, {c.v_scales, "v_scales"}};
  for (const auto& [ptr, name] : arrays)
    if (reinterpret_cast<uintptr_t>(ptr) % 16)
      return Status::error(std::string("cache.") + name + ": must be 16-byte aligned");
  if (c.k_format.tensor_scale && !c.k_tensor_scale) return Status::error("cache.k_tensor_scale: format needs S_enc");
  if (c.v_format.tensor_scale && !c.v_tensor_scale) return Status::error("cache.v_tensor_scale: format needs S_enc");
  return Status::success();
}

kernels::PagedKv paged_of(const KvCacheView& c, const PagedSequences& s) {
  kernels::PagedKv kv;
  kv.k = {c.k_codes, c.k_scales, c.k_tensor_scale, c.k_format};
  kv.v = {c.v_codes, c.v_scales, c.v_tensor_scale, c.v_format};
  kv.num_pages = c.num_pages, kv.page_size = c.page_size, kv.heads_kv = c.heads_kv, kv.head_dim = c.head_dim;
  kv.page_shift = 0;
  while ((1 << kv.page_shift) < c.page_size) ++kv.page_shift;
  kv.block_table = s.block_table, kv.max_pages_per_seq = s.max_pages_per_seq;
  return kv;
}

}  // namespace detail

Status kv_cache_append(const KvCacheView& cache, const PagedSequences& seqs, int new_tokens, const void* k,
                       const int64_t (&k_strides)[3], const void* v, const int64_t (&v_strides)[3], DType dtype,
                       cudaStream_t stream) {
  if (Status st = detail::check_cache(cache); !st) return st;
  if (dtype != DType::BF16 && dtype != DType::F16) return Status::error("dtype: must be bf16 or f16");
  if (new_tokens < 1) return Status::error("new_tokens: must be >= 1");
  if (!k || !v || !seqs.block_table || !seqs.seq_lens) return Status::error("k, v, block_table, seq_lens: null");
  kernels::AppendParams p;
  p.cache = detail::paged_of(cache, seqs);
  p.positions = seqs.seq_lens;
  p.batch = seqs.batch, p.new_tokens = new_tokens;
  p.k = k, p.v = v;
  for (int i = 0; i < 3; ++i) p.k_stride[i] = k_strides[i], p.v_stride[i] = v_strides[i];
  p.fp16 = dtype == DType::F16;
  const int64_t blocks_per_token = int64_t(cache.heads_kv) * (cache.head_dim / cache.k_format.block +
                                                              cache.head_dim / cache.v_format.block);
  const int64_t total = int64_t(seqs.batch) * new_tokens * blocks_per_token;
  const int threads = 128;
  const int grid = int(std::min<int64_t>((total + threads - 1) / threads, 65535));
  kernels::kv_append_kernel<<<grid, threads, 0, stream>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return Status::error(std::string("kv_cache_append: ") + cudaGetErrorString(e));
  return Status::success();
}

}  // namespace mxattn
