// Host side of the Hopper prefill kernel (src/kernels/attention_prefill_hopper*.cu).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

#include "mxattn/api/status.h"
#include "mxattn/kernels/attention/params.h"

namespace mxattn::kernels::hopper {

// Empty when the kernel takes these parameters on the current device; otherwise why not. exact: the exact
// mode (traits.h), whose V may hold any FP16 element values.
std::string prefill_unsupported(const PrefillParams& p, int head_dim, bool exact);

// head_dim 64, 128 or 256; kExact: the exact mode (launch_kernels.h, a translation unit a mode).
template <bool kExact>
Status launch_prefill(const PrefillParams& p, int head_dim, cudaStream_t stream);
extern template Status launch_prefill<false>(const PrefillParams&, int, cudaStream_t);
extern template Status launch_prefill<true>(const PrefillParams&, int, cudaStream_t);

// The workspaces' stream-ordered memory pool of the current device (the library's own, kept between calls).
cudaError_t workspace_pool(cudaMemPool_t* pool);

}  // namespace mxattn::kernels::hopper
