// Decode kernel variants for head_dim 256.
#include "mxattn/kernels/attention/decode_launch.h"

namespace mxattn::kernels {
template DecodeVariant select_decode<256>(const PagedKv&);
}  // namespace mxattn::kernels
