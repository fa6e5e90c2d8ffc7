// Format names: parse, print, and errors that say why.
#include <gtest/gtest.h>

#include "mxattn/format/format.h"

namespace mxattn {
namespace {

TEST(Format, NamedFormats) {
  EXPECT_EQ(parse_format("mxfp8"), kMxfp8E4M3);
  EXPECT_EQ(parse_format("mxfp8_e4m3"), kMxfp8E4M3);
  EXPECT_EQ(parse_format("MXFP8_E5M2"), kMxfp8E5M2);
  EXPECT_EQ(parse_format("mxfp6_e2m3"), kMxfp6E2M3);
  EXPECT_EQ(parse_format("mxfp6_e3m2"), kMxfp6E3M2);
  EXPECT_EQ(parse_format("mxfp4"), kMxfp4);
  EXPECT_EQ(parse_format("mxint8"), kMxint8);
  EXPECT_EQ(parse_format("nvfp4"), kNvfp4);
  EXPECT_EQ(named_formats().size(), 7u);
}

TEST(Format, CustomFormats) {
  auto f = parse_format("e3m2/k16/ue8m0");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->elem, kE3M2);
  EXPECT_EQ(f->block, 16);
  EXPECT_EQ(f->scale, ScaleType::E8M0);
  EXPECT_EQ(f->rule, ScaleRule::Rceil);
  EXPECT_FALSE(f->tensor_scale);
  EXPECT_DOUBLE_EQ(f->bits_per_element(), 6.5);

  f = parse_format("int4/k64/ue4m3/floor");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->elem, Element::integer(4));
  EXPECT_EQ(f->rule, ScaleRule::Floor);
  EXPECT_EQ(f->scale, ScaleType::UE4M3);

  // The same format spelled as a custom one prints by its name.
  EXPECT_EQ(format_name(*parse_format("e2m1/k32/ue8m0")), "mxfp4");
  EXPECT_EQ(format_name(*parse_format("e2m1/k16/ue4m3/ts")), "nvfp4");
  EXPECT_EQ(format_name(*parse_format("e4m3/k32/ue8m0/floor")), "mxfp8/floor");
  EXPECT_EQ(parse_format("e4m3/k32/ue8m0")->elem.specials, Specials::NanOnly);  // OCP E4M3, not all-finite
}

TEST(Format, PrintParseRoundTrip) {
  for (const char* name : {"mxfp8", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4",
                           "mxfp4/floor", "e3m2/k16/ue8m0", "e3m3/k8/ue4m3", "int4/k32/ue8m0/floor",
                           "e2m3/k16/ue4m3/ts", "e5m2/k128/ue4m3/floor", "e1m2/k64/ue8m0"}) {
    auto f = parse_format(name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(format_name(*f), name);
    EXPECT_EQ(parse_format(format_name(*f)), f);
  }
}

TEST(Format, ErrorsSayWhy) {
  const std::pair<const char*, const char*> bad[] = {
      {"mxfp9", "unknown format 'mxfp9'"},
      {"nvfp8", "unknown format"},
      {"e9m2/k32/ue8m0", "1 + e + m <= 8"},
      {"e4m4/k32/ue8m0", "1 + e + m <= 8"},
      {"int9/k32/ue8m0", "2 <= n <= 8"},
      {"e2m1/k12/ue8m0", "block 'k12'"},
      {"e2m1/32/ue8m0", "block '32'"},
      {"e2m1/k32/e5m2", "scale 'e5m2'"},
      {"e2m1", "ELEMENT/kBLOCK/SCALE"},
      {"fp8", "EeMm"},
      {"mxfp4/ts", "needs ue4m3"},
      {"nvfp4/floor", "NVFP4 rule is fixed"},
      {"e2m1/k16/ue4m3/bogus", "unknown option 'bogus'"},
      {"", "EeMm"},
  };
  for (auto [name, reason] : bad) {
    std::string why;
    EXPECT_FALSE(parse_format(name, &why)) << name;
    EXPECT_NE(why.find(reason), std::string::npos) << name << ": " << why;
  }
}

}  // namespace
}  // namespace mxattn
