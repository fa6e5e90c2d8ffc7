#include "mxattn/explore/npy.h"

#include <bit>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>

#include "mxattn/format/bits.h"

namespace mxattn::explore {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw NpyError(path + ": " + why); }

// The value of `key` in the header dict, up to the next top-level ',' or '}' (a tuple kept whole).
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  size_t at = std::string::npos;
  for (const auto& q : quoted)
    if ((at = header.find(q)) != std::string::npos) {
      at += q.size();
      break;
    }
  if (at == std::string::npos) fail(path, "header has no '" + key + "' entry");
  at = header.find(':', at);
  if (at == std::string::npos) fail(path, "malformed header");
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v = header.substr(at, end - at);
  const auto first = v.find_first_not_of(" \t"), last = v.find_last_not_of(" \t");
  return first == std::string::npos ? "" : v.substr(first, last - first + 1);
}

std::vector<int64_t> parse_shape(const std::string& tuple, const std::string& path) {
  if (tuple.size() < 2 || tuple.front() != '(' || tuple.back() != ')') fail(path, "malformed shape " + tuple);
  std::vector<int64_t> shape;
  std::string num;
  for (size_t i = 1; i < tuple.size(); ++i) {
    const char c = tuple[i];
    if (c >= '0' && c <= '9') {
      num += c;
    } else if (c == ',' || c == ')') {
      if (!num.empty()) shape.push_back(std::stoll(num));
      num.clear();
    } else if (c != ' ' && c != 'L') {
      fail(path, "malformed shape " + tuple);
    }
  }
  return shape;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return bits_float(sign | 0x7f800000u | (m << 13));  // Inf, NaN
  if (e != 0) return bits_float(sign | ((e + 112) << 23) | (m << 13));
  const float v = float(m) * pow2f(-24);  // subnormal: exact in float
  return sign ? -v : v;
}

}  // namespace

int64_t NpyArray::numel() const { return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()); }

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open (missing file or no permission)");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = uint8_t(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    uint8_t b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = b[0] | (uint32_t(b[1]) << 8);
  } else if (major == 2 || major == 3) {
    uint8_t b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = b[0] | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path, "truncated header");

  NpyArray a;
  std::string descr = dict_value(header, "descr", path);
  if (descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"')) descr = descr.substr(1, descr.size() - 2);
  a.dtype = descr;
  if (dict_value(header, "fortran_order", path) != "False")
    fail(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  a.shape = parse_shape(dict_value(header, "shape", path), path);

  static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");
  const bool little = !descr.empty() && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=');
  const std::string type = descr.empty() ? "" : descr.substr(1);
  int width = 0;
  if (little && type == "f2") width = 2;
  if (little && type == "f4") width = 4;
  if (little && type == "f8") width = 8;
  if (width == 0)
    fail(path, "dtype '" + descr +
                   "' is not supported; expected little-endian float16, float32 or float64 ('<f2', '<f4', '<f8')");

  const size_t n = size_t(a.numel());
  std::vector<char> raw(n * size_t(width));
  if (!in.read(raw.data(), std::streamsize(raw.size())))
    fail(path, "file holds fewer bytes than its shape needs (" + std::to_string(raw.size()) + ")");
  a.data.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const char* p = raw.data() + i * size_t(width);
    if (width == 2) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      a.data[i] = half_to_float(h);
    } else if (width == 4) {
      std::memcpy(&a.data[i], p, 4);
    } else {
      double d;
      std::memcpy(&d, p, 8);
      a.data[i] = float(d);
    }
  }
  return a;
}

void write_npy(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  std::string tuple = "(";
  for (size_t i = 0; i < shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(shape[i]);
  tuple += shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + tuple + ", }";
  // Pad with spaces so that magic (6) + version (2) + length (2) + header ends on a 64-byte boundary.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path, "cannot open for writing");
  const uint16_t len = uint16_t(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  const char len_bytes[2] = {char(len & 0xff), char(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), std::streamsize(header.size()));
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  out.write(reinterpret_cast<const char*>(data), std::streamsize(n * 4));
  if (!out) fail(path, "write failed");
}

}  // namespace mxattn::explore
