#include "mxattn/format/format.h"

#include <charconv>
#include <cstdio>

namespace mxattn {
namespace {

bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace

const std::vector<NamedFormat>& named_formats() {
  static const std::vector<NamedFormat> all = {
      {"mxfp8", kMxfp8E4M3}, {"mxfp8_e5m2", kMxfp8E5M2}, {"mxfp6_e2m3", kMxfp6E2M3},
      {"mxfp6_e3m2", kMxfp6E3M2}, {"mxfp4", kMxfp4}, {"mxint8", kMxint8}, {"nvfp4", kNvfp4},
  };
  return all;
}

const char* scale_type_name(ScaleType t) { return t == ScaleType::E8M0 ? "ue8m0" : "ue4m3"; }

const char* scale_rule_name(ScaleRule r) {
  switch (r) {
    case ScaleRule::Rceil: return "rceil";
    case ScaleRule::Floor: return "floor";
    default: return "nvfp4";
  }
}

std::string element_name(const Element& e) {
  char buf[16];
  if (e.is_int()) std::snprintf(buf, sizeof buf, "int%d", int(e.bits));
  else std::snprintf(buf, sizeof buf, "e%dm%d", int(e.exp_bits), int(e.man_bits));
  return buf;
}

std::optional<Element> parse_element(std::string_view name, std::string* why) {
  const std::string s = lower(name);
  if (s.rfind("int", 0) == 0) {
    auto n = parse_int(std::string_view(s).substr(3));
    if (!n) return fail(why, "element '" + s + "': expected INTn, e.g. int8"), std::nullopt;
    if (*n < 2 || *n > 8) return fail(why, "element '" + s + "': INTn needs 2 <= n <= 8"), std::nullopt;
    return Element::integer(*n);
  }
  const size_t m = s.find('m');
  if (s.size() < 4 || s[0] != 'e' || m == std::string::npos)
    return fail(why, "element '" + s + "': expected EeMm (e.g. e2m1) or INTn (e.g. int8)"), std::nullopt;
  auto e = parse_int(std::string_view(s).substr(1, m - 1));
  auto mb = parse_int(std::string_view(s).substr(m + 1));
  if (!e || !mb) return fail(why, "element '" + s + "': expected EeMm (e.g. e2m1) or INTn (e.g. int8)"), std::nullopt;
  if (*e < 1 || *mb < 0 || 1 + *e + *mb > 8 || *mb > 7)
    return fail(why, "element '" + s + "': a minifloat needs e >= 1 and 1 + e + m <= 8 bits"), std::nullopt;
  // E4M3 and E5M2 are the OCP FP8 formats with their NaN/Inf codes; every other EeMm is all-finite.
  if (*e == 4 && *mb == 3) return kE4M3;
  if (*e == 5 && *mb == 2) return kE5M2;
  return Element::minifloat(*e, *mb);
}

std::optional<Format> parse_format(std::string_view name, std::string* why) {
  const std::string full = lower(name);
  auto parts = split(full, '/');
  std::optional<Format> f;
  size_t next = 1;
  for (const auto& nf : named_formats())
    if (parts[0] == nf.name) f = nf.format;
  if (parts[0] == "mxfp8_e4m3") f = kMxfp8E4M3;
  if (!f) {
    if (parts[0].rfind("mx", 0) == 0 || parts[0].rfind("nv", 0) == 0) {
      std::string known;
      for (const auto& nf : named_formats()) known += std::string(known.empty() ? "" : ", ") + nf.name;
      return fail(why, "unknown format '" + std::string(parts[0]) + "' (named formats: " + known +
                           "; custom: ELEMENT/kBLOCK/SCALE, e.g. e3m2/k16/ue8m0)"),
             std::nullopt;
    }
    auto elem = parse_element(parts[0], why);
    if (!elem) return std::nullopt;
    if (parts.size() < 3)
      return fail(why, "format '" + full + "': custom formats are ELEMENT/kBLOCK/SCALE, e.g. e3m2/k16/ue8m0"),
             std::nullopt;
    Format c{*elem, 32, ScaleType::E8M0, ScaleRule::Rceil, false};
    auto k = parts[1].size() > 1 && parts[1][0] == 'k' ? parse_int(parts[1].substr(1)) : std::nullopt;
    if (!k || (*k != 8 && *k != 16 && *k != 32 && *k != 64 && *k != 128))
      return fail(why, "format '" + full + "': block '" + std::string(parts[1]) +
                           "' must be k8, k16, k32, k64 or k128"),
             std::nullopt;
    c.block = *k;
    if (parts[2] == "ue8m0" || parts[2] == "e8m0") {
      c.scale = ScaleType::E8M0;
    } else if (parts[2] == "ue4m3") {
      c.scale = ScaleType::UE4M3;
    } else {
      return fail(why, "format '" + full + "': scale '" + std::string(parts[2]) + "' must be ue8m0 or ue4m3"),
             std::nullopt;
    }
    f = c;
    next = 3;
  }
  for (; next < parts.size(); ++next) {
    const std::string_view opt = parts[next];
    if (f->rule == ScaleRule::Nvfp4)
      return fail(why, "format '" + full + "': the NVFP4 rule is fixed; '" + std::string(opt) + "' does not apply"),
             std::nullopt;
    if (opt == "rceil") {
      f->rule = ScaleRule::Rceil;
    } else if (opt == "floor") {
      f->rule = ScaleRule::Floor;
    } else if (opt == "ts") {
      if (f->scale != ScaleType::UE4M3)
        return fail(why, "format '" + full + "': a tensor scale (ts) needs ue4m3 block scales"), std::nullopt;
      f->tensor_scale = true;
      f->rule = ScaleRule::Nvfp4;
    } else {
      return fail(why, "format '" + full + "': unknown option '" + std::string(opt) + "' (rceil, floor or ts)"),
             std::nullopt;
    }
  }
  return f;
}

std::string format_name(const Format& f) {
  for (const auto& nf : named_formats()) {
    Format base = nf.format;
    if (f == base) return nf.name;
    base.rule = f.rule;
    if (f == base && f.rule == ScaleRule::Floor) return std::string(nf.name) + "/floor";
  }
  std::string s = element_name(f.elem) + "/k" + std::to_string(f.block) + "/" + scale_type_name(f.scale);
  if (f.tensor_scale) return s + "/ts";
  if (f.rule == ScaleRule::Floor) s += "/floor";
  return s;
}

}  // namespace mxattn
