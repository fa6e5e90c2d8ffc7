// `mxattn formats`: what each named format stores and what it can represent.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "mxattn/format/format.h"
#include "options.h"

namespace mxattn::cli {
namespace {

int run_formats(const std::vector<std::string>& extra) {
  std::vector<Format> formats;
  for (const auto& nf : named_formats()) formats.push_back(nf.format);
  for (const auto& name : extra) {
    std::string why;
    const auto f = parse_format(name, &why);
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

}  // namespace

Command formats_command(CLI::App& mxattn) {
  CLI::App* app = mxattn.add_subcommand("formats", "table of the block formats");
  auto extra = std::make_shared<std::vector<std::string>>();
  app->add_option("FORMAT", *extra,
                  "extra formats to list after the named ones, e.g. e3m2/k16/ue8m0,\n"
                  "int4/k32/ue8m0/floor, e2m3/k16/ue4m3/ts")
      ->type_name("");  // checked by run_formats, so that an unknown option is reported before its value
  return {app, [extra] { return run_formats(*extra); }};
}

}  // namespace mxattn::cli
