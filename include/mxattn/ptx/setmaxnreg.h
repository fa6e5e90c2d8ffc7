// setmaxnreg (PTX ISA §9.7.17.1): move registers between warpgroups of one block. Takes effect only
// when the kernel has a register cap at entry (__launch_bounds__(threads, 1)) and every warp of the
// warpgroup executes it; counts are multiples of 8 in [24, 256].
#pragma once

namespace mxattn::ptx {

// setmaxnreg.inc.sync.aligned.u32 N;   sm_90a
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

// setmaxnreg.dec.sync.aligned.u32 N;   sm_90a
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

}  // namespace mxattn::ptx
