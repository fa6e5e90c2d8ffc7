// `mxattn probe` on the GPU (probe/probe.h): one run of a tensor-core instruction per job, its operands one-hot
// or all ones (and, block-scaled, every scale 1 but one byte at 2), and what came out of the accumulators
// counted (and, when asked, which); and the values round, the instruction once on each draw of random operands,
// D written out. A block runs its jobs (draws) one after another. The instruction families plug in as `Run`
// structs (src/kernels/probe.cu: sm_90; src/kernels/probe_sm120.cu: block-scaled, sm_120a), each with its
// operands' shapes (kA / kB registers of kAParts / kBParts elements, or its ATile / BTile in shared memory),
// `is` (the probe.h families it runs) and `mma` (D = A B of the operands as they are).
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

// A tile type for a Run without shared-memory operands.
using NoTile = frag::KMajorTile<8, 64>;

// What a block needs of the family besides its Run: where A and B sit, their codes of 1.0, the scales'.
struct Args {
  bool a_smem, b_smem;
  int elem_bytes;
  uint32_t a_one, b_one, scale_one, scale_two;
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
__device__ __forceinline__ void fill_tile(uint8_t* tile, int bytes, int pick, int elem_bytes, uint32_t one) {
  for (int byte = threadIdx.x; byte < bytes; byte += blockDim.x) {
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
  __shared__ alignas(1024) uint8_t a_tile[Run::ATile::kBytes];
  __shared__ alignas(1024) uint8_t b_tile[Run::BTile::kBytes];
  __shared__ uint32_t mask[Run::kThreads * Run::kC / 32];
  __shared__ int count[2];
  for (int j = blockIdx.x; j < n; j += gridDim.x) {
    const Job job = jobs[j];
    if (args.a_smem) fill_tile(a_tile, Run::ATile::kBytes, job.a, args.elem_bytes, args.a_one);
    if (args.b_smem) fill_tile(b_tile, Run::BTile::kBytes, job.b, args.elem_bytes, args.b_one);
    for (int w = threadIdx.x; w < words; w += blockDim.x) mask[w] = 0;
    if (threadIdx.x < 2) count[threadIdx.x] = 0;
    ptx::fence_proxy_async_shared();  // the tiles' generic-proxy stores, read by wgmma
    __syncthreads();
    uint32_t a[Run::kA], b[Run::kB];
    fill_regs<Run::kA, Run::kAParts>(a, job.a, args.a_one);
    fill_regs<Run::kB, Run::kBParts>(b, job.b, args.b_one);
    float d[Run::kC];
    Run::mma(a, b, a_tile, b_tile, scale_register(job, 1, args), scale_register(job, 2, args), d);
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

// The values round: draw i's operands (a_words / b_words words a draw: probe.h Operands, registers thread by
// thread or the tile's bytes; 32 scale registers each) as they are, D by slot into d.
template <class Run>
__global__ void __launch_bounds__(Run::kThreads) values_kernel(const uint32_t* a_in, const uint32_t* b_in,
                                                               const uint32_t* sa_in, const uint32_t* sb_in, int n,
                                                               int a_words, int b_words, Args args, float* d_out) {
  __shared__ alignas(1024) uint8_t a_tile[Run::ATile::kBytes];
  __shared__ alignas(1024) uint8_t b_tile[Run::BTile::kBytes];
  const int t = threadIdx.x, lane = t % 32;
  for (int i = blockIdx.x; i < n; i += gridDim.x) {
    const uint32_t* a_src = a_in + int64_t(i) * a_words;
    const uint32_t* b_src = b_in + int64_t(i) * b_words;
    for (int w = t; args.a_smem && w < a_words; w += blockDim.x) reinterpret_cast<uint32_t*>(a_tile)[w] = a_src[w];
    for (int w = t; args.b_smem && w < b_words; w += blockDim.x) reinterpret_cast<uint32_t*>(b_tile)[w] = b_src[w];
    ptx::fence_proxy_async_shared();
    __syncthreads();
    uint32_t a[Run::kA], b[Run::kB];
#pragma unroll
    for (int r = 0; r < Run::kA; ++r) a[r] = args.a_smem ? 0u : a_src[t * Run::kA + r];
#pragma unroll
    for (int r = 0; r < Run::kB; ++r) b[r] = args.b_smem ? 0u : b_src[t * Run::kB + r];
    float d[Run::kC];
    Run::mma(a, b, a_tile, b_tile, sa_in[i * 32 + lane], sb_in[i * 32 + lane], d);
#pragma unroll
    for (int r = 0; r < Run::kC; ++r) d_out[(int64_t(i) * Run::kThreads + t) * Run::kC + r] = d[r];
    __syncthreads();  // the tiles are read before the next draw overwrites them
  }
}

inline Status check(cudaError_t e, const char* what) {
  return e == cudaSuccess ? Status::success() : Status::error(std::string("probe: ") + what + ": " + cudaGetErrorString(e));
}

inline Args args_of(const Family& f) {
  return Args{f.a.smem, f.b.smem, f.b.elem_bytes, f.a_one, f.b_one, f.scale.one, f.scale.two};
}

inline int grid_for(int n) {
  kernels::DeviceInfo dev;
  const int sms = kernels::current_device(&dev) == cudaSuccess ? dev.sms : 1;
  return std::max(1, std::min(n, 8 * sms));
}

// The jobs of family f through Run's kernel; out and (when asked) masks filled.
template <class Run>
Status run_jobs(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
  const int n = int(jobs.size()), words = masks ? mask_words(f) : 0;
  out.assign(n, Result{});
  if (masks) masks->assign(size_t(n) * words, 0u);
  if (n == 0) return Status::success();
  DeviceArray<Job> d_jobs(jobs);
  DeviceArray<Result> d_out(n);
  DeviceArray<uint32_t> d_masks(size_t(n) * words);
  if (!d_jobs.ok() || !d_out.ok() || !d_masks.ok()) return Status::error("probe: out of device memory");
  d_out.fill_bytes(0xFF);  // poisoned: a job the kernel skips shows as -1 nonzero
  probe_kernel<Run><<<grid_for(n), Run::kThreads>>>(d_jobs.data(), n, d_out.data(), d_masks.data(), words, args_of(f));
  if (Status st = check(cudaGetLastError(), "launch"); !st.ok) return st;
  if (Status st = check(cudaDeviceSynchronize(), f.name); !st.ok) return st;
  out = d_out.download();
  if (masks) *masks = d_masks.download();
  return Status::success();
}

// The values round through Run's kernel: D of each draw, c_slots values a draw.
template <class Run>
Status run_values(const Family& f, const std::vector<Operands>& xs, std::vector<float>& d) {
  const int n = int(xs.size()), aw = f.a.words(f.threads), bw = f.b.words(f.threads);
  d.clear();
  if (n == 0) return Status::success();
  std::vector<uint32_t> a, b, sa, sb;
  for (const Operands& x : xs) {
    if (int(x.a.size()) != aw || int(x.b.size()) != bw) return Status::error("probe: operands of the wrong size");
    a.insert(a.end(), x.a.begin(), x.a.end());
    b.insert(b.end(), x.b.begin(), x.b.end());
    sa.insert(sa.end(), x.sa, x.sa + 32);
    sb.insert(sb.end(), x.sb, x.sb + 32);
  }
  DeviceArray<uint32_t> d_a(a), d_b(b), d_sa(sa), d_sb(sb);
  DeviceArray<float> d_d(size_t(n) * f.c_slots());
  if (!d_a.ok() || !d_b.ok() || !d_sa.ok() || !d_sb.ok() || !d_d.ok()) return Status::error("probe: out of device memory");
  d_d.fill_bytes(0xFF);  // poisoned: NaN where the kernel writes nothing
  values_kernel<Run><<<grid_for(n), Run::kThreads>>>(d_a.data(), d_b.data(), d_sa.data(), d_sb.data(), n, aw, bw,
                                                     args_of(f), d_d.data());
  if (Status st = check(cudaGetLastError(), "launch"); !st.ok) return st;
  if (Status st = check(cudaDeviceSynchronize(), f.name); !st.ok) return st;
  d = d_d.download();
  return Status::success();
}

// The Run of Runs... that takes family f, through run_jobs or run_values; an error where none does.
template <class... Runs>
Status dispatch_jobs(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
  Status st = Status::error(std::string(f.name) + ": no probe kernel runs this family");
  ((Runs::is(f) ? (st = run_jobs<Runs>(f, jobs, out, masks), true) : false) || ...);
  return st;
}
template <class... Runs>
Status dispatch_values(const Family& f, const std::vector<Operands>& xs, std::vector<float>& d) {
  Status st = Status::error(std::string(f.name) + ": no probe kernel runs this family");
  ((Runs::is(f) ? (st = run_values<Runs>(f, xs, d), true) : false) || ...);
  return st;
}

// src/kernels/probe_sm120.cu: the block-scaled families (an error where the build has no sm_120a code).
Status run_sm120(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks);
Status values_sm120(const Family& f, const std::vector<Operands>& xs, std::vector<float>& d);

}  // namespace mxattn::probe::gpu
