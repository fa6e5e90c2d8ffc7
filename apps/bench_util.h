// What every `mxattn bench` command shares: whether there is a GPU, a CUDA check that exits with the
// failing call, an event timer that takes the median of many runs after a warm-up, and the copy-bandwidth
// ceiling.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define BENCH_CUDA(expr)                                                           \
  do {                                                                             \
    const cudaError_t e_ = (expr);                                                 \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "mxattn bench: %s: %s\n", #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

namespace mxattn::cli {

// Asked before any other CUDA call: on a machine without a GPU or driver, the first call fails with
// the runtime's "driver version is insufficient", which does not say that there is no GPU.
inline bool cuda_gpu_found(const char* command) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0) return true;
  std::fprintf(stderr, "%s: no CUDA GPU found; the benchmarks need one (cudaGetDeviceCount: %s)\n", command,
               e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
  return false;
}

struct EventTimer {
  cudaEvent_t a, b;
  EventTimer() { cudaEventCreate(&a), cudaEventCreate(&b); }
  ~EventTimer() { cudaEventDestroy(a), cudaEventDestroy(b); }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // Median milliseconds per call of fn(i) after `warmup` untimed calls: `runs` timings, each around
  // `calls` back-to-back calls (calls > 1: the steady state of a loop of launches, where the host's
  // per-call work overlaps the previous call's GPU time; calls = 1 counts that host work as well).
  double median_ms(int warmup, int runs, const std::function<void(int)>& fn, int calls = 1) {
    for (int i = 0; i < warmup; ++i) fn(i);
    BENCH_CUDA(cudaDeviceSynchronize());
    std::vector<double> t;
    int next = warmup;
    for (int i = 0; i < runs; ++i) {
      cudaEventRecord(a);
      for (int c = 0; c < calls; ++c) fn(next++);
      cudaEventRecord(b);
      BENCH_CUDA(cudaEventSynchronize(b));
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      t.push_back(ms / calls);
    }
    BENCH_CUDA(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

// The ceiling for memory-bound kernels: a 1 GiB device-to-device copy, bytes read + written, GB/s.
// The source is filled with non-zero bytes first (zeros can move faster than data).
inline double copy_bandwidth_gbps(EventTimer& timer, int warmup = 3, int runs = 20) {
  const size_t bytes = size_t(1) << 30;
  void *src, *dst;
  BENCH_CUDA(cudaMalloc(&src, bytes));
  BENCH_CUDA(cudaMalloc(&dst, bytes));
  BENCH_CUDA(cudaMemset(src, 0x5A, bytes));
  const double ms =
      timer.median_ms(warmup, runs, [&](int) { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice); });
  cudaFree(src), cudaFree(dst);
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

}  // namespace mxattn::cli
