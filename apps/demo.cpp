// `mxattn demo`: one attention problem, quantized in every named format, against FP64 on the
// unquantized inputs (the format's own error; DESIGN.md §5 lists what to expect).
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "mxattn/format/format.h"
#include "mxattn/reference/attention.h"
#include "options.h"

namespace mxattn::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct DemoOptions {
  int64_t seq = 1024, dim = 128, heads = 2;
  uint64_t seed = 0;
  std::string dist = "normal";
  std::string rule = "rceil";  // for the E8M0 formats; NVFP4 keeps its own rule
};

int run_demo(const DemoOptions& o) {
  const AttentionShape shape{
      .batch = 1, .seq_q = o.seq, .seq_kv = o.seq, .heads_q = o.heads, .heads_kv = o.heads, .head_dim = o.dim};
  const uint64_t seed = o.seed;
  const std::string& dist = o.dist;
  const ScaleRule rule = o.rule == "floor" ? ScaleRule::Floor : ScaleRule::Rceil;
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

}  // namespace

Command demo_command(CLI::App& mxattn) {
  CLI::App* app = mxattn.add_subcommand("demo", "quantize an attention problem in every format; error against FP64");
  auto o = std::make_shared<DemoOptions>();
  add_integer<int64_t>(app, "--seq", o->seq, 1, "N", "sequence length of Q and of K, V");
  add_integer<int64_t>(app, "--dim", o->dim, 1, "D", "head dimension");
  add_integer<int64_t>(app, "--heads", o->heads, 1, "H", "heads of Q and of K, V");
  const CLI::Option* seed = app->add_option("--seed", o->seed, "random seed (default: a random one, printed)")
                                ->check(integer_at_least<uint64_t>(0))
                                ->type_name("S");
  app->add_option("--dist", o->dist, "inputs N(0,1) or U(-1,1)")
      ->check(one_of({"normal", "uniform"}))
      ->type_name("normal|uniform")
      ->capture_default_str();
  app->add_option("--rule", o->rule, "block scale rule of the E8M0 formats (NVFP4 keeps its own)")
      ->check(one_of({"rceil", "floor"}))
      ->type_name("rceil|floor")
      ->capture_default_str();
  return {app, [o, seed] {
            DemoOptions run = *o;
            if (!*seed) run.seed = std::random_device{}();
            return run_demo(run);
          }};
}

}  // namespace mxattn::cli
