// Device helpers shared by the quantize, dequantize and amax kernels: loading 16 consecutive input
// elements as raw bits, their absolute maximum, and storing packed code bytes.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "mxattn/format/bits.h"
#include "mxattn/kernels/quantize_kernels.h"

namespace mxattn::kernels {

// Raw input bits: 16 elements in kWords words; 16-bit types two per word, element 2j in the low half.
template <DType T>
struct Input;

template <>
struct Input<DType::F32> {
  using type = float;
  static constexpr int kWords = 16;
  static constexpr uint32_t kInf = 0x7f800000u;  // of the absolute-value key below
  __device__ static uint32_t raw(const type* p) { return float_bits(*p); }
  __device__ static float element(const uint32_t (&w)[kWords], int i) { return bits_float(w[i]); }
  __device__ static float key_to_float(uint32_t key) { return bits_float(key); }
};

template <>
struct Input<DType::BF16> {
  using type = __nv_bfloat16;
  static constexpr int kWords = 8;
  static constexpr uint32_t kInf = 0x7f80u;
  __device__ static uint32_t raw(const type* p) { return *reinterpret_cast<const uint16_t*>(p); }
  __device__ static float element(const uint32_t (&w)[kWords], int i) {
    return bits_float(i % 2 ? w[i / 2] & 0xffff0000u : w[i / 2] << 16);
  }
  __device__ static float key_to_float(uint32_t key) { return bits_float(key << 16); }
};

template <>
struct Input<DType::F16> {
  using type = __half;
  static constexpr int kWords = 8;
  static constexpr uint32_t kInf = 0x7c00u;
  __device__ static uint32_t raw(const type* p) { return *reinterpret_cast<const uint16_t*>(p); }
  __device__ static float element(const uint32_t (&w)[kWords], int i) {
    return __half2float(__ushort_as_half(uint16_t(w[i / 2] >> (16 * (i % 2)))));
  }
  __device__ static float key_to_float(uint32_t key) { return __half2float(__ushort_as_half(uint16_t(key))); }
};

// 16 elements starting at column c0 of the row at element offset `off`; columns at or past `end`
// read as zero bits. `vec`: the row is contiguous and 16-byte aligned (two or four 16-byte loads).
template <DType T, bool kStreaming>
__device__ __forceinline__ void load_group(const void* base, int64_t off, int64_t c0, int64_t end, int64_t stride,
                                           bool vec, uint32_t (&w)[Input<T>::kWords]) {
  using In = Input<T>;
  constexpr int W = In::kWords;
  const auto* x = static_cast<const typename In::type*>(base) + off;
  if (vec && c0 + kGroup <= end) {
    const uint4* p = reinterpret_cast<const uint4*>(x + c0);
#pragma unroll
    for (int q = 0; q < W / 4; ++q) {
      const uint4 t = kStreaming ? __ldcs(p + q) : p[q];
      w[4 * q] = t.x, w[4 * q + 1] = t.y, w[4 * q + 2] = t.z, w[4 * q + 3] = t.w;
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < W; ++j) w[j] = 0;
#pragma unroll
  for (int i = 0; i < kGroup; ++i) {
    const int64_t c = c0 + i;
    const uint32_t bits = c < end ? In::raw(x + c * stride) : 0u;
    if constexpr (W == 16) {
      w[i] = bits;
    } else {
      w[i / 2] |= bits << (16 * (i % 2));
    }
  }
}

// Largest absolute-value bits (in the input's own encoding) of elements [first, first + count);
// for non-negative values the bit order is the numeric order, and NaN/Inf compare above kInf.
template <DType T>
__device__ __forceinline__ uint32_t abs_key(const uint32_t (&w)[Input<T>::kWords], int first, int count) {
  uint32_t key = 0;
  if constexpr (T == DType::F32) {
#pragma unroll
    for (int i = 0; i < 16; ++i)
      if (i >= first && i < first + count) key = max(key, w[i] & 0x7fffffffu);
  } else {
    uint32_t m = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (2 * j >= first && 2 * j < first + count) m = __vmaxu2(m, w[j] & 0x7fff7fffu);
    key = max(m & 0xffffu, m >> 16);
  }
  return key;
}

// The same with NaN left out (as fmaxf does): for the tensor amax.
template <DType T>
__device__ __forceinline__ uint32_t abs_key_ignoring_nan(const uint32_t (&w)[Input<T>::kWords]) {
  uint32_t key = 0;
  if constexpr (T == DType::F32) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const uint32_t a = w[i] & 0x7fffffffu;
      key = max(key, a > 0x7f800000u ? 0u : a);
    }
  } else {
    constexpr uint32_t inf2 = Input<T>::kInf * 0x10001u;
    uint32_t m = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t a = w[j] & 0x7fff7fffu;
      m = __vmaxu2(m, a & ~__vcmpgtu2(a, inf2));
    }
    key = max(m & 0xffffu, m >> 16);
  }
  return key;
}

// `nbytes` (1..16) bytes of words[] to dst, as wide as dst's alignment allows.
__device__ __forceinline__ void store_bytes(uint8_t* dst, const uint32_t (&words)[4], int nbytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst);
  if (nbytes == 16 && a % 16 == 0) {
    __stcs(reinterpret_cast<uint4*>(dst), make_uint4(words[0], words[1], words[2], words[3]));
  } else if (nbytes % 8 == 0 && a % 8 == 0) {
#pragma unroll
    for (int j = 0; j < 2; ++j)
      if (8 * j < nbytes) __stcs(reinterpret_cast<uint2*>(dst) + j, make_uint2(words[2 * j], words[2 * j + 1]));
  } else if (nbytes % 4 == 0 && a % 4 == 0) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (4 * j < nbytes) __stcs(reinterpret_cast<unsigned int*>(dst) + j, words[j]);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i)
      if (i < nbytes) dst[i] = uint8_t(words[i / 4] >> (8 * (i % 4)));
  }
}

// The inverse: nbytes (1..16) bytes from src into words[] (the rest zero).
__device__ __forceinline__ void load_bytes(const uint8_t* src, int nbytes, uint32_t (&words)[4]) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(src);
#pragma unroll
  for (int j = 0; j < 4; ++j) words[j] = 0;
  if (nbytes == 16 && a % 16 == 0) {
    const uint4 t = __ldcs(reinterpret_cast<const uint4*>(src));
    words[0] = t.x, words[1] = t.y, words[2] = t.z, words[3] = t.w;
  } else if (nbytes % 8 == 0 && a % 8 == 0) {
#pragma unroll
    for (int j = 0; j < 2; ++j)
      if (8 * j < nbytes) {
        const uint2 t = __ldcs(reinterpret_cast<const uint2*>(src) + j);
        words[2 * j] = t.x, words[2 * j + 1] = t.y;
      }
  } else if (nbytes % 4 == 0 && a % 4 == 0) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (4 * j < nbytes) words[j] = __ldcs(reinterpret_cast<const unsigned int*>(src) + j);
  } else if (nbytes == 2 && a % 2 == 0) {
    words[0] = __ldcs(reinterpret_cast<const unsigned short*>(src));
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i)
      if (i < nbytes) words[i / 4] |= uint32_t(src[i]) << (8 * (i % 4));
  }
}

}  // namespace mxattn::kernels
