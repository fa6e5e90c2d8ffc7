// `mxattn explore`: what each block format costs in bits and in accuracy, on generated or given data.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "mxattn/explore/explore.h"
#include "mxattn/format/format.h"

#if defined(MXATTN_WITH_CUDA)
#include <cuda_runtime_api.h>

#include "mxattn/api/attention.h"
#include "mxattn/api/device_buffer.h"
#include "mxattn/reference/quantize.h"
#endif

namespace mxattn::cli {
namespace {

using namespace mxattn::explore;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: mxattn explore [FORMAT ...] [options]\n"
               "\n"
               "For each block format: bits per element (block scales included), RoadBlock's per-thread scale\n"
               "metadata for NT = 4, 8, 16, 32 threads per warp (seeds/003, eqs. 2-13), the quantization error of\n"
               "Q, K, V (rel. L2, SNR), and the attention error (cosine, rel. L2) against FP64 attention on the\n"
               "unquantized inputs, with Q/K/V quantized (V blocked along S) and with only the KV cache quantized\n"
               "(Q exact, V blocked along D). Writes a table, CSV, JSON and an SVG of the Pareto frontier.\n"
               "\n"
               "formats:\n"
               "  FORMAT ...            names as `mxattn formats` takes them: mxfp8, nvfp4, e3m2/k16/ue8m0,\n"
               "                        int4/k32/ue8m0/floor, e2m3/k16/ue4m3/ts, ... (default: the full sweep:\n"
               "                        every named format, then {e2m1,e2m3,e3m2,e4m3,e5m2,int8,int4} x\n"
               "                        {k8,k16,k32,k64} x {ue8m0,ue4m3} x {rceil,floor})\n"
               "  --named               only the named formats\n"
               "data:\n"
               "  --data LIST           comma-separated: normal, uniform, student-t, outliers, sink, or all\n"
               "                        (default normal). normal N(0,1); uniform U(-1,1); student-t: t with 3\n"
               "                        degrees of freedom at unit variance; outliers: one K channel in 32 is\n"
               "                        x10 +10; sink: token 0 of Q, K, V is x20\n"
               "  --q FILE --k FILE --v FILE\n"
               "                        your own tensors instead (.npy, float16/32/64): [S, D], [S, H, D] or\n"
               "                        [B, S, H, D]; K and V the same shape, H_q a multiple of H_kv\n"
               "  --max-kv-heads N      with .npy input, keep only the first N KV heads (and their Q heads)\n"
               "  --seq S               sequence length of generated data (default 1024)\n"
               "  --dim D               head dimension of generated data (default 128)\n"
               "  --heads H             heads of generated data (default 1)\n"
               "  --seed N              random seed (default 1)\n"
               "measurement:\n"
               "  --mode qkv|kv|both    which use to measure (default both)\n"
               "  --causal              causal attention\n"
               "  --smooth WHAT         also measure with smoothing of Q and K before quantization: kmean\n"
               "                        (subtract K's mean over tokens), hadamard (random-sign Hadamard rotation\n"
               "                        along D), or both; reported beside the unsmoothed error. (A KV cache\n"
      "                        must know the K mean ahead, e.g. from its prefill.)\n"
               "  --threads N           worker threads (default: all hardware threads)\n"
               "  --gpu, --no-gpu       measure the GPU prefill kernel on Q/K/V in each format beside the formats'\n"
               "                        own error (default: where built with CUDA and a GPU is present)\n"
               "  --model-only          print only the RoadBlock model table for the formats; no data\n"
               "output:\n"
               "  --out PREFIX          write PREFIX.csv, PREFIX.json, PREFIX.svg (default mxattn_explore)\n"
               "  --csv F, --json F, --svg F\n"
               "                        write that file to F instead\n"
               "  --no-files            terminal table only\n"
               "  --quiet               no table (files only)\n"
               "\n"
               "The format errors are FP64 attention on dequantized inputs (what an exact kernel computes), on\n"
               "the CPU; with a GPU the prefill kernel's own output is measured too (Q/K/V, BF16 output).\n");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    const std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t parse_positive(const char* opt, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (!end || *end != '\0' || v <= 0) throw BadArgs(std::string(opt) + " needs a positive integer, got '" + text + "'");
  return v;
}

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

}  // namespace

int explore_main(int argc, char** argv) {
  ExploreOptions opt;
  std::vector<std::string> data_names = {"normal"};
  std::string q_path, k_path, v_path, prefix = "mxattn_explore", csv_path, json_path, svg_path;
  int64_t seq = 1024, dim = 128, heads = 1, max_kv_heads = 0;
  uint64_t seed = 1;
  bool named_only = false, model_only = false, no_files = false, quiet = false;
  enum class Gpu { Auto, On, Off } gpu = Gpu::Auto;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> const char* {
        if (i + 1 >= argc) throw BadArgs(a + " needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        usage(stdout);
        return 0;
      } else if (a == "--named") {
        named_only = true;
      } else if (a == "--data") {
        data_names = split_commas(value());
        if (data_names.size() == 1 && data_names[0] == "all") {
          data_names.clear();
          for (Distribution d : kAllDistributions) data_names.push_back(distribution_name(d));
        }
        for (const auto& n : data_names)
          if (!parse_distribution(n))
            throw BadArgs("--data: unknown distribution '" + n + "' (normal, uniform, student-t, outliers, sink, all)");
      } else if (a == "--q") {
        q_path = value();
      } else if (a == "--k") {
        k_path = value();
      } else if (a == "--v") {
        v_path = value();
      } else if (a == "--max-kv-heads") {
        max_kv_heads = parse_positive("--max-kv-heads", value());
      } else if (a == "--seq") {
        seq = parse_positive("--seq", value());
      } else if (a == "--dim") {
        dim = parse_positive("--dim", value());
      } else if (a == "--heads") {
        heads = parse_positive("--heads", value());
      } else if (a == "--seed") {
        seed = uint64_t(parse_positive("--seed", value()));
      } else if (a == "--mode") {
        const std::string m = value();
        if (m == "qkv")
          opt.modes = {Mode::Qkv};
        else if (m == "kv")
          opt.modes = {Mode::KvCache};
        else if (m == "both")
          opt.modes = {Mode::Qkv, Mode::KvCache};
        else
          throw BadArgs("--mode must be qkv, kv or both, got '" + m + "'");
      } else if (a == "--causal") {
        opt.attention.causal = true;
      } else if (a == "--smooth") {
        const std::string m = value();
        opt.smoothing.k_mean = m == "kmean" || m == "both" || m == "kmean+hadamard";
        opt.smoothing.hadamard = m == "hadamard" || m == "both" || m == "kmean+hadamard";
        if (!opt.smoothing.any() && m != "none")
          throw BadArgs("--smooth must be kmean, hadamard, both or none, got '" + m + "'");
      } else if (a == "--threads") {
        opt.threads = int(parse_positive("--threads", value()));
      } else if (a == "--gpu") {
        gpu = Gpu::On;
      } else if (a == "--no-gpu") {
        gpu = Gpu::Off;
      } else if (a == "--model-only") {
        model_only = true;
      } else if (a == "--out") {
        prefix = value();
      } else if (a == "--csv") {
        csv_path = value();
      } else if (a == "--json") {
        json_path = value();
      } else if (a == "--svg") {
        svg_path = value();
      } else if (a == "--no-files") {
        no_files = true;
      } else if (a == "--quiet") {
        quiet = true;
      } else if (!a.empty() && a[0] == '-') {
        throw BadArgs("unknown option '" + a + "' (see mxattn explore --help)");
      } else {
        std::string why;
        const auto f = parse_format(a, &why);
        if (!f) throw BadArgs(why);
        opt.formats.push_back(*f);
      }
    }
    const int given = int(!q_path.empty()) + int(!k_path.empty()) + int(!v_path.empty());
    if (given != 0 && given != 3) throw BadArgs("--q, --k and --v go together: give all three .npy files");
  } catch (const BadArgs& e) {
    std::fprintf(stderr, "mxattn explore: %s\n", e.what());
    return 2;
  }
  if (named_only)
    for (const auto& nf : named_formats()) opt.formats.push_back(nf.format);
  if (opt.formats.empty()) opt.formats = default_sweep();
  std::vector<Format> unique;  // each format once, in the order given
  for (const Format& f : opt.formats)
    if (std::find(unique.begin(), unique.end(), f) == unique.end()) unique.push_back(f);
  opt.formats = unique;

  if (model_only) {
    print_roadblock_model(stdout, opt.formats);
    return 0;
  }
#if defined(MXATTN_WITH_CUDA)
  if (gpu == Gpu::On && !gpu_present()) {
    std::fprintf(stderr, "mxattn explore: --gpu: no CUDA device found\n");
    return 2;
  }
  if (gpu != Gpu::Off && gpu_present()) {
    opt.kernel = gpu_prefill;
    opt.kernel_name = "GPU attention_prefill (mma.sync, BF16 out)";
  }
#else
  if (gpu == Gpu::On) {
    std::fprintf(stderr, "mxattn explore: --gpu: this mxattn was built without CUDA\n");
    return 2;
  }
#endif

  try {
    std::vector<AttentionData> inputs;
    if (!q_path.empty()) {
      inputs.push_back(load_npy_data(q_path, k_path, v_path, max_kv_heads));
    } else {
      const AttentionShape shape{1, seq, seq, heads, heads, dim};
      for (const auto& n : data_names) inputs.push_back(generate_data(*parse_distribution(n), shape, seed));
    }
    std::vector<ExploreReport> reports;
    for (const auto& data : inputs) {
      reports.push_back(explore_formats(data, opt));
      if (!quiet) {
        print_table(stdout, reports.back());
        std::printf("\n");
      }
    }
    if (!no_files) {
      auto path = [&](const std::string& given, const char* ext) { return given.empty() ? prefix + ext : given; };
      const std::string csv = path(csv_path, ".csv"), json = path(json_path, ".json"), svg = path(svg_path, ".svg");
      write_text_file(csv, to_csv(reports));
      write_text_file(json, to_json(reports));
      write_text_file(svg, to_svg(reports));
      if (!quiet) std::printf("wrote %s, %s, %s\n", csv.c_str(), json.c_str(), svg.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mxattn explore: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace mxattn::cli
