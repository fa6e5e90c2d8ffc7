// Host side of the sm_120a prefill kernel (src/kernels/attention_prefill_sm120.cu; sm120/prefill_kernel.h).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "mxattn/api/status.h"
#include "mxattn/kernels/attention/params.h"

namespace mxattn::kernels::sm120 {

// Empty when the kernel takes these parameters on the current device; otherwise why not: it needs an sm_120
// GPU and a build with sm_120a code (not `emulated`: sm120/mma.h EmulatedMma runs on any GPU), MX Q, and Q, K
// and V of one format: an element of E4M3, E5M2, E2M3, E3M2 or E2M1 with E8M0 scales over blocks of 32, or
// NVFP4 (E2M1, UE4M3 scales over 16, the tensor scale).
std::string prefill_unsupported(const PrefillParams& p, bool emulated);

// head_dim 64, 128 or 256, after prefill_unsupported said yes.
Status launch_prefill(const PrefillParams& p, int head_dim, bool emulated, cudaStream_t stream);

}  // namespace mxattn::kernels::sm120
