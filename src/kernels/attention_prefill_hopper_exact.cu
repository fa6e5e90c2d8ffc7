// The Hopper prefill kernel's instantiations for the exact mode: P V'^T on BF16 operands.
#include "mxattn/kernels/attention/hopper/launch_kernels.h"

namespace mxattn::kernels::hopper {
template Status launch_prefill<true>(const PrefillParams&, int, cudaStream_t);
}  // namespace mxattn::kernels::hopper
