// Host side of the Hopper prefill kernel (src/kernels/attention_prefill_hopper.cu).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "mxattn/api/status.h"
#include "mxattn/kernels/attention/params.h"

namespace mxattn::kernels::hopper {

// Empty when the kernel takes these parameters on the current device; otherwise why not.
std::string prefill_unsupported(const PrefillParams& p, int head_dim);

Status launch_prefill(const PrefillParams& p, int head_dim, cudaStream_t stream);  // head_dim 64, 128 or 256

}  // namespace mxattn::kernels::hopper
