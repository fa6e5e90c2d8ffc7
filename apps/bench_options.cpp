// `mxattn bench quantize|attention`: the GPU benchmarks' options. They are read here, in C++ built with
// or without CUDA, so that `mxattn bench ... --help` works everywhere; apps/bench.cu and
// apps/bench_attention.cu run the benchmarks.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "options.h"

namespace mxattn::cli {
namespace {

void add_quantize_options(CLI::App* app, QuantizeBenchOptions& o) {
  add_list(app, "--sizes", o.sizes_mib, "input sizes in MiB, comma-separated")
      ->check(positive_number())
      ->type_name("MIB");
  add_integer(app, "--runs", o.runs, 1, "N", "timed runs per configuration; the median is reported");
  add_integer(app, "--warmup", o.warmup, 0, "N", "untimed runs before them");
  add_integer(app, "--calls", o.calls, 1, "N",
              "back-to-back calls a timed run spans, the copy's too (1: each run holds the host's per-call time)");
  app->add_option("--json", o.json, "also write the results to PATH as JSON")->type_name("PATH");
  app->add_flag("--quick", o.quick, "only the BF16 sweep over --sizes (no other dtypes, layouts, V, dequantize)");
  add_list(app, "--formats", o.formats,
           "only these formats (named or custom, comma-separated): BF16 with tiled scales at every --sizes and, "
           "without --quick, every input type, block axis and scale layout at 1 GiB, and dequantization to each type")
      ->check(known_format())
      ->type_name("F");
  app->add_option("--rows-kernel", o.rows_kernel,
                  "kernel for blocks along the contiguous axis: auto (the launcher's choice by size), direct, staged")
      ->check(one_of({"auto", "direct", "staged"}))
      ->type_name("K");
}

void add_attention_options(CLI::App* app, AttentionBenchOptions& o) {
  app->footer(
      "decode:  B=8, H_q=32, H_kv=8, D=128, 1 query token, page 64 (--page): KV GB/s and fraction of copy\n"
      "         bandwidth; each timing spans N back-to-back calls (--decode-calls; 1 adds the host's\n"
      "         per-call time); the same at the --decode-dims; a serving batch (--serving-batch sequences\n"
      "         of 1k to 64k tokens, D=128)\n"
      "prefill: B*S=16k, H=16, D=128, causal and not: TFLOPS (4*B*H_q*S^2*D, halved when causal); and the\n"
      "         --prefill-shapes with the Hopper kernel (FP8 and exact modes)\n"
      "PyTorch SDPA baselines: python3 bench/attention_sdpa.py");
  app->add_option("--json", o.json, "also write the results to PATH as JSON")->type_name("PATH");
  add_integer(app, "--runs", o.runs, 1, "N", "timed runs per decode configuration (prefill: a third, at least 5)");
  add_integer(app, "--decode-calls", o.decode_calls, 1, "N", "decode calls per timing");
  add_integer(app, "--page", o.page_size, 1, "N", "KV cache page size in tokens");
  add_integer(app, "--splits", o.num_splits, 0, "N", "decode splits of the sequence (0: the launcher's choice)");
  app->add_flag("--decode-only", o.decode_only, "only the decode benchmark");
  app->add_flag("--prefill-only", o.prefill_only, "only the prefill benchmark");
  app->add_flag("--prefill-lse", o.prefill_lse,
                "prefill writes the LSE too (default: not, as the cuDNN FP8 baseline runs, without stats)");
  add_list(app, "--decode-formats", o.decode_formats, "decode formats, comma-separated; K's:V's for two")
      ->check(known_decode_format())
      ->type_name("F");
  add_list(app, "--decode-dims", o.decode_dims, "more decode head dims, comma-separated (64, 256)")
      ->check(CLI::IsMember({64, 128, 256}))
      ->type_name("D");
  add_integer(app, "--serving-batch", o.serving_batch, 0, "N", "sequences of the decode serving batch (0: none)");
  add_list(app, "--decode-lens", o.decode_lens, "decode KV lengths, comma-separated")
      ->check(integer_at_least(1))
      ->type_name("N");
  add_list(app, "--prefill-formats", o.prefill_formats, "prefill formats, comma-separated")
      ->check(known_format())
      ->type_name("F");
  add_list(app, "--prefill-lens", o.prefill_lens, "prefill sequence lengths, comma-separated")
      ->check(integer_at_least(1))
      ->type_name("N");
  add_list(app, "--prefill-shapes", o.prefill_shapes,
           "more prefill shapes H_q/H_kv/D, comma-separated (the Hopper kernel in both modes, the first format)")
      ->check(prefill_shape())
      ->type_name("S");
  add_list(app, "--prefill-kernels", o.prefill_kernels, "prefill kernels timed, comma-separated")
      ->check(one_of({"portable", "hopper", "hopper-exact", "block-scaled"}))
      ->type_name("K");
  add_list(app, "--prefill-causal", o.prefill_causal, "prefill masks timed, comma-separated: no (none), yes (causal)")
      ->check(one_of({"no", "yes"}))
      ->type_name("C");
  add_list(app, "--prefill-q", o.prefill_q, "Q types timed, comma-separated: mx, bf16 (the Hopper kernel, the first format)")
      ->check(one_of({"mx", "bf16"}))
      ->type_name("Q");
}

}  // namespace

Command bench_command(CLI::App& mxattn) {
  CLI::App* bench = mxattn.add_subcommand("bench", "GPU benchmarks (need a CUDA GPU)");
  CLI::App* quantize =
      bench->add_subcommand("quantize", "quantize / dequantize GB/s per format against the measured copy bandwidth");
  CLI::App* attention = bench->add_subcommand("attention", "decode KV bandwidth and prefill TFLOPS");
  auto q = std::make_shared<QuantizeBenchOptions>();
  auto a = std::make_shared<AttentionBenchOptions>();
  add_quantize_options(quantize, *q);
  add_attention_options(attention, *a);
  return {bench, [bench, quantize, attention, q, a] {
            if (!*quantize && !*attention) {
              std::fputs(bench->help("mxattn").c_str(), stderr);
              return 2;
            }
            if (a->decode_only && a->prefill_only) {
              std::fprintf(stderr, "mxattn bench attention: --decode-only and --prefill-only exclude each other\n");
              return 2;
            }
#if defined(MXATTN_WITH_CUDA)
            return *quantize ? bench_quantize(*q) : bench_attention(*a);
#else
            std::fprintf(stderr, "mxattn bench %s: no CUDA GPU can be used: this mxattn was built without CUDA\n",
                         *quantize ? "quantize" : "attention");
            return 1;
#endif
          }};
}

}  // namespace mxattn::cli
