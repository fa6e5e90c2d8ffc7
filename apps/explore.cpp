// `mxattn explore`: placeholder until the format explorer lands.
#include <cstdio>

#include "commands.h"

namespace mxattn::cli {

int explore_main(int, char**) {
  std::fprintf(stderr, "mxattn explore: not implemented yet\n");
  return 2;
}

}  // namespace mxattn::cli
