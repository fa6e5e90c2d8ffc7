// Block scales folded into E4M3 operands (DESIGN.md §3). A row (a key, a query, or one channel of V
// over the whole sequence) gets a reference exponent R; each element of a block with scale exponent
// e becomes the E4M3 code of  value * 2^(e - R),  and the row carries 2^(R - 127) as one FP32 factor
// that the kernel applies to whole scores (Q, K) or output channels (V).
//
// R = (largest finite block exponent of the row) - headroom, where the headroom lifts the largest
// element as close to E4M3's 448 as a power of two allows: E2M1 x 2^6 = 384, E3M2 x 2^4 = 448. The
// fold is exact while value * 2^(e - R) is an E4M3 number: always for E2M1 blocks within 14 binades
// of the row's largest, for E2M3 and E3M2 within 8 and 12, for E4M3 only in the row's largest
// blocks (smaller ones lose bits below 2^-6); INT8 (8 significant bits) and E5M2 (a wider range)
// round. The rounding is the one cvt does: nearest even, saturating.
//
// Decoding goes through FP16, which holds every element value of the supported formats exactly
// (checked on the host): code -> FP16 by table, times 2^(e - R) in FP16, then cvt to E4M3.
#pragma once
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/format/format.h"
#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/ptx/cvt.h"

namespace mxattn::kernels::hopper {

inline constexpr float kE4M3Max = 448.0f;
inline constexpr uint32_t kE8M0Nan = 0xFF;
inline constexpr uint32_t kE4M3NanX4 = 0x7F7F7F7Fu;

// floor(log2(448 / largest element)): how far the largest element can move up and stay finite.
__host__ __device__ inline int fold_headroom(const Element& e) { return ilogbf(kE4M3Max / e.max_value()); }

__device__ __forceinline__ void build_value_table(uint16_t* table, const Format& f, int tid, int nthreads) {
  const int codes = 1 << f.elem.bits;
  for (int i = tid; i < 256; i += nthreads) table[i] = __half_as_ushort(__float2half_rn(i < codes ? f.elem.decode(i) : 0.0f));
}

// 2^shift as FP16 in both halves (0 below FP16's smallest subnormal 2^-24; shift <= 15 always).
__device__ __forceinline__ uint32_t pow2_f16x2(int shift) {
  const uint32_t h = shift >= -14 ? uint32_t(shift + 15) << 10 : (shift >= -24 ? 1u << (shift + 24) : 0u);
  return h | h << 16;
}

__device__ __forceinline__ uint32_t hmul2_bits(uint32_t a, uint32_t b) {
  const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
}

// 16 codes (2*Bits bytes in w) -> 16 E4M3 codes: value(code) * mul, elements at index >= valid zero.
template <int Bits>
__device__ __forceinline__ uint4 fold16(const uint32_t (&w)[4], const uint16_t* value, uint32_t mul, int valid) {
  uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const uint32_t h = uint32_t(value[code_at<Bits>(w, 2 * p)]) | uint32_t(value[code_at<Bits>(w, 2 * p + 1)]) << 16;
    uint32_t e = ptx::cvt_rn_satfinite_e4m3x2_f16x2(hmul2_bits(h, mul));
    if (2 * p >= valid) e &= 0xFF00u;
    if (2 * p + 1 >= valid) e &= 0x00FFu;
    out[p / 2] |= e << (16 * (p % 2));
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// One chunk of 16 elements of a block-scaled row: codes in w (2*bits bytes, as load_codes16 leaves
// them), block scale byte `e`, row reference `ref`, `valid` elements in bounds. A NaN block scale
// turns every element in bounds into E4M3 NaN.
__device__ __forceinline__ uint4 fold_codes(int bits, const uint32_t (&w)[4], uint32_t e, int ref,
                                            const uint16_t* value, int valid) {
  if (valid <= 0) return make_uint4(0, 0, 0, 0);
  if (e == kE8M0Nan) {
    uint32_t o[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int n = valid - 4 * i;  // bytes of this word in bounds
      o[i] = n >= 4 ? kE4M3NanX4 : (n <= 0 ? 0u : kE4M3NanX4 >> (8 * (4 - n)));
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
  }
  const uint32_t mul = pow2_f16x2(int(e) - ref);
  switch (bits) {
    case 4: return fold16<4>(w, value, mul, valid);
    case 6: return fold16<6>(w, value, mul, valid);
    default: return fold16<8>(w, value, mul, valid);
  }
}

// The same, reading the codes from global memory (load_codes16's rules).
__device__ __forceinline__ uint4 fold_chunk(int bits, const uint8_t* codes, bool vector, int bytes_in_bounds,
                                            uint32_t e, int ref, const uint16_t* value, int valid) {
  if (valid <= 0) return make_uint4(0, 0, 0, 0);
  uint32_t w[4];
  load_codes16(bits, codes, vector && valid == 16, bytes_in_bounds, w);
  return fold_codes(bits, w, e, ref, value, valid);
}

// The largest finite E8M0 exponent among 4 packed scale bytes (NaN bytes count as 0).
__device__ __forceinline__ uint32_t max_finite_e8m0x4(uint32_t x) {
  const uint32_t nan = __vcmpeq4(x, 0xFFFFFFFFu);
  return __vmaxu4(x & ~nan, 0);  // per-byte values; reduce the bytes with max_bytes
}
__device__ __forceinline__ uint32_t max_bytes(uint32_t x) {
  x = __vmaxu4(x, x >> 16);
  x = __vmaxu4(x, x >> 8);
  return x & 0xFF;
}

// 2^(ref - 127): the factor a row folded with reference exponent `ref` carries.
__device__ __forceinline__ float fold_factor(int ref) { return ldexpf(1.0f, ref - 127); }

}  // namespace mxattn::kernels::hopper
