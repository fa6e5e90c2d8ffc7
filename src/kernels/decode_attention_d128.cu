// Decode kernel variants for head_dim 128.
#include "mxattn/kernels/attention/decode_launch.h"

namespace mxattn::kernels {
template DecodeVariant select_decode<128>(const PagedKv&);
}  // namespace mxattn::kernels
