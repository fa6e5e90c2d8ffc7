// The result of every host launcher: ok, or a message that names the bad argument.
#pragma once
#include <string>
#include <utility>

namespace mxattn {

struct Status {
  bool ok = true;
  std::string message;  // empty when ok; otherwise "<argument>: <what is wrong>"

  static Status success() { return {}; }
  static Status error(std::string msg) { return {false, std::move(msg)}; }

  explicit operator bool() const { return ok; }
};

}  // namespace mxattn
