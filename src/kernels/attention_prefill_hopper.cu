// Host side of the Hopper prefill kernel: what it takes, and its launch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <cuda_fp16.h>

#include "mxattn/kernels/attention/hopper/kernel.h"
#include "mxattn/kernels/attention/hopper/launch.h"
#include "mxattn/kernels/dependent_launch.h"

namespace mxattn::kernels::hopper {
namespace {

// The fold goes through FP16 (fold.h): every element value must be an FP16 value, with at most E4M3's
// 4 significant bits (INT8's 7 would round to 4: that element belongs on BF16 operands).
bool elements_fold_to_e4m3(const Element& e) {
  for (uint32_t c = 0; c < (1u << e.bits); ++c) {
    const float v = e.decode(c);
    if (!std::isfinite(v)) continue;
    int exp = 0;
    const float m = std::frexp(v, &exp) * 16.0f;  // |m| < 16: an integer iff 4 significant bits suffice
    if (__half2float(__float2half_rn(v)) != v || m != std::trunc(m)) return false;
  }
  return true;
}

std::string check_operand(const char* name, const MxRows& t) {
  const std::string n(name);
  // UE4M3 scales (NVFP4) fold too, with a rounding where an element times the scale's significand needs
  // more than E4M3's 4 significant bits (fold.h); their tensor scale goes into the rows' factors.
  if (t.format.tensor_scale && !t.tensor_scale) return n + ": the format has a tensor scale; pass its buffer";
  if (t.format.block % 16 != 0) return n + ": block size must be a multiple of 16";
  if (!elements_fold_to_e4m3(t.format.elem))
    return n + ": element values must be FP16 values of at most 4 significant bits (E4M3's)";
  return {};
}

// The workspace's memory pool: the library's own, one per device, which keeps the memory it holds between
// calls (held until the process ends; the largest workspace a call needed). The default pool's release
// threshold is 0: it hands its memory back at every synchronization, and the next call maps it again in
// stream order, which cost ~120 us a call at S = 1k on the H200 (0.56 ms -> 0.43 ms).
cudaError_t workspace_pool(cudaMemPool_t* pool) {
  static std::mutex mutex;
  static std::unordered_map<int, cudaMemPool_t> pools;
  int dev = 0;
  if (const cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = pools.find(dev); it != pools.end()) return *pool = it->second, cudaSuccess;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  if (const cudaError_t e = cudaMemPoolCreate(pool, &props); e != cudaSuccess) return e;
  uint64_t keep = UINT64_MAX;
  if (const cudaError_t e = cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep); e != cudaSuccess) {
    cudaMemPoolDestroy(*pool);
    return e;
  }
  pools[dev] = *pool;
  return cudaSuccess;
}

template <int D, int QTerms>
Status launch(const PrefillParams& p, cudaStream_t stream) {
  using T = Traits<D>;
  auto fail = [](const char* what, cudaError_t e) {
    return Status::error(std::string("attention_prefill (hopper): ") + what + ": " + cudaGetErrorString(e));
  };
  // The folded Q, K and V (fold_kernel.h) live in a workspace from a stream-ordered pool (workspace_pool),
  // freed on the stream after the attention kernel: no allocation per call once the pool holds the size.
  Folded f;
  f.s_pad = (p.seq_kv + T::kBlockN - 1) / T::kBlockN * T::kBlockN;
  f.k_tiles = f.s_pad / T::kBlockN;
  const TileScheduler<T::kBlockM, T::kBlockN> sched(p, nullptr);
  f.m_tiles = sched.m_tiles;
  f.q_terms = QTerms;
  void* ws = nullptr;
  cudaMemPool_t pool;
  cudaError_t e = workspace_pool(&pool);
  if (e == cudaSuccess) e = cudaMallocFromPoolAsync(&ws, f.layout(nullptr, p, D, T::kBlockM), pool, stream);
  if (e != cudaSuccess) return fail("workspace", e);
  f.layout(static_cast<uint8_t*>(ws), p, D, T::kBlockM);

  fold_kernel<D><<<fold_blocks<D>(p, f), kFoldThreads, 0, stream>>>(p, f);

  // One block per SM (at most one per query tile), each taking query tiles in turn (scheduler.h).
  int dev = 0, sms = 0;
  e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess) return fail("device", e);
  const size_t smem = sizeof(SharedStorage<D, QTerms>) + 1024;  // + the 1024-byte alignment of the tiles
  static_assert(sizeof(SharedStorage<D, QTerms>) + 1024 <= 227 * 1024, "over sm_90's 227 KB of shared memory a block");
  // With an LSE to write, the softmax adds up P's exact row sums; without, the tensor cores sum P. A packed
  // batch reads its sequences' spans from the device.
  const bool packed = p.cu_seqlens_q != nullptr;
  const auto kernel = p.lse ? (packed ? prefill_kernel<D, QTerms, true, true> : prefill_kernel<D, QTerms, true, false>)
                            : (packed ? prefill_kernel<D, QTerms, false, true> : prefill_kernel<D, QTerms, false, false>);
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (e != cudaSuccess) return fail("shared memory", e);
  if (sched.tiles > 0) {
    // A programmatic dependent of the pre-pass: its blocks take the SMs the pre-pass leaves.
    const cudaLaunchConfig_t cfg = dependent_launch(dim3(std::min(sched.tiles, sms)), T::kThreads, smem, stream, true);
    e = cudaLaunchKernelEx(&cfg, kernel, Params{p, f});
  }
  if (e == cudaSuccess) e = cudaGetLastError();
  const cudaError_t freed = cudaFreeAsync(ws, stream);
  if (e != cudaSuccess) return fail("launch failed", e);
  if (freed != cudaSuccess) return fail("workspace", freed);
  return Status::success();
}

}  // namespace

std::string prefill_unsupported(const PrefillParams& p, int head_dim) {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev))
    return "no CUDA device";
  if (major != 9 || minor != 0) return "needs an sm_90 GPU (wgmma)";
  if (!p.q_is_mx) {
    // Two E4M3 tiles a query tile (fold_kernel.h): at head_dim 256 they do not fit shared memory beside
    // the KV stages (227 KB a block on sm_90).
    if (head_dim == 256)
      return "q: dense Q takes head_dim 64 or 128 (its two E4M3 terms do not fit shared memory at 256)";
    // 16-byte loads of each row's 8-element chunks.
    bool ok = reinterpret_cast<uintptr_t>(p.q.data) % 16 == 0;
    for (int i = 0; i < 3; ++i) ok = ok && p.q.stride[i] % 8 == 0;
    if (!ok)
      return "q: dense rows must start 16-byte aligned (data pointer and strides of B, S, H multiples of 8 "
             "elements)";
  }
  for (auto [name, t] : {std::pair{"q_mx", &p.q_mx}, {"k", &p.k}, {"v", &p.v}}) {
    if (name == std::string("q_mx") && !p.q_is_mx) continue;
    if (std::string why = check_operand(name, *t); !why.empty()) return why;
  }
  if (!(p.softmax_scale > 0.0f)) return "options.softmax_scale: must be positive";
  return {};
}

Status launch_prefill(const PrefillParams& p, int head_dim, cudaStream_t stream) {
  if (!p.q_is_mx) return head_dim == 64 ? launch<64, 2>(p, stream) : launch<128, 2>(p, stream);
  switch (head_dim) {
    case 64: return launch<64, 1>(p, stream);
    case 128: return launch<128, 1>(p, stream);
    default: return launch<256, 1>(p, stream);
  }
}

}  // namespace mxattn::kernels::hopper
