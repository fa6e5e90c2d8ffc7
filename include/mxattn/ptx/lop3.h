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

}  // namespace mxattn::ptx
