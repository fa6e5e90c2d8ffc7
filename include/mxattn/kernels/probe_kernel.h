// `mxattn probe` on the GPU (probe/probe.h): one run of a tensor-core instruction per job, its operands one-hot
// or all ones (and, block-scaled, every scale 1 but one byte at 2), and what came out of the accumulators
// counted (and, when asked, which). A block runs its jobs one after another; a job's operands are built from
// its slot numbers alone. The instruction families plug in as `Run` structs: src/kernels/probe.cu (sm_90),
// src/kernels/probe_sm120.cu (block-scaled, sm_120a).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "mxattn/api/device_buffer.h"
#include "mxattn/kernels/attention/hopper/fragment.h"
#include "mxattn/kernels/launchable.h"
#include "mxattn/probe/probe.h"
#include "mxattn/ptx/mbarrier.h"

namespace mxattn::probe::gpu {

// The wgmma families' shared-memory tile (src/probe/probe.cpp ProbeTile): 64 rows of 128 bytes, 128-byte
// swizzle.
using Tile = frag::KMajorTile<64, 128>;

// What a block needs of the family besides its Run: where A and B sit, an element's code of 1.0, the scales'.
struct Args {
  bool a_smem, b_smem;
  int elem_bytes;
  uint32_t one, scale_one, scale_two;
};

// A register operand of kRegs 32-bit registers, kParts elements each (32 / kParts bits): element (thread,
// reg, part) is `one` when its slot is `pick` (or pick is kAll), else 0.
template <int kRegs, int kParts>
__device__ __forceinline__ void fill_regs(uint32_t (&x)[kRegs], int pick, uint32_t one) {
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

// The tile's element e (of elem_bytes) is `one` when e is `pick` (or pick is kAll).
__device__ __forceinline__ void fill_tile(uint8_t* tile, int pick, int elem_bytes, uint32_t one) {
  for (int byte = threadIdx.x; byte < Tile::kBytes; byte += blockDim.x) {
    const int e = byte / elem_bytes, within = byte % elem_bytes;
    tile[byte] = pick == kAll || pick == e ? uint8_t(one >> (8 * within)) : 0;
  }
}

// A lane's scale register for side 1 (A) or 2 (B): every byte 1, but the job's byte of the job's lane 2.
__device__ __forceinline__ uint32_t scale_register(const Job& j, int side, const Args& a) {
  const int lane = threadIdx.x % 32;
  uint32_t x = a.scale_one * 0x01010101u;
  if (j.scale == side && j.lane == lane) x = (x & ~(0xFFu << (8 * j.byte))) | a.scale_two << (8 * j.byte);
  return x;
}

// words: mask words a job (0: no masks).
template <class Run>
__global__ void __launch_bounds__(Run::kThreads) probe_kernel(const Job* jobs, int n, Result* out, uint32_t* masks,
                                                              int words, Args args) {
  __shared__ alignas(1024) uint8_t a_tile[Tile::kBytes];
  __shared__ alignas(1024) uint8_t b_tile[Tile::kBytes];
  __shared__ uint32_t mask[Run::kThreads * Run::kC / 32];
  __shared__ int count[2];
  for (int j = blockIdx.x; j < n; j += gridDim.x) {
    const Job job = jobs[j];
    if (args.a_smem) fill_tile(a_tile, job.a, args.elem_bytes, args.one);
    if (args.b_smem) fill_tile(b_tile, job.b, args.elem_bytes, args.one);
    for (int w = threadIdx.x; w < words; w += blockDim.x) mask[w] = 0;
    if (threadIdx.x < 2) count[threadIdx.x] = 0;
    ptx::fence_proxy_async_shared();  // the tiles' generic-proxy stores, read by wgmma
    __syncthreads();
    float d[Run::kC];
    Run::go(job, args, a_tile, b_tile, d);
    int nonzero = 0, bad = 0;
#pragma unroll
    for (int r = 0; r < Run::kC; ++r)
      if (d[r] != 0.0f) {
        ++nonzero;
        bad += d[r] != 1.0f && (job.scale == 0 || d[r] != 2.0f);
        const int slot = threadIdx.x * Run::kC + r;
        if (words && (job.scale == 0 || d[r] == 2.0f)) atomicOr(&mask[slot / 32], 1u << (slot % 32));
      }
    if (nonzero) atomicAdd(&count[0], nonzero);
    if (bad) atomicAdd(&count[1], bad);
    __syncthreads();
    if (threadIdx.x == 0) out[j] = Result{count[0], count[1]};
    for (int w = threadIdx.x; w < words; w += blockDim.x) masks[int64_t(j) * words + w] = mask[w];
    __syncthreads();
  }
}

inline Status check(cudaError_t e, const char* what) {
  return e == cudaSuccess ? Status::success() : Status::error(std::string("probe: ") + what + ": " + cudaGetErrorString(e));
}

// The jobs of family f through Run's kernel; out and (when asked) masks filled.
template <class Run>
Status run_jobs(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
  const int n = int(jobs.size()), words = masks ? mask_words(f) : 0;
  out.assign(n, Result{});
  if (masks) masks->assign(size_t(n) * words, 0u);
  if (n == 0) return Status::success();
  kernels::DeviceInfo dev;
  if (Status st = check(kernels::current_device(&dev), "no CUDA device"); !st.ok) return st;
  const int sms = dev.sms;
  DeviceArray<Job> d_jobs(jobs);
  DeviceArray<Result> d_out(n);
  DeviceArray<uint32_t> d_masks(size_t(n) * words);
  if (!d_jobs.ok() || !d_out.ok() || !d_masks.ok()) return Status::error("probe: out of device memory");
  d_out.fill_bytes(0xFF);  // poisoned: a job the kernel skips shows as -1 nonzero
  const Args args{f.a.smem, f.b.smem, f.b.elem_bytes, f.one, f.scale.one, f.scale.two};
  const int blocks = std::max(1, std::min(n, 8 * sms));
  probe_kernel<Run><<<blocks, Run::kThreads>>>(d_jobs.data(), n, d_out.data(), d_masks.data(), words, args);
  if (Status st = check(cudaGetLastError(), "launch"); !st.ok) return st;
  if (Status st = check(cudaDeviceSynchronize(), f.name); !st.ok) return st;
  out = d_out.download();
  if (masks) *masks = d_masks.download();
  return Status::success();
}

// src/kernels/probe_sm120.cu: the block-scaled families (an error where the build has no sm_120a code).
Status run_sm120(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks);

}  // namespace mxattn::probe::gpu
