// Division by a run-time constant through a multiply-high (Granlund-Montgomery, as CUTLASS's
// FastDivmod): index math once per 16 elements must not cost a 32- or 64-bit divide.
#pragma once
#include <cstdint>

#include "mxattn/format/bits.h"

namespace mxattn::kernels {

struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t mul = 1;  // floor(2^32 (2^shift - d) / d) + 1
  uint32_t shift = 0;

  FastDivmod() = default;
  // 1 <= d < 2^31; quotients are exact for every 32-bit numerator.
  explicit FastDivmod(uint32_t d) : divisor(d) {
    while ((uint64_t(1) << shift) < d) ++shift;
    mul = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }

  MXATTN_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, mul);
#else
    const uint32_t hi = uint32_t((uint64_t(n) * mul) >> 32);
#endif
    return uint32_t((uint64_t(hi) + n) >> shift);
  }
  MXATTN_HD void divmod(uint32_t n, uint32_t& q, uint32_t& r) const {
    q = div(n);
    r = n - q * divisor;
  }
};

}  // namespace mxattn::kernels
