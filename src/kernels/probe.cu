// `mxattn probe` on the GPU: one run of a tensor-core instruction per job (probe/probe.h), its operands
// one-hot or all ones, and what came out of the accumulators counted (and, when asked, which).
// A block runs its jobs one after another; a job's operands are built from its two slot numbers alone.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "mxattn/api/device_buffer.h"
#include "mxattn/kernels/attention/hopper/fragment.h"
#include "mxattn/probe/probe.h"
#include "mxattn/ptx/mbarrier.h"
#include "mxattn/ptx/mma.h"
#include "mxattn/ptx/wgmma.h"

namespace mxattn::probe {
namespace {

// The wgmma families' shared-memory tile (src/probe/probe.cpp ProbeTile): 64 rows of 128 bytes, 128-byte
// swizzle, and the descriptor of its k-step as the kernels make it (hopper/mainloop.h desc_at).
using Tile = frag::KMajorTile<64, 128>;

// A register operand of `regs` 32-bit registers, `parts` elements each: element (thread, reg, part) is 1
// when its slot is `pick` (or pick is kAll).
template <int kRegs, int kParts>
__device__ void fill_regs(uint32_t (&x)[kRegs], int pick, uint32_t one) {
  const int thread = threadIdx.x;
#pragma unroll
  for (int r = 0; r < kRegs; ++r) {
    x[r] = 0;
#pragma unroll
    for (int p = 0; p < kParts; ++p) {
      const int slot = (thread * kRegs + r) * kParts + p;
      if (pick == kAll || pick == slot) x[r] |= one << (32 / kParts * p);
    }
  }
}

// The tile's element e (of elem_bytes) is 1 when e is `pick` (or pick is kAll).
__device__ void fill_tile(uint8_t* tile, int pick, int elem_bytes, uint32_t one) {
  for (int byte = threadIdx.x; byte < Tile::kBytes; byte += blockDim.x) {
    const int e = byte / elem_bytes, within = byte % elem_bytes;
    tile[byte] = pick == kAll || pick == e ? uint8_t(one >> (8 * within)) : 0;
  }
}

__device__ uint64_t kstep_desc(const uint8_t* tile, int kstep) {
  return ptx::smem_desc(tile + Tile::desc_offset(0, 32 * kstep), Tile::kGroupBytes, ptx::Swizzle::B128);
}

template <FamilyId F>
struct Run;  // d = A B for one job: d's registers, the operands built from the job

template <>
struct Run<FamilyId::MmaBf16> {
  static constexpr int kThreads = 32, kC = 4;
  __device__ static void go(const Job& j, const uint8_t*, const uint8_t*, float (&d)[kC]) {
    uint32_t a[4], b[2];
    fill_regs<4, 2>(a, j.a, 0x3F80u);  // BF16 1.0
    fill_regs<2, 2>(b, j.b, 0x3F80u);
    const float c[4] = {0, 0, 0, 0};
    ptx::mma_m16n8k16_row_col_f32_bf16(d, a, b, c);
  }
};
template <>
struct Run<FamilyId::MmaE4m3> {
  static constexpr int kThreads = 32, kC = 4;
  __device__ static void go(const Job& j, const uint8_t*, const uint8_t*, float (&d)[kC]) {
    uint32_t a[4], b[2];
    fill_regs<4, 4>(a, j.a, 0x38u);  // E4M3 1.0
    fill_regs<2, 4>(b, j.b, 0x38u);
    const float c[4] = {0, 0, 0, 0};
    ptx::mma_m16n8k32_row_col_f32_e4m3(d, a, b, c);
  }
};

// The wgmma families: B (and for ss A) in the tiles, which the block filled before; one group, waited for.
template <FamilyId F>
struct RunWgmma {
  static constexpr int kThreads = 128, kC = 32;
  __device__ static void go(const Job& j, const uint8_t* a_tile, const uint8_t* b_tile, float (&d)[kC]) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const uint64_t b = kstep_desc(b_tile, 1);
    uint32_t a[4];
    if constexpr (F == FamilyId::WgmmaBf16Rs) fill_regs<4, 2>(a, j.a, 0x3F80u);
    if constexpr (F == FamilyId::WgmmaE4m3Rs) fill_regs<4, 4>(a, j.a, 0x38u);
#pragma unroll
    for (int i = 0; i < kC; ++i) d[i] = 0.0f;
    ptx::wgmma_fence();
    if constexpr (F == FamilyId::WgmmaBf16Rs) ptx::wgmma_m64n64k16_f32_bf16_rs(d, a, b, 0);
    if constexpr (F == FamilyId::WgmmaBf16Ss) ptx::wgmma_m64n64k16_f32_bf16_ss(d, kstep_desc(a_tile, 1), b, 0);
    if constexpr (F == FamilyId::WgmmaE4m3Rs) ptx::wgmma_m64n64k32_f32_e4m3_rs(d, a, b, 0);
    if constexpr (F == FamilyId::WgmmaE4m3Ss) ptx::wgmma_m64n64k32_f32_e4m3_ss(d, kstep_desc(a_tile, 1), b, 0);
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();
#pragma unroll
    for (int i = 0; i < kC; ++i) ptx::wgmma_fence_operand(d[i]);
#endif
  }
};
template <>
struct Run<FamilyId::WgmmaBf16Rs> : RunWgmma<FamilyId::WgmmaBf16Rs> {};
template <>
struct Run<FamilyId::WgmmaBf16Ss> : RunWgmma<FamilyId::WgmmaBf16Ss> {};
template <>
struct Run<FamilyId::WgmmaE4m3Rs> : RunWgmma<FamilyId::WgmmaE4m3Rs> {};
template <>
struct Run<FamilyId::WgmmaE4m3Ss> : RunWgmma<FamilyId::WgmmaE4m3Ss> {};

// words: mask words a job (0: no masks).
template <FamilyId F>
__global__ void __launch_bounds__(Run<F>::kThreads) probe_kernel(const Job* jobs, int n, Result* out, uint32_t* masks,
                                                               int words, bool a_smem, bool b_smem, int elem_bytes) {
  using R = Run<F>;
  __shared__ alignas(1024) uint8_t a_tile[Tile::kBytes];
  __shared__ alignas(1024) uint8_t b_tile[Tile::kBytes];
  __shared__ uint32_t mask[R::kThreads * R::kC / 32];
  __shared__ int count[2];
  const uint32_t one = elem_bytes == 2 ? 0x3F80u : 0x38u;
  for (int j = blockIdx.x; j < n; j += gridDim.x) {
    const Job job = jobs[j];
    if (a_smem) fill_tile(a_tile, job.a, elem_bytes, one);
    if (b_smem) fill_tile(b_tile, job.b, elem_bytes, one);
    for (int w = threadIdx.x; w < words; w += blockDim.x) mask[w] = 0;
    if (threadIdx.x < 2) count[threadIdx.x] = 0;
    ptx::fence_proxy_async_shared();  // the tiles' generic-proxy stores, read by wgmma
    __syncthreads();
    float d[R::kC];
    R::go(job, a_tile, b_tile, d);
    int nonzero = 0, bad = 0;
#pragma unroll
    for (int r = 0; r < R::kC; ++r)
      if (d[r] != 0.0f) {
        ++nonzero;
        bad += d[r] != 1.0f;
        const int slot = threadIdx.x * R::kC + r;
        if (words) atomicOr(&mask[slot / 32], 1u << (slot % 32));
      }
    if (nonzero) atomicAdd(&count[0], nonzero);
    if (bad) atomicAdd(&count[1], bad);
    __syncthreads();
    if (threadIdx.x == 0) out[j] = Result{count[0], count[1]};
    for (int w = threadIdx.x; w < words; w += blockDim.x) masks[int64_t(j) * words + w] = mask[w];
    __syncthreads();
  }
}

Status check(cudaError_t e, const char* what) {
  return e == cudaSuccess ? Status::success() : Status::error(std::string("probe: ") + what + ": " + cudaGetErrorString(e));
}

template <FamilyId F>
Status launch(const Family& f, const Job* jobs, int n, Result* out, uint32_t* masks, int words) {
  int sms = 0, dev = 0;
  if (Status st = check(cudaGetDevice(&dev), "cudaGetDevice"); !st.ok) return st;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int blocks = std::max(1, std::min(n, 8 * sms));
  probe_kernel<F><<<blocks, Run<F>::kThreads>>>(jobs, n, out, masks, words, f.a.smem, f.b.smem, f.b.elem_bytes);
  if (Status st = check(cudaGetLastError(), "launch"); !st.ok) return st;
  return check(cudaDeviceSynchronize(), f.name);
}

Status run_gpu(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
  int dev = 0, major = 0, minor = 0;
  if (Status st = check(cudaGetDevice(&dev), "no CUDA device"); !st.ok) return st;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  const bool wgmma = f.threads == 128;
  if (wgmma && (major != 9 || minor != 0))
    return Status::error(std::string(f.name) + ": wgmma needs an sm_90 GPU; this one is sm_" + std::to_string(10 * major + minor));
  if (f.id == FamilyId::MmaE4m3 && 10 * major + minor < 89)
    return Status::error(std::string(f.name) + ": E4M3 mma.sync needs sm_89 or newer");
  const int n = int(jobs.size()), words = masks ? mask_words(f) : 0;
  out.assign(n, Result{});
  if (masks) masks->assign(size_t(n) * words, 0u);
  if (n == 0) return Status::success();
  DeviceArray<Job> d_jobs(jobs);
  DeviceArray<Result> d_out(n);
  DeviceArray<uint32_t> d_masks(size_t(n) * words);
  d_out.fill_bytes(0xFF);  // poisoned: a job the kernel skips shows as -1 nonzero
  if (!d_jobs.ok() || !d_out.ok() || !d_masks.ok()) return Status::error("probe: out of device memory");
  Status st;
  switch (f.id) {
    case FamilyId::MmaBf16: st = launch<FamilyId::MmaBf16>(f, d_jobs.data(), n, d_out.data(), d_masks.data(), words); break;
    case FamilyId::MmaE4m3: st = launch<FamilyId::MmaE4m3>(f, d_jobs.data(), n, d_out.data(), d_masks.data(), words); break;
    case FamilyId::WgmmaBf16Rs: st = launch<FamilyId::WgmmaBf16Rs>(f, d_jobs.data(), n, d_out.data(), d_masks.data(), words); break;
    case FamilyId::WgmmaBf16Ss: st = launch<FamilyId::WgmmaBf16Ss>(f, d_jobs.data(), n, d_out.data(), d_masks.data(), words); break;
    case FamilyId::WgmmaE4m3Rs: st = launch<FamilyId::WgmmaE4m3Rs>(f, d_jobs.data(), n, d_out.data(), d_masks.data(), words); break;
    case FamilyId::WgmmaE4m3Ss: st = launch<FamilyId::WgmmaE4m3Ss>(f, d_jobs.data(), n, d_out.data(), d_masks.data(), words); break;
  }
  if (!st.ok) return st;
  out = d_out.download();
  if (masks) *masks = d_masks.download();
  return st;
}

}  // namespace

Runner gpu_runner() { return run_gpu; }

}  // namespace mxattn::probe
