// Host side of split-KV decode attention: validation, split choice, workspace layout, launch.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "mxattn/api/kv_cache.h"
#include "mxattn/kernels/attention/decode_launch.h"
#include "mxattn/kernels/dependent_launch.h"
#include "mxattn/kernels/launchable.h"

namespace mxattn {
namespace kernels {
extern template DecodeVariant select_decode<64>(const PagedKv&);
extern template DecodeVariant select_decode<128>(const PagedKv&);
extern template DecodeVariant select_decode<256>(const PagedKv&);
}  // namespace kernels

namespace detail {
Status check_cache(const KvCacheView& c);
kernels::PagedKv paged_of(const KvCacheView& c, const PagedSequences& s);
}  // namespace detail

namespace {

constexpr int kTileKeys = 32;     // DecodeTraits::kTileKeys: split lengths are multiples of a tile
constexpr int kRowsPerBlock = 8;  // DecodeTraits::kRows: query rows in the MMA's N
struct Plan {
  int rows = 1, m_tiles = 1, splits = 1, split_keys = kTileKeys;
  bool uneven = false;  // sequences of different lengths (seq_lens_host: the longest over 1.5x the mean)
  kernels::DecodeVariant variant;
};

kernels::DecodeVariant variant_of(const DecodeArgs& a) {
  const kernels::PagedKv kv = detail::paged_of(a.cache, a.seqs);
  return a.cache.head_dim == 64    ? kernels::select_decode<64>(kv)
         : a.cache.head_dim == 128 ? kernels::select_decode<128>(kv)
                                   : kernels::select_decode<256>(kv);
}

using kernels::Launchable;
// Resident blocks per SM of a variant on the current device (asked once per variant and device).
Launchable launchable(const kernels::DecodeVariant& v) { return kernels::launchable(v.kernel, v.threads, v.smem); }

// Splits fill the resident blocks once (floor): a second, partial wave would leave SMs idle at the tail.
Plan plan_of(const DecodeArgs& a) {
  Plan pl;
  const int group = a.heads_q / std::max(1, a.cache.heads_kv);
  pl.rows = a.q_len * group;
  pl.m_tiles = (pl.rows + kRowsPerBlock - 1) / kRowsPerBlock;
  pl.variant = variant_of(a);
  const int max_len = std::max(1, a.max_seq_len);
  // At least a tile per warp in a split.
  const int split_min = kTileKeys * std::max(1, pl.variant.threads / 32);
  const int max_splits = (max_len + split_min - 1) / split_min;
  int splits = a.num_splits;
  if (splits <= 0) {
    const Launchable l = pl.variant.kernel ? launchable(pl.variant) : Launchable{};
    const int resident = l.error == cudaSuccess && l.sms > 0 ? std::max(1, l.blocks_per_sm) * l.sms : 132;
    const int base = std::max(1, a.seqs.batch * a.cache.heads_kv * pl.m_tiles);
    splits = std::max(1, resident / base);
    if (a.seq_lens_host) {
      // Sequences of different lengths (the longest over 1.5x the mean): splits of about a quarter of a
      // block's share of the keys, so the longest sequences' last splits are a short tail. (H200, 32
      // sequences of 3k to 64k tokens: 495-505 us with 3 to 6 splits against 622 us with 1, the plan
      // above; uniform batches keep it: their splits fill the SMs in whole waves.)
      double total = 0;
      int longest = 0;
      for (int b = 0; b < a.seqs.batch; ++b) total += std::max(0, a.seq_lens_host[b]), longest = std::max(longest, a.seq_lens_host[b]);
      const double mean = total / a.seqs.batch, share = total * a.cache.heads_kv * pl.m_tiles / resident;
      pl.uneven = longest > 1.5 * mean;
      if (pl.uneven && share > 0)
        splits = std::max(splits, int(std::ceil(longest / std::max(share / 4, double(split_min)))));
    }
  }
  splits = std::clamp(splits, 1, max_splits);
  pl.split_keys = ((max_len + splits - 1) / splits + kTileKeys - 1) / kTileKeys * kTileKeys;
  pl.splits = (max_len + pl.split_keys - 1) / pl.split_keys;
  return pl;
}

// Workspace: the splits' partial outputs [B][H_kv][rows][splits][D] and log-sum-exps (floats), then
// an arrival word per (batch, KV head, query tile) (decode_merge.h), 8-byte aligned.
struct Workspace {
  size_t part_rows = 0, arrivals_at = 0, bytes = 0;
};
Workspace workspace_of(const DecodeArgs& a, const Plan& pl) {
  Workspace w;
  w.part_rows = size_t(a.seqs.batch) * a.cache.heads_kv * pl.rows * pl.splits;
  w.arrivals_at = (w.part_rows * (size_t(a.cache.head_dim) + 1) * sizeof(float) + 7) / 8 * 8;
  w.bytes = w.arrivals_at + size_t(a.seqs.batch) * a.cache.heads_kv * pl.m_tiles * sizeof(unsigned long long);
  return w;
}

// A fresh epoch per call (decode_merge.h): 40 bits, from a random start, so that arrival words left
// in a reused workspace, by this process or another, are not taken for this call's.
unsigned long long next_epoch() {
  static std::atomic<unsigned long long> epoch{[] {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd();
  }()};
  return epoch.fetch_add(1, std::memory_order_relaxed) & ((1ull << 40) - 1);
}

}  // namespace

size_t decode_workspace_bytes(const DecodeArgs& a) { return workspace_of(a, plan_of(a)).bytes; }

Status attention_decode(const DecodeArgs& a, cudaStream_t stream) {
  if (Status st = detail::check_cache(a.cache); !st) return st;
  const KvCacheView& c = a.cache;
  if (c.head_dim != 64 && c.head_dim != 128 && c.head_dim != 256)
    return Status::error("cache.head_dim: " + std::to_string(c.head_dim) + " not supported (64, 128 or 256)");
  for (const auto& [name, f] : {std::pair{"cache.k_format", &c.k_format}, {"cache.v_format", &c.v_format}})
    if (f->block != 16 && f->block != 32) return Status::error(std::string(name) + ": decode takes block sizes 16 and 32");
  if (a.q_len < 1 || a.q_len > 16) return Status::error("q_len: " + std::to_string(a.q_len) + " not in 1..16");
  if (a.heads_q < 1 || a.heads_q % c.heads_kv)
    return Status::error("heads_q: must be a positive multiple of cache.heads_kv");
  if (a.seqs.batch < 1 || !a.seqs.block_table || !a.seqs.seq_lens) return Status::error("seqs: batch, block_table, seq_lens");
  if (a.max_seq_len < 1) return Status::error("max_seq_len: must be >= 1");
  if (a.q_dtype != DType::BF16 && a.q_dtype != DType::F16) return Status::error("q_dtype: must be bf16 or f16");
  if (!a.q || reinterpret_cast<uintptr_t>(a.q) % 16 || a.q_strides[0] % 8 || a.q_strides[1] % 8 || a.q_strides[2] % 8)
    return Status::error("q: must be 16-byte aligned with strides multiples of 8 elements");
  if (a.out_dtype != DType::BF16 && a.out_dtype != DType::F16) return Status::error("out_dtype: must be bf16 or f16");
  if (!a.out || reinterpret_cast<uintptr_t>(a.out) % 4 || a.out_strides[0] % 2 || a.out_strides[1] % 2 ||
      a.out_strides[2] % 2)
    return Status::error("out: must be 4-byte aligned with even strides");
  const Plan pl = plan_of(a);
  if (!pl.variant.kernel)
    return Status::error(
        "cache.k_format, cache.v_format: K and V of different element widths or block sizes must each be one of "
        "mxfp8 (E4M3, block 32), mxfp6 (6-bit elements, block 32), mxfp4 (E2M1, block 32, E8M0 scales) or nvfp4-like "
        "(E2M1, block 16, UE4M3 scales)");
  const Workspace ws = workspace_of(a, pl);
  if (!a.workspace || a.workspace_bytes < ws.bytes)
    return Status::error("workspace: needs decode_workspace_bytes(args) = " + std::to_string(ws.bytes) + " bytes");
  if (reinterpret_cast<uintptr_t>(a.workspace) % 16) return Status::error("workspace: must be 16-byte aligned");

  kernels::DecodeParams p;
  p.cache = detail::paged_of(c, a.seqs);
  p.seq_lens = a.seqs.seq_lens;
  p.batch = a.seqs.batch, p.q_len = a.q_len, p.heads_q = a.heads_q, p.group = a.heads_q / c.heads_kv;
  p.rows = pl.rows;
  p.q = a.q;
  for (int i = 0; i < 3; ++i) p.q_stride[i] = a.q_strides[i];
  p.q_fp16 = a.q_dtype == DType::F16;
  p.causal = a.causal;
  p.softmax_scale = float(a.softmax_scale != 0.0 ? a.softmax_scale : 1.0 / std::sqrt(double(c.head_dim)));
  p.splits = pl.splits, p.split_keys = pl.split_keys;
  p.part_o = static_cast<float*>(a.workspace);
  p.part_lse = p.part_o + ws.part_rows * c.head_dim;
  kernels::DecodeOutput& out = p.output;
  out.out = a.out;
  for (int i = 0; i < 3; ++i) out.out_stride[i] = a.out_strides[i];
  out.out_fp16 = a.out_dtype == DType::F16;
  out.lse = a.lse;
  out.v_tensor_scale = c.v_format.tensor_scale ? c.v_tensor_scale : nullptr;
  out.arrivals = reinterpret_cast<unsigned long long*>(static_cast<uint8_t*>(a.workspace) + ws.arrivals_at);
  out.epoch = next_epoch();

  const kernels::DecodeVariant& v = pl.variant;
  const Launchable l = launchable(v);  // the shared-memory limit is raised once per variant and device
  cudaError_t e = l.error;
  if (e == cudaSuccess) {
    void* kargs[] = {&p};
    cudaLaunchConfig_t cfg =
        kernels::dependent_launch(dim3(pl.splits, pl.m_tiles, a.seqs.batch * c.heads_kv), v.threads, v.smem, stream, l.programmatic);
    // Where the kernel can (launchable.h clusters), short caches of even lengths: a (b, hk, query tile)'s splits as
    // one cluster, up to the portable 8 blocks, merging in its shared memory (decode_kernel.h). A cluster's blocks
    // start together and wait for each other before the merge, so a split that ends early holds its SM: with
    // sequences of different lengths (the serving batch of 1k to 64k tokens) that cost 70%, and at 128k keys up
    // to 5%; at 64 to 8k keys the merge without the workspace's round trips saves 1.1-1.6 us a call (H200:
    // MXFP4 at 4k keys 23.6 -> 22.5 us at D = 128, 17.1 -> 15.9 at D = 64; bench/decode_notes.md).
    const cudaLaunchConfig_t plain = cfg;
    cudaLaunchAttribute attrs[2];
    p.cluster_merge = l.clusters && l.programmatic && pl.splits <= 8 && !pl.uneven && a.max_seq_len <= 8192;
    if (p.cluster_merge) {
      attrs[0] = cfg.attrs[0];  // the programmatic launch's
      attrs[1].id = cudaLaunchAttributeClusterDimension;
      attrs[1].val.clusterDim.x = unsigned(pl.splits), attrs[1].val.clusterDim.y = 1, attrs[1].val.clusterDim.z = 1;
      cfg.attrs = attrs, cfg.numAttrs = 2;
    }
    e = cudaLaunchKernelExC(&cfg, v.kernel, kargs);
    if (e != cudaSuccess && p.cluster_merge) {  // a device that cannot hold the cluster: the workspace's merge
      (void)cudaGetLastError();
      p.cluster_merge = false;
      e = cudaLaunchKernelExC(&plain, v.kernel, kargs);
    }
  }
  if (e != cudaSuccess) return Status::error(std::string("attention_decode: ") + cudaGetErrorString(e));
  return Status::success();
}

}  // namespace mxattn
