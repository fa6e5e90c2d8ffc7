// The Hopper prefill kernel's launch: the fold, then the attention kernel as its programmatic dependent,
// running beside it. Instantiated once a mode (src/kernels/attention_prefill_hopper_fp8.cu, _exact.cu).
#pragma once
#include <algorithm>

#include "mxattn/kernels/attention/hopper/kernel.h"
#include "mxattn/kernels/attention/hopper/launch.h"
#include "mxattn/kernels/dependent_launch.h"
#include "mxattn/kernels/launchable.h"

namespace mxattn::kernels::hopper {

template <int D, bool kExact, int QTerms>
Status launch(const PrefillParams& p, cudaStream_t stream) {
  using T = Traits<D, kExact>;
  auto fail = [](const char* what, cudaError_t e) {
    return Status::error(std::string("attention_prefill (hopper): ") + what + ": " + cudaGetErrorString(e));
  };
  const size_t smem = sizeof(SharedStorage<D, kExact, QTerms>) + 1024;  // + the 1024-byte alignment of the tiles
  static_assert(sizeof(SharedStorage<D, kExact, QTerms>) + 1024 <= 227 * 1024, "over sm_90's 227 KB of shared memory a block");
  // With an LSE to write, the softmax adds up P's exact row sums; without, the tensor cores sum P. A packed
  // batch reads its sequences' spans from the device.
  const bool packed = p.cu_seqlens_q != nullptr;
  const auto kernel = p.lse ? (packed ? prefill_kernel<D, kExact, QTerms, true, true>
                                     : prefill_kernel<D, kExact, QTerms, true, false>)
                            : (packed ? prefill_kernel<D, kExact, QTerms, false, true>
                                      : prefill_kernel<D, kExact, QTerms, false, false>);
  // One block per SM (at most one per query tile), each taking query tiles in turn (scheduler.h).
  const Launchable l = launchable(reinterpret_cast<const void*>(kernel), T::kThreads, smem);
  if (l.error != cudaSuccess) return fail("shared memory", l.error);

  // The folded Q, K and V (fold_kernel.h) live in a workspace from a stream-ordered pool (workspace_pool),
  // freed on the stream after the attention kernel: no allocation per call once the pool holds the size.
  Folded f;
  f.s_pad = (p.seq_kv + T::kBlockN - 1) / T::kBlockN * T::kBlockN;
  f.k_tiles = f.s_pad / T::kBlockN;
  const TileScheduler<T::kBlockM, T::kBlockN> sched(p, nullptr);
  f.m_tiles = sched.m_tiles;
  f.q_terms = QTerms;
  f.pv_bytes = T::kPvBytes;
  void* ws = nullptr;
  cudaMemPool_t pool;
  cudaError_t e = workspace_pool(&pool);
  if (e == cudaSuccess) e = cudaMallocFromPoolAsync(&ws, f.layout(nullptr, p, D, T::kBlockM), pool, stream);
  if (e != cudaSuccess) return fail("workspace", e);
  f.layout(static_cast<uint8_t*>(ws), p, D, T::kBlockM);

  const FoldGrid fg = FoldGrid::of<T>(p, f, l.sms);
  f.early_units = fg.early_units;
  f.early_unit_items = int(fg.early.count.divisor);
  f.unit_items = int(fg.late.count.divisor);
  const Launchable fl = launchable(reinterpret_cast<const void*>(fold_kernel<T>), kFoldThreads, 0);
  if (fl.error != cudaSuccess) return fail("fold kernel", fl.error);
  e = cudaMemsetAsync(ws, 0, Folded::header_bytes(p), stream);
  if (e != cudaSuccess) return fail("workspace", e);
  fold_kernel<T><<<std::min(fg.items, fl.blocks_per_sm * fl.sms), kFoldThreads, 0, stream>>>(p, f, fg);

  if (sched.tiles > 0) {
    // A programmatic dependent of the fold: its blocks take the SMs the fold leaves, and wait for their units.
    const cudaLaunchConfig_t cfg = dependent_launch(dim3(std::min(sched.tiles, l.sms)), T::kThreads, smem, stream, true);
    e = cudaLaunchKernelEx(&cfg, kernel, Params{p, f});
  }
  if (e == cudaSuccess) e = cudaGetLastError();
  const cudaError_t freed = cudaFreeAsync(ws, stream);
  if (e != cudaSuccess) return fail("launch failed", e);
  if (freed != cudaSuccess) return fail("workspace", freed);
  return Status::success();
}

template <bool kExact>
Status launch_prefill(const PrefillParams& p, int head_dim, cudaStream_t stream) {
  if (!p.q_is_mx) return head_dim == 64 ? launch<64, kExact, 2>(p, stream) : launch<128, kExact, 2>(p, stream);
  switch (head_dim) {
    case 64: return launch<64, kExact, 1>(p, stream);
    case 128: return launch<128, kExact, 1>(p, stream);
    default: return launch<256, kExact, 1>(p, stream);
  }
}

}  // namespace mxattn::kernels::hopper
