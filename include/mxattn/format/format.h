// A block format: element, block size, scale type, scale rule, tensor scale; and its name.
//
// Names: mxfp8 (= mxfp8_e4m3), mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4, mxint8, nvfp4, and custom
// ones ELEMENT/kBLOCK/SCALE[/RULE][/ts] such as e3m2/k16/ue8m0, int4/k32/ue8m0/floor or
// e2m3/k16/ue4m3/ts. A named MX format takes a rule too: mxfp4/floor.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mxattn/format/element.h"
#include "mxattn/format/scale.h"

namespace mxattn {

struct Format {
  Element elem;
  int block = 32;
  ScaleType scale = ScaleType::E8M0;
  ScaleRule rule = ScaleRule::Rceil;
  bool tensor_scale = false;  // an FP32 S_enc per tensor (the NVFP4 rule)

  constexpr bool operator==(const Format&) const = default;

  MXATTN_HD constexpr int scale_bits() const { return 8; }
  // Storage per element, block scales included (the FP32 tensor scale is not counted).
  MXATTN_HD constexpr double bits_per_element() const { return elem.bits + double(scale_bits()) / block; }
  MXATTN_HD BlockScale block_scale(float amax, bool nonfinite, float s_enc = 1.0f) const {
    return choose_block_scale(amax, nonfinite, elem, scale, rule, s_enc);
  }
};

inline constexpr Format kMxfp8E4M3{kE4M3, 32, ScaleType::E8M0, ScaleRule::Rceil, false};
inline constexpr Format kMxfp8E5M2{kE5M2, 32, ScaleType::E8M0, ScaleRule::Rceil, false};
inline constexpr Format kMxfp6E2M3{kE2M3, 32, ScaleType::E8M0, ScaleRule::Rceil, false};
inline constexpr Format kMxfp6E3M2{kE3M2, 32, ScaleType::E8M0, ScaleRule::Rceil, false};
inline constexpr Format kMxfp4{kE2M1, 32, ScaleType::E8M0, ScaleRule::Rceil, false};
inline constexpr Format kMxint8{kInt8, 32, ScaleType::E8M0, ScaleRule::Rceil, false};
inline constexpr Format kNvfp4{kE2M1, 16, ScaleType::UE4M3, ScaleRule::Nvfp4, true};

struct NamedFormat {
  const char* name;
  Format format;
};
// Every named format, in the order tables list them.
const std::vector<NamedFormat>& named_formats();

// nullopt with `why` set when the name is unknown or inconsistent.
std::optional<Format> parse_format(std::string_view name, std::string* why = nullptr);
std::string format_name(const Format& f);
std::string element_name(const Element& e);  // e2m1, e4m3, int8, ...
std::optional<Element> parse_element(std::string_view name, std::string* why = nullptr);
const char* scale_type_name(ScaleType t);
const char* scale_rule_name(ScaleRule r);

}  // namespace mxattn
