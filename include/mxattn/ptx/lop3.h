// Three-input logic (PTX ISA §9.7.8.6, lop3).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// lop3.b32 d, a, b, c, 0xE4;   sm_50+
// Bits of a where c is set, of b elsewhere: (a & c) | (b & ~c) in one instruction (the compiler, given the
// expression over shifted operands, splits it into two).
__device__ __forceinline__ uint32_t lop3_select(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// and.b32 d, a, b;
// a & b, opaque to the compiler's rewriting: (a & m) << k stays a shift of the masked value instead of becoming
// (a << k) & (m << k), which costs a second mask where a & m is needed as well.
__device__ __forceinline__ uint32_t and_b32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("and.b32 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

}  // namespace mxattn::ptx
