// Small helpers for the GPU tests: device buffers, dtype conversion on the host, input patterns.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mxattn/api/device_buffer.h"
#include "mxattn/api/quantize.h"
#include "mxattn/format/bits.h"

#define CUDA_ASSERT(expr)                                                                  \
  do {                                                                                     \
    const cudaError_t e_ = (expr);                                                         \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_);                 \
  } while (0)

namespace mxattn::test {

inline constexpr uint8_t kPoison = 0xAB;

template <typename T>
using DeviceBuffer = DeviceArray<T>;

// Raw bits of a float rounded to `t` (RNE) and the float value those bits hold.
inline uint32_t to_dtype_bits(float v, DType t) {
  if (t == DType::F32) return float_bits(v);
  if (t == DType::BF16) {
    const __nv_bfloat16 b = __float2bfloat16_rn(v);
    uint16_t u;
    std::memcpy(&u, &b, 2);
    return u;
  }
  const __half h = __float2half_rn(v);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float from_dtype_bits(uint32_t u, DType t) {
  if (t == DType::F32) return bits_float(u);
  if (t == DType::BF16) return bits_float(u << 16);
  const uint16_t s = uint16_t(u);
  __half h;
  std::memcpy(&h, &s, 2);
  return __half2float(h);
}
inline bool dtype_is_nan(uint32_t u, DType t) {
  if (t == DType::F32) return (u & 0x7fffffffu) > 0x7f800000u;
  if (t == DType::BF16) return (u & 0x7fffu) > 0x7f80u;
  return (u & 0x7fffu) > 0x7c00u;
}

// A host tensor of `dtype`: raw bytes, and the float values the CPU reference reads.
struct HostTensor {
  DType dtype;
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

inline HostTensor make_tensor(const std::vector<float>& v, DType t) {
  HostTensor h{t, std::vector<uint8_t>(v.size() * dtype_bytes(t)), std::vector<float>(v.size())};
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t u = to_dtype_bits(v[i], t);
    std::memcpy(&h.bytes[i * dtype_bytes(t)], &u, dtype_bytes(t));
    h.values[i] = from_dtype_bits(u, t);
  }
  return h;
}

enum class Pattern { Normal, Mixed, Tiny, Grid };

// Blocks of values that exercise the scale rules: a wide exponent range, zero blocks, NaN and Inf
// blocks, values on rounding ties, float subnormals, values near the float maximum.
inline std::vector<float> make_values(size_t n, Pattern pattern, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> small_int(-64, 64), expo(-30, 30), kind(0, 11);
  std::vector<float> v(n);
  int region = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) region = kind(rng);
    float x = normal(rng);
    switch (pattern) {
      case Pattern::Normal: break;
      case Pattern::Tiny: x = x * 1e-40f; break;
      case Pattern::Grid: x = float(small_int(rng)) * 0.125f; break;
      case Pattern::Mixed:
        switch (region) {
          case 0: x = 0.0f; break;
          case 1: x = i % 5 == 0 ? NAN : x; break;
          case 2: x = i % 7 == 0 ? (i % 2 ? INFINITY : -INFINITY) : x; break;
          case 3: x = float(small_int(rng)) * 0.0625f; break;
          case 4: x = x * 1e-41f; break;
          case 5: x = x * 1e37f; break;
          case 6: x = i % 3 == 0 ? -0.0f : 0.0f; break;
          default: x = std::ldexp(x, expo(rng)); break;
        }
        break;
    }
    v[i] = x;
  }
  return v;
}

// Elements a view with these strides spans, from element 0 (offset not included).
inline size_t span_elements(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    last += (shape[d] - 1) * strides[d];
  }
  return size_t(last + 1);
}

// Index of the first differing byte, or -1.
inline int64_t first_mismatch(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return int64_t(i);
  return -1;
}

inline std::string describe_mismatches(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, int max = 8) {
  std::string s;
  int shown = 0;
  size_t count = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    ++count;
    if (shown++ < max) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " [%zu] got 0x%02x want 0x%02x;", i, got[i], want[i]);
      s += buf;
    }
  }
  return std::to_string(count) + " of " + std::to_string(want.size()) + " bytes differ:" + s;
}

}  // namespace mxattn::test
