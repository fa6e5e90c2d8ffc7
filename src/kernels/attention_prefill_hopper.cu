// Host side of the Hopper prefill kernel: what it takes, and the workspace's memory pool. The launches,
// one translation unit a mode: attention_prefill_hopper_fp8.cu, attention_prefill_hopper_exact.cu.
#include <cmath>
#include <cstdint>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <cuda_fp16.h>

#include "mxattn/kernels/attention/hopper/launch.h"
#include "mxattn/kernels/launchable.h"

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

// The exact mode's V goes through FP16 to BF16 (fold.h fold16_bf16): any element FP16 holds, INT8's too.
bool elements_are_f16(const Element& e) {
  for (uint32_t c = 0; c < (1u << e.bits); ++c) {
    const float v = e.decode(c);
    if (std::isfinite(v) && __half2float(__float2half_rn(v)) != v) return false;
  }
  return true;
}

// check(e) of an element, remembered per element: the checks decode every code (~5 us a call for Q, K
// and V on the host, before the first launch).
bool remembered(bool (*check)(const Element&), const Element& e) {
  static std::mutex mutex;
  static std::vector<std::tuple<bool (*)(const Element&), Element, bool>> known;
  const std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [c, k, ok] : known)
    if (c == check && k == e) return ok;
  const bool ok = check(e);
  known.emplace_back(check, e, ok);
  return ok;
}

// bf16: the operand is folded to BF16 (the exact mode's V), else to E4M3.
std::string check_operand(const char* name, const MxRows& t, bool bf16) {
  const std::string n(name);
  // UE4M3 scales (NVFP4) fold too, with a rounding where an element times the scale's significand needs
  // more than E4M3's 4 significant bits (fold.h); their tensor scale goes into the rows' factors.
  if (t.format.tensor_scale && !t.tensor_scale) return n + ": the format has a tensor scale; pass its buffer";
  if (t.format.block % 16 != 0) return n + ": block size must be a multiple of 16";
  if (bf16 && !remembered(elements_are_f16, t.format.elem)) return n + ": element values must be FP16 values";
  if (!bf16 && !remembered(elements_fold_to_e4m3, t.format.elem))
    return n + ": element values must be FP16 values of at most 4 significant bits (E4M3's)";
  return {};
}

}  // namespace

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

std::string prefill_unsupported(const PrefillParams& p, int head_dim, bool exact) {
  DeviceInfo d;
  if (current_device(&d) != cudaSuccess) return "no CUDA device";
  if (d.major != 9 || d.minor != 0) return "needs an sm_90 GPU (wgmma)";
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
    if (std::string why = check_operand(name, *t, exact && t == &p.v); !why.empty()) return why;
  }
  if (!(p.softmax_scale > 0.0f)) return "options.softmax_scale: must be positive";
  return {};
}

}  // namespace mxattn::kernels::hopper
