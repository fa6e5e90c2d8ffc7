// Programmatic dependent launch (PTX ISA §9.7.15.x griddepcontrol), sm_90+. A kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may start before the kernel ahead of it in the
// stream has finished; it must call wait before it reads what that kernel writes. launch_dependents
// lets the next such kernel start its blocks (which then wait) before this one ends.
#pragma once

namespace mxattn::ptx {

// Both are no-ops before sm_90, where the launcher does not ask for programmatic launches.

// griddepcontrol.wait: until the grids this one depends on have completed and their memory is visible.
__device__ __forceinline__ void griddep_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// griddepcontrol.launch_dependents: the dependent grid may be scheduled once every block of this
// grid has issued this or exited.
__device__ __forceinline__ void griddep_launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
}

}  // namespace mxattn::ptx
