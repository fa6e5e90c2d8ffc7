// Argument parsing shared by the GPU binding files (bindings_gpu.cu, bindings_ops.cu): names in, library
// values out, and a Python ValueError that names the argument where a name is not known.
#pragma once
#include <nanobind/nanobind.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "mxattn/api/attention.h"
#include "mxattn/api/quantize.h"
#include "mxattn/format/format.h"

namespace mxattn_bindings {

namespace nb = nanobind;

inline void check(const mxattn::Status& s) {
  if (!s.ok) throw nb::value_error(s.message.c_str());
}

// A format name, parsed once a spelling (the ops name their formats on every call).
inline const mxattn::Format& format_arg(const std::string& name) {
  static std::mutex mutex;
  static std::unordered_map<std::string, mxattn::Format> parsed;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = parsed.find(name); it != parsed.end()) return it->second;
  std::string why;
  const auto f = mxattn::parse_format(name, &why);
  if (!f) throw nb::value_error(("format: " + why).c_str());
  return parsed.emplace(name, *f).first->second;
}

inline mxattn::ScaleLayout layout_arg(const std::string& name) {
  if (name == "rowmajor" || name == "row_major") return mxattn::ScaleLayout::RowMajor;
  if (name == "tiled" || name == "tiled128x4") return mxattn::ScaleLayout::Tiled128x4;
  throw nb::value_error(("layout: '" + name + "' must be 'rowmajor' or 'tiled'").c_str());
}

inline mxattn::DType dtype_arg(const std::string& name) {
  const auto t = mxattn::parse_dtype(name);
  if (!t) throw nb::value_error(("dtype: '" + name + "' must be f32, f16 or bf16").c_str());
  return *t;
}

inline mxattn::PrefillKernel kernel_arg(const std::string& name) {
  for (auto k : {mxattn::PrefillKernel::Auto, mxattn::PrefillKernel::Portable, mxattn::PrefillKernel::HopperFp8,
                 mxattn::PrefillKernel::HopperExact, mxattn::PrefillKernel::BlockScaled,
                 mxattn::PrefillKernel::BlockScaledEmulated})
    if (name == mxattn::prefill_kernel_name(k)) return k;
  throw nb::value_error(
      ("kernel: '" + name + "' must be auto, portable, hopper, hopper-exact, block-scaled or block-scaled-emulated").c_str());
}

}  // namespace mxattn_bindings
