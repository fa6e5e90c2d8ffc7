// How the commands read their options: CLI11 (help, unknown options, missing values, `--opt=value`)
// plus the checks below. Only the .cpp commands include this; the .cu files get parsed structs.
//
// CLI11 2.1 converts some bad numbers silently (`--seed -1` into an unsigned option wraps to 2^64 - 1,
// an integer past its type's range saturates), so every number is checked here first, whole, with
// std::from_chars: the error names the option (CLI11 adds it) and the value.
#pragma once
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mxattn/format/format.h"

namespace mxattn::cli {

// An integer of type T, written out in full, at least `min`.
template <typename T>
CLI::Validator integer_at_least(T min) {
  const std::string what = min == 1   ? "a positive integer"
                           : min == 0 ? "a non-negative integer"
                                      : "an integer >= " + std::to_string(min);
  return CLI::Validator(
      [min, what](std::string& text) -> std::string {
        T v{};
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (ec == std::errc::result_out_of_range)
          return "'" + text + "' is out of range (at most " + std::to_string(std::numeric_limits<T>::max()) + ")";
        if (ec != std::errc() || stop != end || v < min) return "expected " + what + ", got '" + text + "'";
        return "";
      },
      "");
}

// An integer option at least `min`, its default shown: `--seq N=1024`.
template <typename T>
CLI::Option* add_integer(CLI::App* app, const std::string& name, T& value, T min, const std::string& type,
                         const std::string& help) {
  return app->add_option(name, value, help)->check(integer_at_least(min))->type_name(type)->capture_default_str();
}

// A finite number > 0 (sizes in MiB).
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || stop != end || !std::isfinite(v) || !(v > 0))
          return "expected a positive number, got '" + text + "'";
        return "";
      },
      "");
}

// A name parse_format accepts; otherwise its reason.
// A decode format: one for K and V, or K's:V's.
inline CLI::Validator known_decode_format() {
  return CLI::Validator(
      [](std::string& text) {
        std::string why;
        const size_t colon = text.find(':');
        for (const std::string& f : {text.substr(0, colon), colon == std::string::npos ? text : text.substr(colon + 1)})
          if (!parse_format(f, &why)) return why;
        return std::string();
      },
      "");
}

inline CLI::Validator known_format() {
  return CLI::Validator(
      [](std::string& text) {
        std::string why;
        return parse_format(text, &why) ? std::string() : why;
      },
      "");
}

// A prefill shape H_q/H_kv/D (commands.h parse_prefill_shape).
inline CLI::Validator prefill_shape() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int v[3];
        return parse_prefill_shape(text, v) ? ""
                                            : "expected H_q/H_kv/D (H_kv dividing H_q, D 64, 128 or 256), got '" +
                                                  text + "'";
      },
      "");
}

// One of a fixed set of words; the help shows them through the option's type name.
inline CLI::Validator one_of(std::vector<std::string> words) {
  return CLI::IsMember(std::move(words)).description("");
}

// A list option: one comma-separated value per occurrence (`--sizes 64,256`), so that a list never
// takes the words after it.
template <typename T>
CLI::Option* add_list(CLI::App* app, const std::string& name, std::vector<T>& values, const std::string& help) {
  return app->add_option(name, values, help)->delimiter(',')->allow_extra_args(false)->capture_default_str();
}

}  // namespace mxattn::cli
