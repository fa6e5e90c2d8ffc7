// Decode kernel variants for head_dim 64.
#include "mxattn/kernels/attention/decode_launch.h"

namespace mxattn::kernels {
template DecodeVariant select_decode<64>(const PagedKv&);
}  // namespace mxattn::kernels
