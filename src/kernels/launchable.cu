// Device and kernel facts asked of the driver once (launchable.h).
#include "mxattn/kernels/launchable.h"

#include <map>
#include <mutex>
#include <utility>

namespace mxattn::kernels {

cudaError_t current_device(DeviceInfo* info) {
  static std::mutex mu;
  static std::map<int, DeviceInfo> known;
  int dev = 0;
  if (const cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  const std::lock_guard<std::mutex> lock(mu);
  if (const auto it = known.find(dev); it != known.end()) return *info = it->second, cudaSuccess;
  DeviceInfo d;
  d.id = dev;
  cudaError_t e = cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess) return e;  // failures are asked again
  known.emplace(dev, d);
  return *info = d, cudaSuccess;
}

Launchable launchable(const void* kernel, int threads, size_t smem) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, Launchable> known;
  DeviceInfo d;
  if (const cudaError_t e = current_device(&d); e != cudaSuccess) return {0, 0, false, false, e};
  const std::lock_guard<std::mutex> lock(mu);
  if (const auto it = known.find({kernel, d.id}); it != known.end()) return it->second;
  Launchable l;
  l.sms = d.sms;
  l.programmatic = d.major >= 9;
  l.error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (l.error == cudaSuccess) l.error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&l.blocks_per_sm, kernel, threads, smem);
  // (Code built for an older target has its cluster instructions compiled out, ptx/cluster.h.) A failed query
  // only leaves clusters off: the kernel still launches without them.
  if (d.major >= 9) {
    cudaFuncAttributes fa{};
    if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess) l.clusters = fa.ptxVersion >= 90;
    else (void)cudaGetLastError();  // (the query's own error, not the launch's)
  }
  if (l.error == cudaSuccess) known.emplace(std::make_pair(kernel, d.id), l);  // failures are asked again
  return l;
}

}  // namespace mxattn::kernels
