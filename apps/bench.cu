// `mxattn bench quantize`: GPU quantize / dequantize throughput as a fraction of the device-to-device
// copy bandwidth measured in the same run (bytes read + bytes written, both counted once: the input
// read once, the codes, scales and tensor scale written once). CUDA events, warm-up, median of many
// runs; inputs rotate among buffers so each run reads at least 4x the L2 size from memory.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "commands.h"
#include "mxattn/api/quantize.h"
#include "mxattn/format/format.h"

namespace mxattn::cli {
namespace {

struct Result {
  std::string op, format, dtype, layout, shape, note;
  double in_mib = 0, bytes = 0, ms = 0, gbps = 0, pct = 0;
  double pct_same = 0;  // of a copy of the same size, timed the same way (small sizes pay launch and tail)
};

// Random-looking values of many magnitudes (never all zero: zeros can run faster than data).
__global__ void fill_kernel(void* x, DType dtype, size_t n, uint32_t seed) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 0x9E3779B1u ^ seed;
    h ^= h >> 15, h *= 0x2C1B3C6Du, h ^= h >> 12, h *= 0x297A2D39u, h ^= h >> 15;
    const float u = float(h & 0xffffff) / float(1 << 24) * 2.0f - 1.0f;
    const float v = ldexpf(u, int(h >> 28) - 8);
    if (dtype == DType::F32) static_cast<float*>(x)[i] = v;
    else if (dtype == DType::BF16) static_cast<__nv_bfloat16*>(x)[i] = __float2bfloat16_rn(v);
    else static_cast<__half*>(x)[i] = __float2half_rn(v);
  }
}


struct Bench {
  QuantizeBenchOptions opt;
  cudaDeviceProp prop{};
  double copy_gbps = 0;
  std::vector<Result> results;
  EventTimer timer;

  void print(const Result& r) {
    std::printf("%-10s %-18s %-5s %-8s %-22s %7.0f MiB %9.4f ms %8.1f GB/s %6.1f%% of copy %6.1f%% same-size  %s\n",
                r.op.c_str(), r.format.c_str(), r.dtype.c_str(), r.layout.c_str(), r.shape.c_str(), r.in_mib, r.ms,
                r.gbps, r.pct, r.pct_same, r.note.c_str());
    std::fflush(stdout);
  }

  void measure_copy() {
    copy_gbps = copy_bandwidth_gbps(timer, opt.warmup, opt.runs);
    std::printf("device: %s, %d SMs, L2 %d MiB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    std::printf("copy (cudaMemcpy D2D, 1 GiB, read + write): %.1f GB/s\n\n", copy_gbps);
  }

  // A copy of `mib` MiB per call, sources rotating as the benchmarked inputs do: the ceiling at that size.
  std::map<double, double> copy_at;
  double copy_gbps_at(double mib) {
    if (auto it = copy_at.find(mib); it != copy_at.end()) return it->second;
    const size_t bytes = size_t(mib * 1024 * 1024);
    Inputs in;
    make_inputs(in, bytes, DType::F32);
    void* dst;
    BENCH_CUDA(cudaMalloc(&dst, bytes));
    const double ms = timer.median_ms(opt.warmup, opt.runs, [&](int i) {
      cudaMemcpyAsync(dst, in.bufs[size_t(i) % in.bufs.size()], bytes, cudaMemcpyDeviceToDevice);
    }, opt.calls);
    cudaFree(dst);
    const double gbps = 2.0 * bytes / (ms * 1e-3) / 1e9;
    std::printf("copy (cudaMemcpy D2D, %.0f MiB, rotating sources): %.1f GB/s\n", mib, gbps);
    return copy_at[mib] = gbps;
  }
  void set_pct(Result& r) {
    r.pct = 100.0 * r.gbps / copy_gbps;
    r.pct_same = 100.0 * r.gbps / copy_gbps_at(r.in_mib);
  }

  // Input buffers enough to rotate through >= 4x L2 per sweep.
  struct Inputs {
    std::vector<void*> bufs;
    ~Inputs() {
      for (void* p : bufs) cudaFree(p);
    }
  };
  void make_inputs(Inputs& in, size_t bytes, DType dtype) {
    const size_t count = std::max<size_t>(1, (size_t(prop.l2CacheSize) * 4 + bytes - 1) / bytes);
    for (size_t i = 0; i < count; ++i) {
      void* p;
      BENCH_CUDA(cudaMalloc(&p, bytes));
      fill_kernel<<<4096, 256>>>(p, dtype, bytes / dtype_bytes(dtype), uint32_t(1234 + i));
      in.bufs.push_back(p);
    }
    BENCH_CUDA(cudaDeviceSynchronize());
  }

  void quantize_config(const char* fname, DType dtype, ScaleLayout layout, double in_mib, bool v_transposed,
                       TensorScale ts_mode, bool fast, const std::string& note) {
    std::string why;
    const Format f = *parse_format(fname, &why);
    const size_t bytes = size_t(in_mib * 1024 * 1024);
    const int64_t d = 128;
    const int64_t n = int64_t(bytes / dtype_bytes(dtype));
    std::vector<int64_t> shape;
    int axis;
    if (v_transposed) {  // prefill V [B, S, H, D] blocked along S
      const int64_t h = 8, s = 4096;
      shape = {n / (s * h * d), s, h, d};
      axis = 1;
    } else {  // Q, K, a KV cache: [tokens * heads, D]
      shape = {n / d, d};
      axis = 1;
    }
    QuantizedGeometry geo;
    const Status gs = quantized_geometry(shape, axis, f, layout, &geo);
    if (!gs) {
      std::fprintf(stderr, "bench: %s\n", gs.message.c_str());
      return;
    }
    Inputs in;
    make_inputs(in, bytes, dtype);
    uint8_t *codes, *scales;
    float* ts;
    BENCH_CUDA(cudaMalloc(&codes, geo.code_bytes));
    BENCH_CUDA(cudaMalloc(&scales, geo.scale_bytes));
    BENCH_CUDA(cudaMalloc(&ts, sizeof(float)));
    const float given = 448.0f * 6.0f / 256.0f;
    BENCH_CUDA(cudaMemcpy(ts, &given, sizeof given, cudaMemcpyHostToDevice));
    QuantizeOptions qo;
    qo.tensor_scale = ts_mode;
    qo.fast_codecs = fast;
    qo.rows_kernel = opt.rows_kernel == "direct"   ? RowsKernel::Direct
                     : opt.rows_kernel == "staged" ? RowsKernel::Staged
                                                   : RowsKernel::Auto;
    Status st;
    const double ms = timer.median_ms(opt.warmup, opt.runs, [&](int i) {
      st = quantize(in.bufs[i % in.bufs.size()], dtype, shape, {}, axis, f, layout, {codes, scales, ts}, nullptr, qo);
    }, opt.calls);
    if (!st) std::fprintf(stderr, "bench: quantize: %s\n", st.message.c_str());
    Result r;
    r.op = v_transposed ? "quantize_v" : "quantize";
    r.format = fname;
    if (f.tensor_scale) r.format += ts_mode == TensorScale::Compute ? "+amax" : "+given";
    r.dtype = dtype_name(dtype);
    r.layout = layout == ScaleLayout::Tiled128x4 ? "tiled" : "rowmajor";
    r.shape = "[";
    for (size_t i = 0; i < shape.size(); ++i) r.shape += (i ? "," : "") + std::to_string(shape[i]);
    r.shape += "]";
    r.in_mib = in_mib;
    r.bytes = double(bytes) + double(geo.code_bytes + geo.scale_bytes) + (f.tensor_scale ? 4.0 : 0.0);
    r.ms = ms;
    r.gbps = r.bytes / (ms * 1e-3) / 1e9;
    set_pct(r);
    r.note = note;
    print(r);
    results.push_back(r);
    cudaFree(codes), cudaFree(scales), cudaFree(ts);
  }

  void dequantize_config(const char* fname, DType dtype, double out_mib) {
    const Format f = *parse_format(fname);
    const size_t bytes = size_t(out_mib * 1024 * 1024);
    const int64_t n = int64_t(bytes / dtype_bytes(dtype));
    const std::vector<int64_t> shape = {n / 128, 128};
    QuantizedGeometry geo;
    if (!quantized_geometry(shape, 1, f, ScaleLayout::Tiled128x4, &geo)) return;
    void* x;
    uint8_t *codes, *scales;
    float* ts;
    BENCH_CUDA(cudaMalloc(&x, bytes));
    BENCH_CUDA(cudaMalloc(&codes, geo.code_bytes));
    BENCH_CUDA(cudaMalloc(&scales, geo.scale_bytes));
    BENCH_CUDA(cudaMalloc(&ts, sizeof(float)));
    fill_kernel<<<4096, 256>>>(x, dtype, size_t(n), 99);
    const Status qs = quantize(x, dtype, shape, {}, 1, f, ScaleLayout::Tiled128x4, {codes, scales, ts}, nullptr);
    if (!qs) std::fprintf(stderr, "bench: %s\n", qs.message.c_str());
    Status st;
    const double ms = timer.median_ms(opt.warmup, opt.runs, [&](int) {
      st = dequantize({codes, scales, ts}, f, ScaleLayout::Tiled128x4, x, dtype, shape, {}, 1, nullptr);
    }, opt.calls);
    if (!st) std::fprintf(stderr, "bench: dequantize: %s\n", st.message.c_str());
    Result r;
    r.op = "dequantize";
    r.format = fname;
    r.dtype = dtype_name(dtype);
    r.layout = "tiled";
    r.shape = "[" + std::to_string(shape[0]) + ",128]";
    r.in_mib = out_mib;
    r.bytes = double(bytes) + double(geo.code_bytes + geo.scale_bytes);
    r.ms = ms;
    r.gbps = r.bytes / (ms * 1e-3) / 1e9;
    set_pct(r);
    r.note = "output size";
    print(r);
    results.push_back(r);
    cudaFree(x), cudaFree(codes), cudaFree(scales), cudaFree(ts);
  }

  void amax_config(DType dtype, double in_mib) {
    const size_t bytes = size_t(in_mib * 1024 * 1024);
    const std::vector<int64_t> shape = {int64_t(bytes / dtype_bytes(dtype))};
    Inputs in;
    make_inputs(in, bytes, dtype);
    float* amax;
    BENCH_CUDA(cudaMalloc(&amax, sizeof(float)));
    const double ms = timer.median_ms(opt.warmup, opt.runs, [&](int i) {
      tensor_amax(in.bufs[i % in.bufs.size()], dtype, shape, {}, amax, nullptr);
    }, opt.calls);
    Result r;
    r.op = "amax";
    r.format = "-";
    r.dtype = dtype_name(dtype);
    r.layout = "-";
    r.shape = "[" + std::to_string(shape[0]) + "]";
    r.in_mib = in_mib;
    r.bytes = double(bytes);
    r.ms = ms;
    r.gbps = r.bytes / (ms * 1e-3) / 1e9;
    set_pct(r);
    r.note = "read only";
    print(r);
    results.push_back(r);
    cudaFree(amax);
  }

  void write_json() {
    if (opt.json.empty()) return;
    FILE* f = std::fopen(opt.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "bench: cannot write %s\n", opt.json.c_str());
      return;
    }
    std::fprintf(f, "{\n  \"device\": \"%s\",\n  \"sm_count\": %d,\n  \"l2_bytes\": %d,\n", prop.name,
                 prop.multiProcessorCount, prop.l2CacheSize);
    std::fprintf(f, "  \"copy_gbps\": %.1f,\n  \"runs\": %d,\n  \"warmup\": %d,\n  \"calls\": %d,\n  \"rows_kernel\": \"%s\",\n",
                 copy_gbps, opt.runs, opt.warmup, opt.calls, opt.rows_kernel.c_str());
    std::fprintf(f, "  \"copy_gbps_by_mib\": {");
    for (auto it = copy_at.begin(); it != copy_at.end(); ++it)
      std::fprintf(f, "%s\"%.0f\": %.1f", it == copy_at.begin() ? "" : ", ", it->first, it->second);
    std::fprintf(f, "},\n");
    std::fprintf(f, "  \"bytes_counted\": \"input read once + codes, scales, tensor scale written once\",\n");
    std::fprintf(f, "  \"results\": [\n");
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::fprintf(f,
                   "    {\"op\": \"%s\", \"format\": \"%s\", \"dtype\": \"%s\", \"scales\": \"%s\", \"shape\": \"%s\", "
                   "\"mib\": %.0f, \"bytes\": %.0f, \"ms\": %.5f, \"gbps\": %.1f, \"pct_of_copy\": %.1f, "
                   "\"pct_of_same_size_copy\": %.1f, \"note\": \"%s\"}%s\n",
                   r.op.c_str(), r.format.c_str(), r.dtype.c_str(), r.layout.c_str(), r.shape.c_str(), r.in_mib, r.bytes,
                   r.ms, r.gbps, r.pct, r.pct_same, r.note.c_str(), i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
    std::printf("\nwrote %s\n", opt.json.c_str());
  }

  void run_quantize() {
    BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
    measure_copy();
    const char* formats[] = {"mxfp8", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4"};
    const auto T = ScaleLayout::Tiled128x4, R = ScaleLayout::RowMajor;
    if (!opt.formats.empty()) {
      for (const std::string& f : opt.formats) {
        const char* note = std::strchr(f.c_str(), '/') && std::strncmp(f.c_str(), "mx", 2) ? "custom" : "";
        for (double mib : opt.sizes_mib) {
          quantize_config(f.c_str(), DType::BF16, T, mib, false, TensorScale::Given, true, note);
          if (f == "nvfp4") quantize_config(f.c_str(), DType::BF16, T, mib, false, TensorScale::Compute, true, note);
        }
        if (opt.quick) continue;
        for (DType dtype : {DType::BF16, DType::F16, DType::F32})
          for (bool v : {false, true})
            for (ScaleLayout layout : {T, R})
              quantize_config(f.c_str(), dtype, layout, 1024, v, TensorScale::Given, true, v ? "V blocked along S" : note);
        for (DType dtype : {DType::BF16, DType::F16, DType::F32}) dequantize_config(f.c_str(), dtype, 1024);
      }
      return;
    }
    for (double mib : opt.sizes_mib) {
      for (const char* f : formats) {
        quantize_config(f, DType::BF16, T, mib, false, TensorScale::Compute, true, "");
        if (!std::strcmp(f, "nvfp4")) quantize_config(f, DType::BF16, T, mib, false, TensorScale::Given, true, "");
      }
      amax_config(DType::BF16, mib);
    }
    if (opt.quick) return;
    // Every named format x input type x block axis x scale layout at 1 GiB (NVFP4 with a given tensor
    // scale: the kernel; its amax pass is in the sweep above), custom formats, the Element::encode route
    // for comparison, and dequantization of every named format to every output type.
    const double mib = 1024;
    for (const char* f : formats) {
      std::printf("\n");
      for (DType dtype : {DType::BF16, DType::F16, DType::F32})
        for (bool v : {false, true})
          for (ScaleLayout layout : {T, R})
            quantize_config(f, dtype, layout, mib, v, TensorScale::Given, true, v ? "V blocked along S" : "");
    }
    std::printf("\n");
    for (const char* f : {"mxfp4/floor", "e3m2/k16/ue8m0", "e2m3/k16/ue4m3", "int4/k32/ue8m0", "e3m3/k32/ue8m0"})
      quantize_config(f, DType::BF16, T, mib, false, TensorScale::Given, true, std::strchr(f, '/') && std::strncmp(f, "mx", 2) ? "custom" : "");
    for (const char* f : {"mxfp8", "mxfp4", "nvfp4"})
      quantize_config(f, DType::BF16, T, mib, false, TensorScale::Given, false, "Element::encode route");
    std::printf("\n");
    for (const char* f : formats)
      for (DType dtype : {DType::BF16, DType::F16, DType::F32}) dequantize_config(f, dtype, mib);
  }
};

}  // namespace

int bench_quantize(const QuantizeBenchOptions& opt) {
  if (!cuda_gpu_found("mxattn bench quantize")) return 1;
  Bench b{opt};  // (its EventTimer makes CUDA events: after the check)
  b.run_quantize();
  b.write_json();
  return 0;
}

}  // namespace mxattn::cli
