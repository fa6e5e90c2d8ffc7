// Host side of programmatic dependent launch (ptx/griddep.h).
#pragma once
#include <cuda_runtime_api.h>

namespace mxattn::kernels {

// On sm_90+ launched as a programmatic dependent of the kernel ahead in the stream: its blocks may
// be scheduled while that kernel drains (the kernels call griddepcontrol.wait before reading).
inline cudaLaunchConfig_t dependent_launch(dim3 grid, int threads, size_t smem, cudaStream_t stream,
                                           bool programmatic) {
  static cudaLaunchAttribute attr = [] {
    cudaLaunchAttribute a{};
    a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    a.val.programmaticStreamSerializationAllowed = 1;
    return a;
  }();
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid, cfg.blockDim = dim3(threads), cfg.dynamicSmemBytes = smem, cfg.stream = stream;
  cfg.attrs = &attr, cfg.numAttrs = programmatic ? 1 : 0;
  return cfg;
}

}  // namespace mxattn::kernels
