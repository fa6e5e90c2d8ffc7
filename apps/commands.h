// One function per `mxattn` subcommand; apps/mxattn.cpp dispatches to them.
#pragma once

namespace mxattn::cli {

int formats_main(int argc, char** argv);  // apps/formats.cpp
int demo_main(int argc, char** argv);     // apps/demo.cpp
int explore_main(int argc, char** argv);  // apps/explore.cpp

#if defined(MXATTN_WITH_CUDA)
int bench_main(int argc, char** argv);            // apps/bench.cu: `mxattn bench quantize|attention`
int bench_attention_main(int argc, char** argv);  // apps/bench_attention.cu: `mxattn bench attention`
#endif

}  // namespace mxattn::cli
