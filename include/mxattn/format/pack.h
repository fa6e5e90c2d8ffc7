// Packing of element codes into bytes: a little-endian bit stream, element i in bits
// [i*n, i*n + n). For n = 4 that puts the even element in the low nibble; for n = 6 it packs
// four elements into three bytes (DESIGN.md §2). 8-bit codes are one per byte.
#pragma once
#include <cstddef>
#include <cstdint>

#include "mxattn/format/bits.h"

namespace mxattn {

// Bytes that hold `count` codes of `bits` bits.
MXATTN_HD constexpr size_t packed_bytes(size_t count, int bits) { return (count * size_t(bits) + 7) / 8; }

MXATTN_HD void pack_code(uint8_t* dst, size_t i, int bits, uint32_t code) {
  const size_t bit = i * size_t(bits);
  const uint32_t mask = (1u << bits) - 1;
  // A code of at most 8 bits spans at most two bytes.
  uint32_t window = dst[bit / 8] | ((bit % 8 + bits > 8) ? uint32_t(dst[bit / 8 + 1]) << 8 : 0u);
  window = (window & ~(mask << (bit % 8))) | ((code & mask) << (bit % 8));
  dst[bit / 8] = uint8_t(window);
  if (bit % 8 + bits > 8) dst[bit / 8 + 1] = uint8_t(window >> 8);
}

MXATTN_HD uint32_t unpack_code(const uint8_t* src, size_t i, int bits) {
  const size_t bit = i * size_t(bits);
  uint32_t window = src[bit / 8];
  if (bit % 8 + bits > 8) window |= uint32_t(src[bit / 8 + 1]) << 8;
  return (window >> (bit % 8)) & ((1u << bits) - 1);
}

// Blackwell's kind::mxf8f6f4 reads an E2M1 value from an 8-bit container, in bits 5..2 (seeds/000 §5):
// 1.0 (0b0010) is the byte 0x08. A conversion, not a storage format.
MXATTN_HD constexpr uint8_t fp4_to_container8(uint32_t code) { return uint8_t((code & 0xF) << 2); }
MXATTN_HD constexpr uint32_t fp4_from_container8(uint8_t byte) { return (byte >> 2) & 0xF; }

}  // namespace mxattn
