// mxattn: the command-line tool. Each command lives in its own file (commands.h).
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"

namespace {

void usage() {
  std::printf(
      "usage: mxattn COMMAND [options]\n"
      "  formats              table of the block formats\n"
      "  demo [--seq N] [--dim D] [--seed S]\n"
      "                       quantize an attention problem in every format; error against FP64\n"
      "  explore [options]    bits per element against accuracy for many formats (explore --help)\n"
#if defined(MXATTN_WITH_CUDA)
      "  bench quantize|attention [options]\n"
      "                       GPU benchmarks (bench --help)\n"
#endif
  );
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "formats") return mxattn::cli::formats_main(argc - 1, argv + 1);
  if (cmd == "demo") return mxattn::cli::demo_main(argc - 1, argv + 1);
  if (cmd == "explore") return mxattn::cli::explore_main(argc - 1, argv + 1);
#if defined(MXATTN_WITH_CUDA)
  if (cmd == "bench") return mxattn::cli::bench_main(argc - 1, argv + 1);
#endif
  std::fprintf(stderr, "mxattn: unknown command '%s'\n", cmd.c_str());
  usage();
  return 2;
}
