// `mxattn demo`: one attention problem, quantized in every named format, against FP64 on the
// unquantized inputs (the format's own error; DESIGN.md §5 lists what to expect).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "mxattn/format/format.h"
#include "mxattn/reference/attention.h"

namespace mxattn::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int demo_main(int argc, char** argv) {
  AttentionShape shape{.batch = 1, .seq_q = 1024, .seq_kv = 1024, .heads_q = 2, .heads_kv = 2, .head_dim = 128};
  uint64_t seed = std::random_device{}();
  std::string dist = "normal";
  ScaleRule rule = ScaleRule::Rceil;  // for the E8M0 formats; NVFP4 keeps its own rule
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--seq" && has_value) {
      shape.seq_q = shape.seq_kv = std::atoll(argv[++i]);
    } else if (a == "--dim" && has_value) {
      shape.head_dim = std::atoll(argv[++i]);
    } else if (a == "--heads" && has_value) {
      shape.heads_q = shape.heads_kv = std::atoll(argv[++i]);
    } else if (a == "--seed" && has_value) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--dist" && has_value && (std::string(argv[i + 1]) == "normal" || std::string(argv[i + 1]) == "uniform")) {
      dist = argv[++i];
    } else if (a == "--rule" && has_value && (std::string(argv[i + 1]) == "rceil" || std::string(argv[i + 1]) == "floor")) {
      rule = std::string(argv[++i]) == "floor" ? ScaleRule::Floor : ScaleRule::Rceil;
    } else {
      std::fprintf(stderr,
                   "mxattn demo: bad option '%s' (--seq N, --dim D, --heads H, --seed S, --dist normal|uniform, "
                   "--rule rceil|floor)\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    check_attention_shape(shape);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mxattn demo: %s\n", e.what());
    return 2;
  }

  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> q(size_t(shape.q_elems())), k(size_t(shape.kv_elems())), v(size_t(shape.kv_elems()));
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = dist == "normal" ? normal(rng) : uniform(rng);
  std::printf("attention B=%lld S=%lld H=%lld D=%lld, inputs %s, seed %llu, rule %s; Q, K along D and V along S "
              "quantized\n",
              (long long)shape.batch, (long long)shape.seq_q, (long long)shape.heads_q, (long long)shape.head_dim,
              dist == "normal" ? "N(0,1)" : "U(-1,1)", (unsigned long long)seed, scale_rule_name(rule));

  auto t0 = std::chrono::steady_clock::now();
  const AttentionOptions opt{};
  const AttentionResult ref = attention_fp64(std::vector<double>(q.begin(), q.end()).data(),
                                             std::vector<double>(k.begin(), k.end()).data(),
                                             std::vector<double>(v.begin(), v.end()).data(), shape, opt);
  std::printf("FP64 reference: %.2f s\n\n", seconds_since(t0));

  std::printf("%-16s %9s %9s %10s %11s %8s\n", "format", "bits/elem", "cosine", "rel_l2", "max_abs", "time_s");
  std::vector<DemoResult> results;
  for (const auto& nf : named_formats()) {
    t0 = std::chrono::steady_clock::now();
    Format fmt = nf.format;
    if (fmt.rule != ScaleRule::Nvfp4) fmt.rule = rule;
    const MxAttentionFormats f{fmt, fmt, fmt, VBlockAxis::Seq};
    const AttentionResult got = mx_attention(q.data(), k.data(), v.data(), shape, f, opt);
    const ErrorStats e = compare(got.out, ref.out);
    results.push_back({fmt, got});
    std::printf("%-16s %9.3f %9.5f %10.3e %11.3e %8.2f\n", format_name(fmt).c_str(), fmt.bits_per_element(), e.cosine, e.rel_l2,
                e.max_abs, seconds_since(t0));
  }
#if defined(MXATTN_WITH_CUDA)
  if (gpu_present()) {
    demo_gpu(shape, q, k, v, results, ref);
    return 0;
  }
  std::printf("\nGPU: none found; the table above is the CPU reference.\n");
#else
  std::printf("\nGPU: this build has no CUDA kernels (no nvcc found); the table above is the CPU reference.\n");
#endif
  return 0;
}

}  // namespace mxattn::cli
