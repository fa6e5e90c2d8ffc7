// Exact dequantization of block-scaled codes to BF16 in registers.
//
// Every code of an element format of at most 8 bits, and every scale byte, is decoded once per
// thread block into a shared-memory table (format/element.h and format/scale.h do the decoding, so
// the numerics are the core's). A value is then table[code] * scale[byte] in FP32, which is exact,
// and rounding it to BF16 is exact too for every named format: E2M1/E2M3/E3M2/E4M3/E5M2/INT8 times
// a power of two, and E2M1 times UE4M3 (at most 6 significant bits; BF16 holds 8). NVFP4's FP32
// tensor scale is not applied here: kernels fold 1/S_enc into the softmax scale (Q, K) and the
// output (V).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/format/format.h"

namespace mxattn::kernels {

struct ElementTable {
  float value[256];  // code -> element value (codes >= 2^bits are never read)
  float scale[256];  // scale byte -> scale value (NaN codes give NaN)
};

__device__ __forceinline__ void build_element_table(ElementTable& t, const Format& f, int tid, int nthreads) {
  const int codes = 1 << f.elem.bits;
  for (int i = tid; i < 256; i += nthreads) {
    t.value[i] = i < codes ? f.elem.decode(uint32_t(i)) : 0.0f;
    t.scale[i] = decode_scale(f.scale, uint32_t(i));
  }
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Code i of a little-endian bit stream held in words w (bits <= 8, i known at compile time after unrolling).
template <int Bits, int N>
__device__ __forceinline__ uint32_t code_at(const uint32_t (&w)[N], int i) {
  const int bit = i * Bits, word = bit / 32, shift = bit % 32;
  uint32_t c = w[word] >> shift;
  if (shift + Bits > 32) c |= w[word + 1] << (32 - shift);
  return c & ((1u << Bits) - 1);
}

// Element i of a row of packed codes in global memory (the same bit stream), through the table.
template <int Bits>
__device__ __forceinline__ float element_at(const uint8_t* row, int i, const ElementTable& t) {
  const int bit = i * Bits, byte = bit / 8, shift = bit % 8;
  uint32_t c = row[byte] >> shift;
  if (shift + Bits > 8) c |= uint32_t(row[byte + 1]) << (8 - shift);
  return t.value[c & ((1u << Bits) - 1)];
}

// 16 codes (2*Bits bytes in w) -> 8 BF16 pairs; elements 0-7 scaled by s0, 8-15 by s1
// (s0 == s1 unless the block size is 8). Elements at index >= valid are zero.
template <int Bits>
__device__ __forceinline__ void decode16(const uint32_t (&w)[4], const ElementTable& t, float s0, float s1,
                                         int valid, uint32_t (&out)[8]) {
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const float s = p < 4 ? s0 : s1;
    float lo = t.value[code_at<Bits>(w, 2 * p)] * s, hi = t.value[code_at<Bits>(w, 2 * p + 1)] * s;
    if (2 * p >= valid) lo = 0.0f;
    if (2 * p + 1 >= valid) hi = 0.0f;
    out[p] = pack_bf16x2(lo, hi);
  }
}

__device__ __forceinline__ void decode16(int bits, const uint32_t (&w)[4], const ElementTable& t, float s0, float s1,
                                         int valid, uint32_t (&out)[8]) {
  switch (bits) {
    case 4: decode16<4>(w, t, s0, s1, valid, out); break;
    case 6: decode16<6>(w, t, s0, s1, valid, out); break;
    default: decode16<8>(w, t, s0, s1, valid, out); break;
  }
}

// The 2*bits bytes of 16 codes at p. `vector`: p is aligned to the load width (16, 8 or 4 bytes for
// 8, 4, 6 bits) and all bytes are in bounds; otherwise bytes at index >= bytes_in_bounds read as zero.
__device__ __forceinline__ void load_codes16(int bits, const uint8_t* p, bool vector, int bytes_in_bounds,
                                             uint32_t (&w)[4]) {
  w[0] = w[1] = w[2] = w[3] = 0;
  if (vector) {
    if (bits == 8) {
      const uint4 v = *reinterpret_cast<const uint4*>(p);
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else if (bits == 4) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      w[0] = v.x, w[1] = v.y;
    } else {
      const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
      w[0] = q[0], w[1] = q[1], w[2] = q[2];
    }
    return;
  }
  const int n = 2 * bits < bytes_in_bounds ? 2 * bits : bytes_in_bounds;
#pragma unroll
  for (int i = 0; i < 16; ++i)  // unrolled: w stays in registers
    if (i < n) w[i / 4] |= uint32_t(p[i]) << (8 * (i % 4));
}

}  // namespace mxattn::kernels
