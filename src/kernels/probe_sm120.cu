// `mxattn probe`'s block-scaled families on an sm_120 GPU (kernels/probe_kernel.h runs the jobs): mma.sync
// m16n8k32 kind::mxf8f6f4 (one element a byte, UE8M0, 1X) for each element against itself and E4M3 against
// each, and m16n8k64 kind::mxf4nvf4 (packed E2M1; UE8M0 2X, UE4M3 4X), through the wrappers the kernels use
// (ptx/mma_block_scale.h: selectors {0, 0}). Compiled for sm_120a where the toolkit has it (CMakeLists.txt:
// *sm120*.cu); empty elsewhere.
#include "mxattn/kernels/probe_kernel.h"
#include "mxattn/ptx/mma_block_scale.h"

namespace mxattn::probe::gpu {
namespace {

using E = ptx::MmaElem;

constexpr Element element(E e) {
  return e == E::E4M3 ? kE4M3 : e == E::E5M2 ? kE5M2 : e == E::E2M3 ? kE2M3 : e == E::E3M2 ? kE3M2 : kE2M1;
}

// kind::mxf8f6f4 (kVec 1) or, packed E2M1, kind::mxf4nvf4 with UE8M0 (kVec 2) or UE4M3 (kVec 4) scales.
template <E A, E B, int kVec>
struct RunBlockScaled {
  static constexpr int kThreads = 32, kC = 4, kA = 4, kB = 2, kAParts = kVec == 1 ? 4 : 8, kBParts = kAParts;
  using ATile = NoTile;
  using BTile = NoTile;
  static bool is(const Family& f) {
    return f.scale.vec == kVec && f.a_elem == element(A) && f.b_elem == element(B);
  }
  __device__ static void mma(const uint32_t (&a)[kA], const uint32_t (&b)[kB], const uint8_t*, const uint8_t*,
                             uint32_t sa, uint32_t sb, float (&d)[kC]) {
    d[0] = d[1] = d[2] = d[3] = 0.0f;
    if constexpr (kVec == 1) ptx::mma_m16n8k32_mxf8f6f4<A, B>(d, a, b, sa, sb);
    if constexpr (kVec == 2) ptx::mma_m16n8k64_e2m1_ue8m0(d, a, b, sa, sb);
    if constexpr (kVec == 4) ptx::mma_m16n8k64_e2m1_ue4m3(d, a, b, sa, sb);
  }
};

#define MXATTN_SM120_RUNS                                                                                           \
  RunBlockScaled<E::E4M3, E::E4M3, 1>, RunBlockScaled<E::E5M2, E::E5M2, 1>, RunBlockScaled<E::E2M3, E::E2M3, 1>, \
      RunBlockScaled<E::E3M2, E::E3M2, 1>, RunBlockScaled<E::E2M1, E::E2M1, 1>, RunBlockScaled<E::E4M3, E::E5M2, 1>, \
      RunBlockScaled<E::E4M3, E::E2M3, 1>, RunBlockScaled<E::E4M3, E::E3M2, 1>, RunBlockScaled<E::E4M3, E::E2M1, 1>, \
      RunBlockScaled<E::E2M1, E::E2M1, 2>, RunBlockScaled<E::E2M1, E::E2M1, 4>

#if !defined(MXATTN_WITH_SM120)
Status no_sm120(const Family& f) {
  return Status::error(std::string(f.name) + ": this build has no sm_120a code (CMake MXATTN_SM120, nvcc 12.8+)");
}
#endif

}  // namespace

Status run_sm120(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
#if defined(MXATTN_WITH_SM120)
  return dispatch_jobs<MXATTN_SM120_RUNS>(f, jobs, out, masks);
#else
  (void)jobs, (void)out, (void)masks;
  return no_sm120(f);
#endif
}

Status values_sm120(const Family& f, const std::vector<Operands>& xs, std::vector<float>& d) {
#if defined(MXATTN_WITH_SM120)
  return dispatch_values<MXATTN_SM120_RUNS>(f, xs, d);
#else
  (void)xs, (void)d;
  return no_sm120(f);
#endif
}

}  // namespace mxattn::probe::gpu
