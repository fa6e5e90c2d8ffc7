// The GPU half of `mxattn demo`: quantize Q, K, V on the GPU, check the bytes against the CPU
// reference, then run the prefill attention kernel on them and measure its own error.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "commands.h"
#include "mxattn/api/attention.h"
#include "mxattn/api/device_buffer.h"
#include "mxattn/api/quantize.h"
#include "mxattn/reference/quantize.h"

namespace mxattn::cli {
namespace {

// Event-timed milliseconds of one enqueue on the default stream.
template <typename F>
float time_ms(F&& enqueue) {
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  cudaEventRecord(a);
  enqueue();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a), cudaEventDestroy(b);
  return ms;
}

// GPU-quantized copy of a tensor, and whether its bytes equal the CPU reference's.
struct GpuQuantized {
  DeviceQuantized dev;
  bool identical = false;
  float ms = 0;
};

GpuQuantized quantize_on_gpu(const std::vector<float>& x, const std::vector<int64_t>& shape, int axis,
                             const Format& f, std::string* error) {
  const QuantizedTensor cpu = quantize(x.data(), shape, {}, axis, f);
  GpuQuantized g{DeviceQuantized(cpu.codes.size(), cpu.scales.size())};
  DeviceArray<float> dx(x);
  g.dev.codes.fill_bytes(0xAB);  // poison: every byte must be written
  g.dev.scales.fill_bytes(0xAB);
  Status st = quantize(dx.data(), DType::F32, shape, {}, axis, f, ScaleLayout::RowMajor, g.dev.buffers(), nullptr);
  g.ms = time_ms([&] {  // a second, timed launch: the first pays for loading the module
    st = quantize(dx.data(), DType::F32, shape, {}, axis, f, ScaleLayout::RowMajor, g.dev.buffers(), nullptr);
  });
  if (!st.ok) {
    *error = st.message;
    return g;
  }
  g.identical = g.dev.codes.download() == cpu.codes && g.dev.scales.download() == cpu.scales &&
                (!f.tensor_scale || g.dev.tensor_scale.download()[0] == cpu.tensor_scale);
  return g;
}

double bf16_value(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

bool gpu_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

void demo_gpu(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
              const std::vector<float>& v, const std::vector<DemoResult>& cpu, const AttentionResult& ref) {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("\nGPU (%s): quantize Q, K, V on the GPU (bytes against the CPU reference), then the prefill kernel\n",
              prop.name);
  std::printf("%-16s %10s %12s %12s %12s %9s\n", "format", "quantize", "quantize_ms", "kernel_ms", "kernel_err",
              "cosine");
  const std::vector<int64_t> q_shape{s.batch, s.seq_q, s.heads_q, s.head_dim};
  const std::vector<int64_t> kv_shape{s.batch, s.seq_kv, s.heads_kv, s.head_dim};
  for (const DemoResult& r : cpu) {
    std::string error;
    GpuQuantized gq = quantize_on_gpu(q, q_shape, 3, r.format, &error);
    GpuQuantized gk = quantize_on_gpu(k, kv_shape, 3, r.format, &error);
    GpuQuantized gv = quantize_on_gpu(v, kv_shape, 1, r.format, &error);
    if (!error.empty()) {
      std::printf("%-16s error: %s\n", format_name(r.format).c_str(), error.c_str());
      continue;
    }
    const bool identical = gq.identical && gk.identical && gv.identical;

    PrefillArgs args;
    args.shape = s;
    args.q_mx = MxOperand::contiguous(r.format, gq.dev.const_buffers(), s.batch, s.seq_q, s.heads_q, s.head_dim);
    args.k = MxOperand::contiguous(r.format, gk.dev.const_buffers(), s.batch, s.seq_kv, s.heads_kv, s.head_dim);
    args.v = MxOperand::contiguous(r.format, gv.dev.const_buffers(), s.batch, s.heads_kv, s.head_dim, s.seq_kv);
    DeviceArray<uint16_t> out(size_t(s.q_elems()));
    out.fill_bytes(0xFF);  // BF16 NaN: an unwritten output cannot pass
    args.out = DenseOutput::contiguous(out.data(), DType::BF16, s.seq_q, s.heads_q, s.head_dim);
    Status st;
    attention_prefill(args, nullptr);  // warm-up
    const float kernel_ms = time_ms([&] { st = attention_prefill(args, nullptr); });
    if (!st.ok || cudaDeviceSynchronize() != cudaSuccess) {
      std::printf("%-16s attention error: %s\n", format_name(r.format).c_str(),
                  st.ok ? cudaGetErrorString(cudaGetLastError()) : st.message.c_str());
      continue;
    }
    std::vector<double> got;
    for (uint16_t b : out.download()) got.push_back(bf16_value(b));
    // The kernel's own error: against FP64 attention on the same dequantized inputs.
    const ErrorStats own = compare(got, r.result.out);
    const ErrorStats total = compare(got, ref.out);
    std::printf("%-16s %10s %12.3f %12.3f %12.3e %9.5f\n", format_name(r.format).c_str(),
                identical ? "identical" : "DIFFERS", gq.ms + gk.ms + gv.ms, kernel_ms, own.rel_l2, total.cosine);
  }
}

}  // namespace mxattn::cli
