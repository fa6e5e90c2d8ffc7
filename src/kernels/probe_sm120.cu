// `mxattn probe`'s block-scaled families on an sm_120 GPU (kernels/probe_kernel.h runs the jobs): mma.sync
// m16n8k32 kind::mxf8f6f4 (E4M3, E2M3, E2M1 one a byte; UE8M0, 1X) and m16n8k64 kind::mxf4nvf4 (packed E2M1;
// UE8M0 2X, UE4M3 4X), through the wrappers the kernels use (ptx/mma_block_scale.h: selectors {0, 0}).
// Compiled for sm_120a where the toolkit has it (CMakeLists.txt: *sm120*.cu); empty elsewhere.
#include "mxattn/kernels/probe_kernel.h"
#include "mxattn/ptx/mma_block_scale.h"

namespace mxattn::probe::gpu {
namespace {

template <FamilyId F>
struct Run {
  static constexpr int kThreads = 32, kC = 4;
  static constexpr int kParts = F == FamilyId::Mxf4 || F == FamilyId::Nvf4 ? 8 : 4;  // elements a register
  __device__ static void go(const Job& j, const Args& x, const uint8_t*, const uint8_t*, float (&d)[kC]) {
    uint32_t a[4], b[2];
    fill_regs<4, kParts>(a, j.a, x.one);
    fill_regs<2, kParts>(b, j.b, x.one);
    const uint32_t sa = scale_register(j, 1, x), sb = scale_register(j, 2, x);
    d[0] = d[1] = d[2] = d[3] = 0.0f;
    using E = ptx::MmaElem;
    if constexpr (F == FamilyId::MxE4m3) ptx::mma_m16n8k32_mxf8f6f4<E::E4M3, E::E4M3>(d, a, b, sa, sb);
    if constexpr (F == FamilyId::MxE2m3) ptx::mma_m16n8k32_mxf8f6f4<E::E2M3, E::E2M3>(d, a, b, sa, sb);
    if constexpr (F == FamilyId::MxE2m1) ptx::mma_m16n8k32_mxf8f6f4<E::E2M1, E::E2M1>(d, a, b, sa, sb);
    if constexpr (F == FamilyId::Mxf4) ptx::mma_m16n8k64_e2m1_ue8m0(d, a, b, sa, sb);
    if constexpr (F == FamilyId::Nvf4) ptx::mma_m16n8k64_e2m1_ue4m3(d, a, b, sa, sb);
  }
};

}  // namespace

Status run_sm120(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
#if defined(MXATTN_WITH_SM120)
  switch (f.id) {
    case FamilyId::MxE4m3: return run_jobs<Run<FamilyId::MxE4m3>>(f, jobs, out, masks);
    case FamilyId::MxE2m3: return run_jobs<Run<FamilyId::MxE2m3>>(f, jobs, out, masks);
    case FamilyId::MxE2m1: return run_jobs<Run<FamilyId::MxE2m1>>(f, jobs, out, masks);
    case FamilyId::Mxf4: return run_jobs<Run<FamilyId::Mxf4>>(f, jobs, out, masks);
    case FamilyId::Nvf4: return run_jobs<Run<FamilyId::Nvf4>>(f, jobs, out, masks);
    default: break;
  }
  return Status::error(std::string(f.name) + ": not a block-scaled family");
#else
  (void)jobs, (void)out, (void)masks;
  return Status::error(std::string(f.name) + ": this build has no sm_120a code (CMake MXATTN_SM120, nvcc 12.8+)");
#endif
}

}  // namespace mxattn::probe::gpu
