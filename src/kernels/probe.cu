// `mxattn probe`'s sm_90 families on the GPU (kernels/probe_kernel.h runs the jobs): mma.sync m16n8k16 BF16
// and m16n8k32 E4M3; wgmma m64n64k16 BF16 and m64n64k32 E4M3 with A from registers or shared memory, B (and A)
// in the 128-byte swizzled tile, k-step 1 through the descriptor as the kernels make it (hopper/mainloop.h
// desc_at). The block-scaled families: src/kernels/probe_sm120.cu.
#include "mxattn/kernels/probe_kernel.h"
#include "mxattn/ptx/mma.h"
#include "mxattn/ptx/wgmma.h"

namespace mxattn::probe::gpu {
namespace {

__device__ uint64_t kstep_desc(const uint8_t* tile, int kstep) {
  return ptx::smem_desc(tile + Tile::desc_offset(0, 32 * kstep), Tile::kGroupBytes, ptx::Swizzle::B128);
}

template <FamilyId F>
struct Run;  // d = A B for one job: kThreads, kC accumulator registers a thread; go() builds the operands

template <>
struct Run<FamilyId::MmaBf16> {
  static constexpr int kThreads = 32, kC = 4;
  __device__ static void go(const Job& j, const Args& x, const uint8_t*, const uint8_t*, float (&d)[kC]) {
    uint32_t a[4], b[2];
    fill_regs<4, 2>(a, j.a, x.one);
    fill_regs<2, 2>(b, j.b, x.one);
    const float c[4] = {0, 0, 0, 0};
    ptx::mma_m16n8k16_row_col_f32_bf16(d, a, b, c);
  }
};
template <>
struct Run<FamilyId::MmaE4m3> {
  static constexpr int kThreads = 32, kC = 4;
  __device__ static void go(const Job& j, const Args& x, const uint8_t*, const uint8_t*, float (&d)[kC]) {
    uint32_t a[4], b[2];
    fill_regs<4, 4>(a, j.a, x.one);
    fill_regs<2, 4>(b, j.b, x.one);
    const float c[4] = {0, 0, 0, 0};
    ptx::mma_m16n8k32_row_col_f32_e4m3(d, a, b, c);
  }
};

// The wgmma families: B (and for ss A) in the tiles, which the block filled before; one group, waited for.
template <FamilyId F>
struct RunWgmma {
  static constexpr int kThreads = 128, kC = 32;
  __device__ static void go(const Job& j, const Args& x, const uint8_t* a_tile, const uint8_t* b_tile, float (&d)[kC]) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const uint64_t b = kstep_desc(b_tile, 1);
    uint32_t a[4];
    if constexpr (F == FamilyId::WgmmaBf16Rs) fill_regs<4, 2>(a, j.a, x.one);
    if constexpr (F == FamilyId::WgmmaE4m3Rs) fill_regs<4, 4>(a, j.a, x.one);
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

Status run_gpu(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
  const int cc = gpu_compute_capability();
  if (!f.runs_on(cc))
    return Status::error(std::string(f.name) + ": does not run on this GPU (sm_" + std::to_string(cc) + ")");
  switch (f.id) {
    case FamilyId::MmaBf16: return run_jobs<Run<FamilyId::MmaBf16>>(f, jobs, out, masks);
    case FamilyId::MmaE4m3: return run_jobs<Run<FamilyId::MmaE4m3>>(f, jobs, out, masks);
    case FamilyId::WgmmaBf16Rs: return run_jobs<Run<FamilyId::WgmmaBf16Rs>>(f, jobs, out, masks);
    case FamilyId::WgmmaBf16Ss: return run_jobs<Run<FamilyId::WgmmaBf16Ss>>(f, jobs, out, masks);
    case FamilyId::WgmmaE4m3Rs: return run_jobs<Run<FamilyId::WgmmaE4m3Rs>>(f, jobs, out, masks);
    case FamilyId::WgmmaE4m3Ss: return run_jobs<Run<FamilyId::WgmmaE4m3Ss>>(f, jobs, out, masks);
    default: return run_sm120(f, jobs, out, masks);
  }
}

}  // namespace
}  // namespace mxattn::probe::gpu

namespace mxattn::probe {

Runner gpu_runner() { return gpu::run_gpu; }

int gpu_compute_capability() {
  kernels::DeviceInfo d;
  return kernels::current_device(&d) == cudaSuccess ? 10 * d.major + d.minor : 0;
}

}  // namespace mxattn::probe
