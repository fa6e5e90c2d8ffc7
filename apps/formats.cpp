// `mxattn formats`: what each named format stores and what it can represent.
#include <cmath>
#include <cstdio>
#include <string>

#include "commands.h"
#include "mxattn/format/format.h"

namespace mxattn::cli {

int formats_main(int argc, char** argv) {
  std::vector<Format> formats;
  for (const auto& nf : named_formats()) formats.push_back(nf.format);
  for (int i = 1; i < argc; ++i) {  // extra formats by name, e.g. `mxattn formats e3m2/k16/ue8m0`
    std::string why;
    auto f = parse_format(argv[i], &why);
    if (!f) {
      std::fprintf(stderr, "mxattn formats: %s\n", why.c_str());
      return 2;
    }
    formats.push_back(*f);
  }
  std::printf("%-16s %-7s %4s %5s %-6s %-6s %10s %13s %9s\n", "format", "element", "bits", "block", "scale",
              "rule", "max", "min_subnormal", "bits/elem");
  for (const Format& f : formats) {
    std::printf("%-16s %-7s %4d %5d %-6s %-6s %10g %13g %9.3f%s\n", format_name(f).c_str(),
                element_name(f.elem).c_str(), f.elem.bits, f.block, scale_type_name(f.scale),
                scale_rule_name(f.rule), double(f.elem.max_value()), std::ldexp(1.0, f.elem.min_subnormal_exp()),
                f.bits_per_element(), f.tensor_scale ? "  + FP32 tensor scale" : "");
  }
  return 0;
}

}  // namespace mxattn::cli
