// `mxattn probe`'s sm_90 families on the GPU (kernels/probe_kernel.h runs the jobs): mma.sync m16n8k16 BF16
// and m16n8k32 E4M3; wgmma m64nNk16 BF16 and m64nNk32 E4M3 with A from registers or shared memory, B (and A)
// in K-major tiles swizzled as the Hopper kernel's (128-byte rows: 128-byte swizzle, 64-byte rows: 64-byte),
// k-step 1 through the descriptor as the kernels make it (hopper/mainloop.h tile_desc, desc_at). The
// block-scaled families: src/kernels/probe_sm120.cu.
#include "mxattn/kernels/probe_kernel.h"
#include "mxattn/ptx/mma.h"
#include "mxattn/ptx/wgmma.h"

namespace mxattn::probe::gpu {
namespace {

template <class Tile>
__device__ uint64_t kstep_desc(const uint8_t* tile, int kstep) {
  return ptx::smem_desc(tile + Tile::desc_offset(0, 32 * kstep), Tile::kGroupBytes,
                        Tile::kWidth == 128 ? ptx::Swizzle::B128 : ptx::Swizzle::B64);
}

// mma.sync: BF16 m16n8k16 or E4M3 m16n8k32, D = A B.
template <bool kBf16>
struct RunMma {
  static constexpr int kThreads = 32, kC = 4, kA = 4, kB = 2, kAParts = kBf16 ? 2 : 4, kBParts = kAParts;
  using ATile = NoTile;
  using BTile = NoTile;
  static bool is(const Family& f) { return f.threads == 32 && !f.scale.vec && (f.a.elem_bytes == 2) == kBf16; }
  __device__ static void mma(const uint32_t (&a)[kA], const uint32_t (&b)[kB], const uint8_t*, const uint8_t*, uint32_t,
                             uint32_t, float (&d)[kC]) {
    const float c[4] = {0, 0, 0, 0};
    if constexpr (kBf16) ptx::mma_m16n8k16_row_col_f32_bf16(d, a, b, c);
    else ptx::mma_m16n8k32_row_col_f32_e4m3(d, a, b, c);
  }
};

// wgmma m64nN: BF16 (k16) or E4M3 (k32), A from registers or an ATile, B^T an N-row BTile of kWidth-byte rows;
// one group, waited for. D = A B (scale-d 0).
template <bool kBf16, bool kASmem, int N, int kWidth>
struct RunWgmma {
  static constexpr int kThreads = 128, kC = N / 2, kA = 4, kB = 1, kAParts = kBf16 ? 2 : 4, kBParts = 1;
  using ATile = std::conditional_t<kASmem, frag::KMajorTile<64, kWidth>, NoTile>;
  using BTile = frag::KMajorTile<N, kWidth>;
  static bool is(const Family& f) {
    return f.threads == 128 && (f.a.elem_bytes == 2) == kBf16 && f.a.smem == kASmem && f.n == N && f.b.row_bytes == kWidth;
  }
  __device__ static void mma(const uint32_t (&a)[kA], const uint32_t (&)[kB], const uint8_t* a_tile,
                             const uint8_t* b_tile, uint32_t, uint32_t, float (&d)[kC]) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const uint64_t b = kstep_desc<BTile>(b_tile, 1);
#pragma unroll
    for (int i = 0; i < kC; ++i) d[i] = 0.0f;
    ptx::wgmma_fence();
    if constexpr (kBf16 && kASmem) {
      static_assert(N == 64);
      ptx::wgmma_m64n64k16_f32_bf16_ss(d, kstep_desc<ATile>(a_tile, 1), b, 0);
    } else if constexpr (kBf16) {
      if constexpr (N == 8) ptx::wgmma_m64n8k16_f32_bf16_rs(d, a, b, 0);
      if constexpr (N == 64) ptx::wgmma_m64n64k16_f32_bf16_rs(d, a, b, 0);
      if constexpr (N == 128) ptx::wgmma_m64n128k16_f32_bf16_rs(d, a, b, 0);
      if constexpr (N == 256) ptx::wgmma_m64n256k16_f32_bf16_rs(d, a, b, 0);
    } else if constexpr (kASmem) {
      const uint64_t x = kstep_desc<ATile>(a_tile, 1);
      if constexpr (N == 64) ptx::wgmma_m64n64k32_f32_e4m3_ss(d, x, b, 0);
      if constexpr (N == 128) ptx::wgmma_m64n128k32_f32_e4m3_ss(d, x, b, 0);
      if constexpr (N == 192) ptx::wgmma_m64n192k32_f32_e4m3_ss(d, x, b, 0);
      if constexpr (N == 256) ptx::wgmma_m64n256k32_f32_e4m3_ss(d, x, b, 0);
    } else {
      if constexpr (N == 8) ptx::wgmma_m64n8k32_f32_e4m3_rs(d, a, b, 0);
      if constexpr (N == 64) ptx::wgmma_m64n64k32_f32_e4m3_rs(d, a, b, 0);
      if constexpr (N == 128) ptx::wgmma_m64n128k32_f32_e4m3_rs(d, a, b, 0);
      if constexpr (N == 136) ptx::wgmma_m64n136k32_f32_e4m3_rs(d, a, b, 0);
      if constexpr (N == 256) ptx::wgmma_m64n256k32_f32_e4m3_rs(d, a, b, 0);
    }
    ptx::wgmma_commit_group();
    ptx::wgmma_wait_group<0>();
#pragma unroll
    for (int i = 0; i < kC; ++i) ptx::wgmma_fence_operand(d[i]);
#endif
  }
};

// Every sm_90 family of probe.cpp families(): kBf16, kASmem, N, row bytes.
#define MXATTN_SM90_RUNS                                                                                       \
  RunMma<true>, RunMma<false>, RunWgmma<true, false, 64, 128>, RunWgmma<false, false, 64, 128>,                \
      RunWgmma<true, true, 64, 128>, RunWgmma<false, true, 64, 128>, RunWgmma<false, true, 128, 128>,         \
      RunWgmma<false, true, 256, 64>, RunWgmma<false, true, 192, 64>, RunWgmma<false, false, 128, 128>,       \
      RunWgmma<false, false, 136, 128>, RunWgmma<false, false, 256, 64>, RunWgmma<false, false, 8, 128>,      \
      RunWgmma<false, false, 8, 64>, RunWgmma<true, false, 128, 128>, RunWgmma<true, false, 256, 128>,        \
      RunWgmma<true, false, 8, 128>

Status not_here(const Family& f) {
  const int cc = gpu_compute_capability();
  return f.runs_on(cc) ? Status::success()
                       : Status::error(std::string(f.name) + ": does not run on this GPU (sm_" + std::to_string(cc) + ")");
}

Status run_gpu(const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
  if (Status st = not_here(f); !st.ok) return st;
  if (f.scale.vec) return run_sm120(f, jobs, out, masks);
  return dispatch_jobs<MXATTN_SM90_RUNS>(f, jobs, out, masks);
}

Status values_gpu(const Family& f, const std::vector<Operands>& xs, std::vector<float>& d) {
  if (Status st = not_here(f); !st.ok) return st;
  if (f.scale.vec) return values_sm120(f, xs, d);
  return dispatch_values<MXATTN_SM90_RUNS>(f, xs, d);
}

}  // namespace
}  // namespace mxattn::probe::gpu

namespace mxattn::probe {

Runner gpu_runner() { return gpu::run_gpu; }
ValueRunner gpu_value_runner() { return gpu::values_gpu; }

int gpu_compute_capability() {
  kernels::DeviceInfo d;
  return kernels::current_device(&d) == cudaSuccess ? 10 * d.major + d.minor : 0;
}

}  // namespace mxattn::probe
