// One function per `mxattn` subcommand; apps/mxattn.cpp dispatches to them.
#pragma once
#include <vector>

#include "mxattn/format/format.h"
#include "mxattn/reference/attention.h"

namespace mxattn::cli {

int formats_main(int argc, char** argv);  // apps/formats.cpp
int demo_main(int argc, char** argv);     // apps/demo.cpp
int explore_main(int argc, char** argv);  // apps/explore.cpp

// One format's CPU result in the demo: FP64 attention on its dequantized inputs.
struct DemoResult {
  Format format;
  AttentionResult result;
};

#if defined(MXATTN_WITH_CUDA)
bool gpu_present();                                       // apps/demo_gpu.cu
void demo_gpu(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
              const std::vector<float>& v, const std::vector<DemoResult>& cpu, const AttentionResult& ref);
int bench_main(int argc, char** argv);            // apps/bench.cu: `mxattn bench quantize|attention`
int bench_attention_main(int argc, char** argv);  // apps/bench_attention.cu: `mxattn bench attention`
#endif

}  // namespace mxattn::cli
