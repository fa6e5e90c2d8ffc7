#include "mxattn/layout/scale_layout.h"

#include <cstring>

namespace mxattn {

void convert_scale_layout(const uint8_t* src, ScaleLayout from, uint8_t* dst, ScaleLayout to, ScaleShape shape) {
  std::memset(dst, 0, scale_bytes(to, shape));
  for (size_t r = 0; r < shape.rows; ++r)
    for (size_t c = 0; c < shape.cols; ++c)
      dst[scale_offset(to, r, c, shape.cols)] = src[scale_offset(from, r, c, shape.cols)];
}

}  // namespace mxattn
