// `mxattn bench attention`: decode over the paged MX KV cache (KV bytes per second as a fraction of
// the copy bandwidth measured in the same run) and the prefill kernels (TFLOPS). CUDA events,
// warm-up, median of many runs; decode caches are replicated so each run reads at least 4x the L2.
// bench/attention_sdpa.py times PyTorch SDPA on the same shapes and prints the ratios.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "commands.h"
#include "mxattn/api/attention.h"
#include "mxattn/api/kv_cache.h"
#include "mxattn/api/quantize.h"

namespace mxattn::cli {
namespace {

#define ATT_OK(expr)                                                            \
  do {                                                                          \
    const Status s_ = (expr);                                                   \
    if (!s_.ok) {                                                               \
      std::fprintf(stderr, "bench attention: %s: %s\n", #expr, s_.message.c_str()); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

// Random bytes that are valid codes (no NaN): 8-bit codes keep magnitudes below the E4M3/E5M2 NaN/Inf
// codes; scale bytes 2^-6 .. 2^1 (E8M0) or UE4M3 values 0.5 .. 6.
__global__ void fill_bytes(uint8_t* x, size_t n, uint32_t seed, int kind) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 0x9E3779B1u ^ seed;
    h ^= h >> 15, h *= 0x2C1B3C6Du, h ^= h >> 12, h *= 0x297A2D39u, h ^= h >> 15;
    uint8_t v = uint8_t(h >> 8);
    if (kind == 1) v &= 0x77;                              // codes
    if (kind == 2) v = uint8_t(121 + (h >> 8) % 8);         // E8M0 scales
    if (kind == 3) v = uint8_t(0x30 + (h >> 8) % 0x20);     // UE4M3 scales
    x[i] = v;
  }
}
void fill(void* p, size_t n, uint32_t seed, int kind) {
  fill_bytes<<<1024, 256>>>(static_cast<uint8_t*>(p), n, seed, kind);
  BENCH_CUDA(cudaGetLastError());
}
int scale_kind(const Format& f) { return f.scale == ScaleType::E8M0 ? 2 : 3; }

// Standard normal BF16 values (Box-Muller over a hash of the index): the prefill inputs, as the baselines'
// torch.randn (bench/attention_sdpa.py, cudnn_fp8.py), before they are quantized.
__global__ void fill_normal_bf16(__nv_bfloat16* x, size_t n, uint32_t seed) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    auto hash = [](uint32_t h) {
      h ^= h >> 16, h *= 0x7FEB352Du, h ^= h >> 15, h *= 0x846CA68Bu, h ^= h >> 16;
      return h;
    };
    const uint32_t a = hash(uint32_t(i) * 2u ^ seed * 0x9E3779B9u), b = hash(uint32_t(i) * 2u + 1u ^ seed * 0x85EBCA6Bu);
    const float u1 = (float(a >> 8) + 1.0f) * 0x1p-24f, u2 = float(b >> 8) * 0x1p-24f;
    const float z = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    x[i] = __float2bfloat16_rn(z);
  }
}
// A standard normal tensor of `shape` quantized to f along its last axis, row-major scales (NVFP4's tensor
// scale from its amax into *ts), through `tmp` (BF16, at least the tensor's elements).
void fill_quantized(const Format& f, std::vector<int64_t> shape, uint32_t seed, __nv_bfloat16* tmp, uint8_t* codes,
                    uint8_t* scales, float* ts) {
  size_t n = 1;
  for (int64_t x : shape) n *= size_t(x);
  fill_normal_bf16<<<1024, 256>>>(tmp, n, seed);
  BENCH_CUDA(cudaGetLastError());
  ATT_OK(quantize(tmp, DType::BF16, shape, {}, -1, f, ScaleLayout::RowMajor, {codes, scales, ts}, nullptr));
}


// A decode configuration: K's and V's formats, head dim, and each sequence's length.
struct DecodeConfig {
  std::string name;  // the format, or K's:V's
  Format k, v;
  int head_dim = 128;
  std::vector<int> lens;  // a uniform batch: 8 of one length; the serving batch: its own
  bool serving = false;
};
struct DecodeRow {
  DecodeConfig config;
  double ms = 0, kv_bytes = 0, gbps = 0, frac = 0;
};
std::string shape_name(int hq, int hk, int d) {
  return std::to_string(hq) + "/" + std::to_string(hk) + "/" + std::to_string(d);
}

struct PrefillRow {
  std::string format, kernel;
  int seq = 0, batch = 0, heads_q = 16, heads_kv = 16, head_dim = 128;
  bool causal = false;
  double ms = 0, tflops = 0;
};


// H_q=32, H_kv=8, one query token, page size --page; c's formats, head dim and sequence lengths.
DecodeRow bench_decode(EventTimer& timer, const AttentionBenchOptions& opt, const DecodeConfig& cfg, double copy_gbps) {
  constexpr int Hq = 32, Hk = 8;
  const int B = int(cfg.lens.size()), D = cfg.head_dim, kPage = opt.page_size;
  const int max_len = *std::max_element(cfg.lens.begin(), cfg.lens.end());
  int dev = 0, l2 = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  const int pages_per_seq = (max_len + kPage - 1) / kPage;
  KvCacheView c;
  c.k_format = cfg.k, c.v_format = cfg.v;
  c.page_size = kPage, c.heads_kv = Hk, c.head_dim = D, c.num_pages = B * pages_per_seq;
  // K and V bytes one call reads: the sequences' own pages.
  double kv_bytes = 0;
  for (int len : cfg.lens)
    kv_bytes += double((len + kPage - 1) / kPage) / c.num_pages *
                double(c.code_bytes(cfg.k) + c.scale_bytes(cfg.k) + c.code_bytes(cfg.v) + c.scale_bytes(cfg.v));
  const int replicas = std::max(1, int(4.0 * l2 / kv_bytes + 0.999));  // each run reads at least 4x the L2
  c.num_pages *= replicas;
  BENCH_CUDA(cudaMalloc(&c.k_codes, c.code_bytes(cfg.k)));
  BENCH_CUDA(cudaMalloc(&c.v_codes, c.code_bytes(cfg.v)));
  BENCH_CUDA(cudaMalloc(&c.k_scales, c.scale_bytes(cfg.k)));
  BENCH_CUDA(cudaMalloc(&c.v_scales, c.scale_bytes(cfg.v)));
  fill(c.k_codes, c.code_bytes(cfg.k), 2, 1), fill(c.v_codes, c.code_bytes(cfg.v), 3, 1);
  fill(c.k_scales, c.scale_bytes(cfg.k), 4, scale_kind(cfg.k)), fill(c.v_scales, c.scale_bytes(cfg.v), 5, scale_kind(cfg.v));
  float* ts;
  BENCH_CUDA(cudaMalloc(&ts, sizeof(float)));
  const float one_f = 1.0f;
  BENCH_CUDA(cudaMemcpy(ts, &one_f, sizeof one_f, cudaMemcpyHostToDevice));
  c.k_tensor_scale = c.v_tensor_scale = ts;

  std::vector<int32_t> table(size_t(replicas) * B * pages_per_seq);
  std::iota(table.begin(), table.end(), 0);
  int32_t *d_table, *d_lens;
  BENCH_CUDA(cudaMalloc(&d_table, table.size() * 4));
  BENCH_CUDA(cudaMemcpy(d_table, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMalloc(&d_lens, B * 4));
  BENCH_CUDA(cudaMemcpy(d_lens, cfg.lens.data(), B * 4, cudaMemcpyHostToDevice));
  void *q, *out;
  BENCH_CUDA(cudaMalloc(&q, size_t(B) * Hq * D * 2));
  BENCH_CUDA(cudaMalloc(&out, size_t(B) * Hq * D * 2));
  fill(q, size_t(B) * Hq * D * 2, 6, 1);  // bytes & 0x77: finite BF16 values

  DecodeArgs a;
  a.cache = c;
  a.max_seq_len = max_len, a.q_len = 1, a.heads_q = Hq;
  a.q = q, a.out = out;
  a.q_strides[0] = a.out_strides[0] = Hq * D, a.q_strides[1] = a.out_strides[1] = Hq * D;
  a.q_strides[2] = a.out_strides[2] = D;
  a.seqs = {d_table, pages_per_seq, d_lens, B};
  a.seq_lens_host = cfg.lens.data();
  a.num_splits = opt.num_splits;
  void* ws;
  const size_t ws_bytes = decode_workspace_bytes(a);
  BENCH_CUDA(cudaMalloc(&ws, ws_bytes));
  a.workspace = ws, a.workspace_bytes = ws_bytes;
  ATT_OK(attention_decode(a, nullptr));
  const double ms = timer.median_ms(opt.warmup, opt.runs, [&](int i) {
    a.seqs.block_table = d_table + size_t(i % replicas) * B * pages_per_seq;
    attention_decode(a, nullptr);
  }, opt.decode_calls);
  DecodeRow r;
  r.config = cfg, r.ms = ms;
  r.kv_bytes = kv_bytes;
  r.gbps = r.kv_bytes / (ms * 1e-3) / 1e9;
  r.frac = r.gbps / copy_gbps;
  for (void* p : {(void*)c.k_codes, (void*)c.v_codes, (void*)c.k_scales, (void*)c.v_scales, (void*)ts, (void*)d_table,
                  (void*)d_lens, q, out, ws})
    cudaFree(p);
  return r;
}

DecodeConfig decode_config(const std::string& name, int head_dim, std::vector<int> lens, bool serving) {
  const size_t colon = name.find(':');  // checked by known_decode_format() (apps/options.h)
  const Format k = *parse_format(name.substr(0, colon));
  const Format v = colon == std::string::npos ? k : *parse_format(name.substr(colon + 1));
  return {name, k, v, head_dim, std::move(lens), serving};
}

// B*S = 16k tokens, H_q, H_kv, D (16, 16, 128 for the main table); Q, K, V all in the format.
// Returns no row where the kernel does not take the format (printed with the reason).
std::optional<PrefillRow> bench_prefill(EventTimer& timer, const AttentionBenchOptions& opt, const Format& f,
                                        const std::string& name, int seq, bool causal, PrefillKernel kernel,
                                        int Hq = 16, int Hk = 16, int D = 128, bool dense_q = false) {
  constexpr int kTokens = 16384;
  const int B = std::max(1, kTokens / seq);
  const size_t q_rows = size_t(B) * seq * Hq, kv_rows = size_t(B) * seq * Hk;  // rows of D; V: B*H_kv*D of seq
  const size_t q_bytes = q_rows * packed_bytes(D, f.elem.bits), code_bytes = kv_rows * packed_bytes(D, f.elem.bits);
  const size_t q_scales = q_rows * (D / f.block), k_scales = kv_rows * (D / f.block);
  const size_t v_scales = size_t(B) * Hk * D * ((seq + f.block - 1) / f.block);
  uint8_t *qc, *kc, *vc, *qs, *ks, *vs;
  BENCH_CUDA(cudaMalloc(&qc, q_bytes));
  BENCH_CUDA(cudaMalloc(&kc, code_bytes));
  BENCH_CUDA(cudaMalloc(&vc, code_bytes + 16));
  BENCH_CUDA(cudaMalloc(&qs, q_scales));
  BENCH_CUDA(cudaMalloc(&ks, k_scales));
  BENCH_CUDA(cudaMalloc(&vs, v_scales));
  // Q, K and V standard normal, as the baselines' (uniformly random codes would give scores of hundreds of
  // nats and one-hot attention), each quantized with the library's kernels; V [B, H_kv, D, S].
  float* ts;  // Q's, K's and V's tensor scales (NVFP4)
  BENCH_CUDA(cudaMalloc(&ts, 3 * sizeof(float)));
  void* out;  // also the BF16 staging of the inputs, then Q when dense
  BENCH_CUDA(cudaMalloc(&out, std::max(q_rows, kv_rows) * D * 2));
  __nv_bfloat16* tmp = static_cast<__nv_bfloat16*>(out);
  fill_quantized(f, {B, seq, Hq, D}, 7, tmp, qc, qs, ts);
  fill_quantized(f, {B, seq, Hk, D}, 8, tmp, kc, ks, ts + 1);
  fill_quantized(f, {B, Hk, D, seq}, 9, tmp, vc, vs, ts + 2);
  void* q_dense = nullptr;  // BF16 Q instead of MX
  if (dense_q) {
    BENCH_CUDA(cudaMalloc(&q_dense, q_rows * D * 2));
    fill_normal_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(q_dense), q_rows * D, 13);
    BENCH_CUDA(cudaGetLastError());
  }
  float* lse;
  BENCH_CUDA(cudaMalloc(&lse, q_rows * 4));

  PrefillArgs a;
  a.shape = {B, seq, seq, Hq, Hk, D};
  a.options.causal = causal;
  a.q_mx = MxOperand::contiguous(f, {qc, qs, ts}, B, seq, Hq, D);
  a.q_is_mx = !dense_q;
  a.q_dense = DenseOperand::contiguous(q_dense, DType::BF16, seq, Hq, D);
  a.k = MxOperand::contiguous(f, {kc, ks, ts + 1}, B, seq, Hk, D);
  a.v = MxOperand::contiguous(f, {vc, vs, ts + 2}, B, Hk, D, seq);
  a.out = DenseOutput::contiguous(out, DType::BF16, seq, Hq, D);
  a.lse = opt.prefill_lse ? lse : nullptr;
  a.kernel = kernel;
  std::optional<PrefillRow> r;
  if (const Status st = attention_prefill(a, nullptr); !st.ok) {
    std::printf("%-12s %6d %3d %7s %-12s %9s  not run: %s\n", name.c_str(), seq, B, causal ? "yes" : "no",
                prefill_kernel_name(kernel), shape_name(Hq, Hk, D).c_str(), st.message.c_str());
  } else {
    const double ms = timer.median_ms(2, std::max(5, opt.runs / 3), [&](int) { attention_prefill(a, nullptr); });
    r = PrefillRow{name, prefill_kernel_name(kernel), seq, B, Hq, Hk, D, causal, ms};
    const double flops = 4.0 * B * Hq * double(seq) * seq * D * (causal ? 0.5 : 1.0);
    r->tflops = flops / (ms * 1e-3) / 1e12;
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  for (void* p : {(void*)qc, (void*)kc, (void*)vc, (void*)qs, (void*)ks, (void*)vs, (void*)ts, out, (void*)lse, q_dense})
    cudaFree(p);
  return r;
}

}  // namespace

int bench_attention(const AttentionBenchOptions& opt) {
  if (!cuda_gpu_found("mxattn bench attention")) return 1;
  const bool do_decode = !opt.prefill_only, do_prefill = !opt.decode_only;
  cudaDeviceProp prop;
  int dev = 0;
  BENCH_CUDA(cudaGetDevice(&dev));
  BENCH_CUDA(cudaGetDeviceProperties(&prop, dev));
  EventTimer timer;
  const double copy = copy_bandwidth_gbps(timer);
  std::printf("device: %s, copy bandwidth %.0f GB/s (read + write)\n", prop.name, copy);

  std::vector<DecodeRow> dec;
  if (do_decode) {
    std::printf("\ndecode  H_q=32 H_kv=8 q_len=1 page=%d, %d calls per timing; B=8 of S_kv, or the serving batch\n"
                "%-18s %4s %3s %10s %10s %10s %9s %7s\n",
                opt.page_size, opt.decode_calls, "format (K:V)", "D", "B", "S_kv", "time_us", "KV_MB", "GB/s", "%copy");
    std::vector<DecodeConfig> configs;
    std::vector<int> dims{128};
    dims.insert(dims.end(), opt.decode_dims.begin(), opt.decode_dims.end());
    for (int d : dims)
      for (const auto& name : opt.decode_formats)
        for (int s : opt.decode_lens) configs.push_back(decode_config(name, d, std::vector<int>(8, s), false));
    if (opt.serving_batch > 0)
      for (const auto& name : opt.decode_formats) configs.push_back(decode_config(name, 128, serving_lens(opt.serving_batch), true));
    for (const DecodeConfig& cfg : configs) {
      const DecodeRow r = bench_decode(timer, opt, cfg, copy);
      const std::string len = cfg.serving ? "1k-64k" : std::to_string(cfg.lens[0]);
      std::printf("%-18s %4d %3zu %10s %10.1f %10.1f %9.0f %6.1f%%\n", cfg.name.c_str(), cfg.head_dim, cfg.lens.size(),
                  len.c_str(), r.ms * 1e3, r.kv_bytes / 1e6, r.gbps, 100 * r.frac);
      dec.push_back(r);
    }
  }
  std::vector<PrefillRow> pre;
  if (do_prefill) {
    std::printf("\nprefill  B*S=16k (H_q/H_kv/D), %s\n%-12s %6s %3s %7s %-12s %9s %10s %8s\n",
                opt.prefill_lse ? "with the LSE" : "no LSE (as the cuDNN FP8 baseline)", "format", "S", "B", "causal",
                "kernel", "shape", "time_ms", "TFLOPS");
    auto run = [&](const std::string& name, int s, bool causal, PrefillKernel k, int hq, int hk, int d,
                   bool dense_q = false) {
      const Format f = *parse_format(name);  // checked by known_format() (apps/bench_options.cpp)
      if (const auto r = bench_prefill(timer, opt, f, dense_q ? name + " q=bf16" : name, s, causal, k, hq, hk, d, dense_q)) {
        std::printf("%-12s %6d %3d %7s %-12s %9s %10.3f %8.1f\n", r->format.c_str(), s, r->batch, causal ? "yes" : "no",
                    r->kernel.c_str(), shape_name(hq, hk, d).c_str(), r->ms, r->tflops);
        pre.push_back(*r);
      }
    };
    const auto timed = [](const std::vector<std::string>& list, const char* name) {
      return std::find(list.begin(), list.end(), name) != list.end();
    };
    std::vector<PrefillKernel> kernels;
    for (PrefillKernel k :
         {PrefillKernel::Portable, PrefillKernel::HopperFp8, PrefillKernel::HopperExact, PrefillKernel::BlockScaled})
      if (timed(opt.prefill_kernels, prefill_kernel_name(k))) kernels.push_back(k);
    std::vector<bool> masks;
    for (bool causal : {false, true})
      if (timed(opt.prefill_causal, causal ? "yes" : "no")) masks.push_back(causal);
    for (const auto& name : timed(opt.prefill_q, "mx") ? opt.prefill_formats : std::vector<std::string>{})
      for (int s : opt.prefill_lens)
        for (bool causal : masks)
          for (PrefillKernel k : kernels) run(name, s, causal, k, 16, 16, 128);
    // Dense BF16 Q with the first format's K and V (the Hopper kernel folds Q into two E4M3 terms).
    if (!opt.prefill_formats.empty() && timed(opt.prefill_kernels, "hopper") && timed(opt.prefill_q, "bf16"))
      for (int s : opt.prefill_lens)
        for (bool causal : masks) run(opt.prefill_formats[0], s, causal, PrefillKernel::HopperFp8, 16, 16, 128, true);
    for (const auto& shape : opt.prefill_formats.empty() ? std::vector<std::string>{} : opt.prefill_shapes) {
      int v[3];
      parse_prefill_shape(shape, v);  // checked by prefill_shape() (apps/bench_options.cpp)
      for (PrefillKernel k : kernels)
        if (k != PrefillKernel::Portable)
          for (int s : opt.prefill_lens)
            for (bool causal : masks) run(opt.prefill_formats[0], s, causal, k, v[0], v[1], v[2]);
    }
  }
  if (!opt.json.empty()) {
    FILE* f = std::fopen(opt.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "bench attention: cannot write %s\n", opt.json.c_str());
      return 1;
    }
    std::fprintf(f, "{\n  \"device\": \"%s\",\n  \"copy_bandwidth_gbps\": %.1f,\n  \"decode_calls_per_timing\": %d,\n  \"decode\": [",
                 prop.name, copy, opt.decode_calls);
    for (size_t i = 0; i < dec.size(); ++i) {
      const DecodeConfig& c = dec[i].config;
      std::string lens;
      for (int len : c.lens) lens += (lens.empty() ? "" : ", ") + std::to_string(len);
      std::fprintf(f,
                   "%s\n    {\"format\": \"%s\", \"k_format\": \"%s\", \"v_format\": \"%s\", \"workload\": \"%s\", "
                   "\"batch\": %zu, \"heads_q\": 32, \"heads_kv\": 8, \"head_dim\": %d, \"page_size\": %d, "
                   "\"num_splits\": %d, \"seq_kv\": %d, \"lens\": [%s], \"ms\": %.5f, \"kv_bytes\": %.0f, "
                   "\"gbps\": %.1f, \"fraction_of_copy\": %.4f}",
                   i ? "," : "", c.name.c_str(), format_name(c.k).c_str(), format_name(c.v).c_str(),
                   c.serving ? "serving" : "uniform", c.lens.size(), c.head_dim, opt.page_size, opt.num_splits,
                   c.serving ? 0 : c.lens[0], lens.c_str(), dec[i].ms, dec[i].kv_bytes, dec[i].gbps, dec[i].frac);
    }
    std::fprintf(f, "\n  ],\n  \"prefill_lse\": %s,\n  \"prefill\": [", opt.prefill_lse ? "true" : "false");
    for (size_t i = 0; i < pre.size(); ++i)
      std::fprintf(f,
                   "%s\n    {\"format\": \"%s\", \"kernel\": \"%s\", \"batch\": %d, \"seq\": %d, \"heads\": %d, "
                   "\"heads_kv\": %d, \"head_dim\": %d, \"causal\": %s, \"ms\": %.5f, \"tflops\": %.2f}",
                   i ? "," : "", pre[i].format.c_str(), pre[i].kernel.c_str(), pre[i].batch, pre[i].seq, pre[i].heads_q,
                   pre[i].heads_kv, pre[i].head_dim, pre[i].causal ? "true" : "false", pre[i].ms, pre[i].tflops);
    std::fprintf(f, "\n  ]\n}\n");
    std::fclose(f);
    std::printf("\nwrote %s\n", opt.json.c_str());
  }
  return 0;
}

}  // namespace mxattn::cli
