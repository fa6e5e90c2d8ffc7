// Decode kernel variants for head_dim 256.
#include "mxattn/kernels/attention/decode_launch.h"

namespace mxattn::kernels {
template cudaError_t launch_decode<256>(const DecodeParams&, int, cudaStream_t);
}  // namespace mxattn::kernels
