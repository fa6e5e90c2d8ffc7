// The Hopper prefill kernel's launch: the fold, then the attention kernel as its programmatic dependent,
// running beside it. Instantiated once a mode (src/kernels/attention_prefill_hopper_fp8.cu, _exact.cu).
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <algorithm>

#include "mxattn/kernels/attention/hopper/kernel.h"
#include "mxattn/kernels/attention/hopper/launch.h"
#include "mxattn/kernels/dependent_launch.h"
#include "mxattn/kernels/launchable.h"

namespace mxattn::kernels::hopper {

// The output's tensor map (store.h OutMap), through the driver's encoder (no link to the driver library).
// Not ok where it cannot describe the output (base or strides not multiples of 16 bytes): the store warp
// then copies with plain stores.
inline OutMap out_map(const PrefillParams& p, int head_dim) {
  static const auto encode = []() -> PFN_cuTensorMapEncodeTiled_v12000 {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    return e == cudaSuccess && found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)
                                                                     : nullptr;
  }();
  OutMap m;
  const bool packed = p.cu_seqlens_q != nullptr;
  // Channels, rows, heads, batch entries. A packed batch is one entry of at most batch x seq_q rows
  // (api/attention.h: its offsets start at 0, each sequence at most seq_q long).
  const cuuint64_t dims[4] = {cuuint64_t(head_dim), cuuint64_t(packed ? int64_t(p.batch) * p.seq_q : p.seq_q),
                              cuuint64_t(p.heads_q), cuuint64_t(packed ? 1 : p.batch)};
  const int64_t elem_strides[3] = {p.out.stride[1], p.out.stride[2], p.out.stride[0]};
  cuuint64_t strides[3];
  bool ok = encode != nullptr && reinterpret_cast<uintptr_t>(p.out.data) % 16 == 0;
  for (int i = 0; i < 3; ++i) {
    const int64_t bytes = 2 * elem_strides[i];
    const bool usable = bytes > 0 && bytes % 16 == 0 && bytes < (int64_t(1) << 40);
    ok = ok && (usable || dims[i + 1] == 1);
    strides[i] = usable ? cuuint64_t(bytes) : 16;  // (a dimension of one entry never steps)
  }
  if (!ok) return m;
  const cuuint32_t box[4] = {64, 64, 1, 1}, steps[4] = {1, 1, 1, 1};
  m.ok = encode(&m.map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 4, p.out.data, dims, strides, box, steps,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  return m;
}

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
    const OutMap out = kOStaged<D, kExact, QTerms> ? out_map(p, D) : OutMap{};
    e = cudaLaunchKernelEx(&cfg, kernel, Params{p, f, out});
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
