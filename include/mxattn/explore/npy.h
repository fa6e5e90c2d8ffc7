// A small reader (and a float32 writer, for tests and examples) of NumPy .npy files.
//
// Accepted: format versions 1.0, 2.0 and 3.0; dtypes float16, float32, float64, little-endian
// ('<f2', '<f4', '<f8'; '|' or '=' byte order on a little-endian host too); C order. Everything else
// (big-endian, Fortran order, integers, bfloat16 stored as void, object arrays) is refused with a
// message naming the file and what it holds.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxattn::explore {

struct NpyArray {
  std::vector<int64_t> shape;
  std::string dtype;        // as the header spells it, e.g. "<f4"
  std::vector<float> data;  // converted to float32, C order

  int64_t numel() const;
};

// Throws NpyError ("FILE: why") for a missing or unreadable file, a malformed header, or an
// unsupported dtype or order.
struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

NpyArray read_npy(const std::string& path);

// Writes float32 '<f4', C order, version 1.0. Throws NpyError when the file cannot be written.
void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data);

}  // namespace mxattn::explore
