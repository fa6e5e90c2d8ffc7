// What a launch needs to know of the device and of a kernel, asked of the driver once and remembered, so
// that a call adds no driver queries: per device its compute capability and SM count; per (kernel,
// device) the kernel's shared-memory limit raised and its resident blocks per SM. (A call's host time
// before its first launch is GPU time lost where the caller waits on each call: bench/prefill_notes.md v18.)
#pragma once
#include <cstddef>

#include <cuda_runtime_api.h>

namespace mxattn::kernels {

struct DeviceInfo {
  int id = 0, major = 0, minor = 0, sms = 0;
};
// The current device's.
cudaError_t current_device(DeviceInfo* info);

struct Launchable {
  int sms = 0, blocks_per_sm = 0;
  bool programmatic = false;  // sm_90+: programmatic dependent launches
  bool clusters = false;      // sm_90+ and the kernel's code made for it (its PTX target): thread block clusters
  cudaError_t error = cudaSuccess;
};
// `kernel` launched with `threads` threads and `smem` bytes of dynamic shared memory on the current
// device; the first call raises its shared-memory limit to `smem` (a kernel's later calls must not ask
// for more) and asks the occupancy calculator.
Launchable launchable(const void* kernel, int threads, size_t smem);

}  // namespace mxattn::kernels
