// Byte permute (PTX ISA §9.7.8.7, prmt).
#pragma once
#include <cstdint>

namespace mxattn::ptx {

// prmt.b32 d, a, b, c;   sm_20+
// Byte i of d is byte (c >> 4i) & 7 of the 8-byte value {b, a} (a holds bytes 0-3); where bit 3 of
// that selector nibble is set, the byte is replaced by 0xFF or 0x00 after the sign (bit 7) of the
// selected byte. With 8-entry tables in a, b this is a 3-bit lookup, four lanes of it at a time.
__device__ __forceinline__ uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

}  // namespace mxattn::ptx
