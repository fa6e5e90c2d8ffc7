// `mxattn explore`: what each block format costs in bits and in accuracy, on generated or given data.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "mxattn/explore/explore.h"
#include "mxattn/format/format.h"
#include "options.h"

#if defined(MXATTN_WITH_CUDA)
#include <cuda_runtime_api.h>

#include "mxattn/api/attention.h"
#include "mxattn/api/device_buffer.h"
#include "mxattn/reference/quantize.h"
#endif

namespace mxattn::cli {
namespace {

using namespace mxattn::explore;

#if defined(MXATTN_WITH_CUDA)
// The GPU prefill kernel (api/attention.h) as the explorer's KernelAttention: Q, K, V quantized by the
// CPU reference (bit-identical to the GPU quantizer), uploaded, attended in one launch, BF16 out.
std::optional<std::vector<double>> gpu_prefill(const Format& f, const AttentionData& d, const AttentionOptions& opt,
                                               std::string* why) {
  const AttentionShape& s = d.shape;
  const std::vector<int64_t> q_shape{s.batch, s.seq_q, s.heads_q, s.head_dim};
  const std::vector<int64_t> kv_shape{s.batch, s.seq_kv, s.heads_kv, s.head_dim};
  const DeviceQuantized q(quantize(d.q.data(), q_shape, {}, 3, f));
  const DeviceQuantized k(quantize(d.k.data(), kv_shape, {}, 3, f));
  const DeviceQuantized v(quantize(d.v.data(), kv_shape, {}, 1, f));  // stored [B, H, D, S]
  DeviceArray<uint16_t> out(size_t(s.q_elems()));
  if (!q.ok() || !k.ok() || !v.ok() || !out.ok()) {
    *why = "device allocation or copy failed";
    return std::nullopt;
  }
  PrefillArgs a;
  a.shape = s;
  a.options = opt;
  a.q_is_mx = true;
  a.q_mx = MxOperand::contiguous(f, q.const_buffers(), s.batch, s.seq_q, s.heads_q, s.head_dim);
  a.k = MxOperand::contiguous(f, k.const_buffers(), s.batch, s.seq_kv, s.heads_kv, s.head_dim);
  a.v = MxOperand::contiguous(f, v.const_buffers(), s.batch, s.heads_kv, s.head_dim, s.seq_kv);
  a.out = DenseOutput::contiguous(out.data(), DType::BF16, s.seq_q, s.heads_q, s.head_dim);
  const Status st = attention_prefill(a, nullptr);
  if (!st) {
    *why = st.message;
    return std::nullopt;
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    *why = std::string("attention_prefill: ") + cudaGetErrorString(e);
    return std::nullopt;
  }
  const std::vector<uint16_t> bf16 = out.download();
  std::vector<double> result(bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) result[i] = double(bits_float(uint32_t(bf16[i]) << 16));
  return result;
}
#endif

// What the command line sets (explore_command); run_explore turns it into ExploreOptions.
struct ExploreArgs {
  std::vector<std::string> formats;
  bool named_only = false;
  std::vector<std::string> data = {"normal"};  // distribution names, or "all"
  std::string q_path, k_path, v_path;
  int64_t max_kv_heads = 0, seq = 1024, dim = 128, heads = 1;
  uint64_t seed = 1;
  std::string mode = "both", smooth = "none";
  bool causal = false;
  int threads = 0;  // 0: all hardware threads
  bool gpu = false, gpu_given = false;
  bool model_only = false;
  std::string prefix = "mxattn_explore", csv_path, json_path, svg_path;
  bool no_files = false, quiet = false;
};

int run_explore(const ExploreArgs& a) {
  const int given = int(!a.q_path.empty()) + int(!a.k_path.empty()) + int(!a.v_path.empty());
  if (given != 0 && given != 3) {
    std::fprintf(stderr, "mxattn explore: --q, --k and --v go together: give all three .npy files\n");
    return 2;
  }
  ExploreOptions opt;
  for (const auto& name : a.formats) {
    std::string why;
    const auto f = parse_format(name, &why);
    if (!f) {
      std::fprintf(stderr, "mxattn explore: %s\n", why.c_str());
      return 2;
    }
    opt.formats.push_back(*f);
  }
  if (a.named_only)
    for (const auto& nf : named_formats()) opt.formats.push_back(nf.format);
  if (opt.formats.empty()) opt.formats = default_sweep();
  std::vector<Format> unique;  // each format once, in the order given
  for (const Format& f : opt.formats)
    if (std::find(unique.begin(), unique.end(), f) == unique.end()) unique.push_back(f);
  opt.formats = unique;
  if (a.mode == "qkv") opt.modes = {Mode::Qkv};
  if (a.mode == "kv") opt.modes = {Mode::KvCache};
  opt.smoothing.k_mean = a.smooth == "kmean" || a.smooth == "both" || a.smooth == "kmean+hadamard";
  opt.smoothing.hadamard = a.smooth == "hadamard" || a.smooth == "both" || a.smooth == "kmean+hadamard";
  opt.attention.causal = a.causal;
  opt.threads = a.threads;

  if (a.model_only) {
    print_roadblock_model(stdout, opt.formats);
    return 0;
  }
#if defined(MXATTN_WITH_CUDA)
  if (a.gpu_given && a.gpu && !gpu_present()) {
    std::fprintf(stderr, "mxattn explore: --gpu: no CUDA device found\n");
    return 2;
  }
  if ((a.gpu || !a.gpu_given) && gpu_present()) {
    opt.kernel = gpu_prefill;
    opt.kernel_name = "GPU attention_prefill (mma.sync, BF16 out)";
  }
#else
  if (a.gpu_given && a.gpu) {
    std::fprintf(stderr, "mxattn explore: --gpu: this mxattn was built without CUDA\n");
    return 2;
  }
#endif

  try {
    std::vector<AttentionData> inputs;
    if (!a.q_path.empty()) {
      inputs.push_back(load_npy_data(a.q_path, a.k_path, a.v_path, a.max_kv_heads));
    } else {
      const AttentionShape shape{1, a.seq, a.seq, a.heads, a.heads, a.dim};
      std::vector<Distribution> dists;
      if (std::find(a.data.begin(), a.data.end(), "all") != a.data.end())
        dists.assign(std::begin(kAllDistributions), std::end(kAllDistributions));
      else
        for (const auto& n : a.data) dists.push_back(*parse_distribution(n));  // checked by one_of()
      for (Distribution d : dists) inputs.push_back(generate_data(d, shape, a.seed));
    }
    std::vector<ExploreReport> reports;
    for (const auto& data : inputs) {
      reports.push_back(explore_formats(data, opt));
      if (!a.quiet) {
        print_table(stdout, reports.back());
        std::printf("\n");
      }
    }
    if (!a.no_files) {
      auto path = [&](const std::string& given, const char* ext) { return given.empty() ? a.prefix + ext : given; };
      const std::string csv = path(a.csv_path, ".csv"), json = path(a.json_path, ".json"),
                        svg = path(a.svg_path, ".svg");
      write_text_file(csv, to_csv(reports));
      write_text_file(json, to_json(reports));
      write_text_file(svg, to_svg(reports));
      if (!a.quiet) std::printf("wrote %s, %s, %s\n", csv.c_str(), json.c_str(), svg.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mxattn explore: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

Command explore_command(CLI::App& mxattn) {
  CLI::App* app = mxattn.add_subcommand("explore", "bits per element against accuracy for many formats");
  app->footer(
      "For each block format: bits per element (block scales included), RoadBlock's per-thread scale\n"
      "metadata for NT = 4, 8, 16, 32 threads per warp (seeds/003, eqs. 2-13), the quantization error of\n"
      "Q, K, V (rel. L2, SNR), and the attention error (cosine, rel. L2) against FP64 attention on the\n"
      "unquantized inputs, with Q/K/V quantized (V blocked along S) and with only the KV cache quantized\n"
      "(Q exact, V blocked along D). Writes a table, CSV, JSON and an SVG of the Pareto frontier.\n"
      "\n"
      "The format errors are FP64 attention on dequantized inputs (what an exact kernel computes), on\n"
      "the CPU; with a GPU the prefill kernel's own output is measured too (Q/K/V, BF16 output).");
  auto a = std::make_shared<ExploreArgs>();

  app->add_option("FORMAT", a->formats,
                  "names as `mxattn formats` takes them: mxfp8, nvfp4, e3m2/k16/ue8m0,\n"
                  "int4/k32/ue8m0/floor, e2m3/k16/ue4m3/ts, ... (default: the full sweep:\n"
                  "every named format, then {e2m1,e2m3,e3m2,e4m3,e5m2,int8,int4} x\n"
                  "{k8,k16,k32,k64} x {ue8m0,ue4m3} x {rceil,floor})")
      ->type_name("");  // checked by run_explore, so that an unknown option is reported before its value
  app->add_flag("--named", a->named_only, "only the named formats")->group("formats");

  std::vector<std::string> distributions;
  for (Distribution d : kAllDistributions) distributions.push_back(distribution_name(d));
  distributions.push_back("all");
  add_list(app, "--data", a->data,
           "comma-separated: normal, uniform, student-t, outliers, sink, or all.\n"
           "normal N(0,1); uniform U(-1,1); student-t: t with 3 degrees of\n"
           "freedom at unit variance; outliers: one K channel in 32 is x10 +10;\n"
           "sink: token 0 of Q, K, V is x20")
      ->check(one_of(distributions))
      ->type_name("LIST")
      ->group("data");
  CLI::Option* q = app->add_option("--q", a->q_path,
                                   "your own tensors instead (.npy, float16/32/64): [S, D], [S, H, D] or\n"
                                   "[B, S, H, D]; K and V the same shape, H_q a multiple of H_kv");
  CLI::Option* k = app->add_option("--k", a->k_path, "with --q and --v");
  CLI::Option* v = app->add_option("--v", a->v_path, "with --q and --k");
  for (CLI::Option* o : {q, k, v}) o->type_name("FILE")->group("data");
  app->add_option("--max-kv-heads", a->max_kv_heads,
                  "with .npy input, keep only the first N KV heads (and their Q heads)")
      ->check(integer_at_least<int64_t>(1))
      ->type_name("N")
      ->group("data");
  add_integer<int64_t>(app, "--seq", a->seq, 1, "S", "sequence length of generated data")->group("data");
  add_integer<int64_t>(app, "--dim", a->dim, 1, "D", "head dimension of generated data")->group("data");
  add_integer<int64_t>(app, "--heads", a->heads, 1, "H", "heads of generated data")->group("data");
  add_integer<uint64_t>(app, "--seed", a->seed, 0, "N", "random seed")->group("data");

  app->add_option("--mode", a->mode, "which use to measure")
      ->check(one_of({"qkv", "kv", "both"}))
      ->type_name("qkv|kv|both")
      ->capture_default_str()
      ->group("measurement");
  app->add_flag("--causal", a->causal, "causal attention")->group("measurement");
  app->add_option("--smooth", a->smooth,
                  "also measure with smoothing of Q and K before quantization: kmean\n"
                  "(subtract K's mean over tokens), hadamard (random-sign Hadamard rotation\n"
                  "along D), or both; reported beside the unsmoothed error. (A KV cache\n"
                  "must know the K mean ahead, e.g. from its prefill.)")
      ->check(one_of({"kmean", "hadamard", "both", "kmean+hadamard", "none"}))
      ->type_name("WHAT")
      ->capture_default_str()
      ->group("measurement");
  app->add_option("--threads", a->threads, "worker threads (default: all hardware threads)")
      ->check(integer_at_least<int>(1))
      ->type_name("N")
      ->group("measurement");
  const CLI::Option* gpu = app->add_flag("--gpu,!--no-gpu", a->gpu,
                                         "measure the GPU prefill kernel on Q/K/V in each format beside the\n"
                                         "formats' own error (default: where built with CUDA and a GPU is present)")
                               ->group("measurement");
  app->add_flag("--model-only", a->model_only, "print only the RoadBlock model table for the formats; no data")
      ->group("measurement");

  app->add_option("--out", a->prefix, "write PREFIX.csv, PREFIX.json, PREFIX.svg")
      ->type_name("PREFIX")
      ->capture_default_str()
      ->group("output");
  app->add_option("--csv", a->csv_path, "write the CSV to F instead")->type_name("F")->group("output");
  app->add_option("--json", a->json_path, "write the JSON to F instead")->type_name("F")->group("output");
  app->add_option("--svg", a->svg_path, "write the SVG to F instead")->type_name("F")->group("output");
  app->add_flag("--no-files", a->no_files, "terminal table only")->group("output");
  app->add_flag("--quiet", a->quiet, "no table (files only)")->group("output");

  return {app, [a, gpu] {
            ExploreArgs run = *a;
            run.gpu_given = bool(*gpu);
            return run_explore(run);
          }};
}

}  // namespace mxattn::cli
