// The Hopper prefill kernel's instantiations for P V'^T on E4M3 operands.
#include "mxattn/kernels/attention/hopper/launch_kernels.h"

namespace mxattn::kernels::hopper {
template Status launch_prefill<false>(const PrefillParams&, int, cudaStream_t);
}  // namespace mxattn::kernels::hopper
