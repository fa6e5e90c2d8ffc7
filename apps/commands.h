// One function per `mxattn` subcommand; apps/mxattn.cpp dispatches to them.
#pragma once
#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mxattn/format/format.h"
#include "mxattn/reference/attention.h"

namespace CLI {
class App;
}

namespace mxattn::cli {

// A subcommand: its options, added to the `mxattn` app (apps/options.h), and what runs it once the
// command line is parsed, returning the exit status.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};
Command formats_command(CLI::App& mxattn);  // apps/formats.cpp
Command demo_command(CLI::App& mxattn);     // apps/demo.cpp
Command explore_command(CLI::App& mxattn);  // apps/explore.cpp
Command bench_command(CLI::App& mxattn);    // apps/bench_options.cpp: `mxattn bench quantize|attention`
Command probe_command(CLI::App& mxattn);    // apps/probe.cpp

// One format's CPU result in the demo: FP64 attention on its dequantized inputs.
struct DemoResult {
  Format format;
  AttentionResult result;
};

// `mxattn bench quantize`: parsed in apps/bench_options.cpp, run by apps/bench.cu.
struct QuantizeBenchOptions {
  std::vector<double> sizes_mib = {64, 256, 1024, 2048};
  std::vector<std::string> formats;  // only these (named or custom); empty: the full sweep
  int runs = 30, warmup = 5;
  int calls = 1;  // back-to-back calls a timing spans (1: each timing holds the host's per-call time too)
  std::string json;
  bool quick = false;
  std::string rows_kernel = "auto";  // QuantizeOptions::rows_kernel: auto, direct, staged
};

// `mxattn bench attention`: parsed in apps/bench_options.cpp, run by apps/bench_attention.cu.
// A prefill shape H_q/H_kv/D for bench attention: heads that divide, D 64, 128 or 256. Parsed into `out`.
inline bool parse_prefill_shape(const std::string& text, int (&out)[3]) {
  const char* p = text.data();
  const char* end = p + text.size();
  for (int i = 0; i < 3; ++i) {
    const auto [stop, ec] = std::from_chars(p, end, out[i]);
    if (ec != std::errc() || out[i] <= 0 || (i < 2 ? stop == end || *stop != '/' : stop != end)) return false;
    p = stop + 1;
  }
  return out[0] % out[1] == 0 && (out[2] == 64 || out[2] == 128 || out[2] == 256);
}

// The decode benchmark's serving batch: `batch` sequences of lengths spread over [1024, 65536) by a fixed
// integer hash (bench/attention_sdpa.py serving_lens computes the same ones), multiples of 16.
inline std::vector<int> serving_lens(int batch) {
  std::vector<int> lens;
  for (int i = 0; i < batch; ++i) {
    const uint64_t h = (uint64_t(i + 1) * 2654435761u) & 0xFFFFFFFFu;
    lens.push_back(int(1024 + ((h * 64512) >> 32)) / 16 * 16);
  }
  return lens;
}

struct AttentionBenchOptions {
  std::vector<int> decode_lens = {4096, 32768, 131072};
  std::vector<int> prefill_lens = {1024, 4096, 16384};
  // Decode formats: one for K and V, or K's:V's.
  std::vector<std::string> decode_formats = {"mxfp4", "mxfp8", "nvfp4", "mxfp6_e2m3", "mxfp8:mxfp4", "mxfp8:nvfp4"};
  std::vector<int> decode_dims = {64, 256};  // more head dims, the decode formats at each decode length
  int serving_batch = 32;                   // the serving batch's sequences (0: none)
  std::vector<std::string> prefill_formats = {"mxfp8", "mxfp4", "mxfp6_e2m3", "nvfp4"};
  // More prefill shapes, H_q/H_kv/D: the Hopper kernel and the first prefill format only.
  std::vector<std::string> prefill_shapes = {"16/16/64", "16/16/256", "32/4/128"};
  // The prefill kernels (prefill_kernel_name) and masks timed.
  std::vector<std::string> prefill_kernels = {"portable", "hopper", "hopper-exact"};
  std::vector<std::string> prefill_causal = {"no", "yes"};
  // Q types timed: MX (every format) and dense BF16 (the first format's K and V, the Hopper kernel).
  std::vector<std::string> prefill_q = {"mx", "bf16"};
  bool decode_only = false, prefill_only = false;
  bool prefill_lse = false;  // prefill writes the LSE (the cuDNN FP8 baseline runs without: inference, no stats)
  int runs = 30, warmup = 5;
  int decode_calls = 8;  // decode calls per timed event (bench/attention_sdpa.py --calls: the same)
  int page_size = 64, num_splits = 0;  // num_splits 0: the launcher's choice
  std::string json;
};

#if defined(MXATTN_WITH_CUDA)
bool gpu_present();                                       // apps/demo_gpu.cu
void demo_gpu(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
              const std::vector<float>& v, const std::vector<DemoResult>& cpu, const AttentionResult& ref);
int bench_quantize(const QuantizeBenchOptions& opt);    // apps/bench.cu
int bench_attention(const AttentionBenchOptions& opt);  // apps/bench_attention.cu
#endif

}  // namespace mxattn::cli
