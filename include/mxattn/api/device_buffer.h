// Device memory owned by a host object: the one RAII buffer the CLI, the tests and the benchmarks
// share. Plain cudaMalloc (never managed memory); ok() tells whether the allocation worked.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mxattn/api/quantize.h"
#include "mxattn/reference/quantize.h"

namespace mxattn {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t count) : count_(count) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(count, 1) * sizeof(T)) != cudaSuccess) ptr_ = nullptr;
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : ptr_(o.ptr_), count_(o.count_) { o.ptr_ = nullptr, o.count_ = 0; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(ptr_, o.ptr_), std::swap(count_, o.count_);
    return *this;
  }

  bool ok() const { return ptr_ != nullptr; }
  T* data() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  bool upload(const std::vector<T>& host) {
    return ok() && host.size() <= count_ &&
           cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess;
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (ok()) cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost);
    return host;
  }
  // Fill every byte, e.g. with a poison pattern before a launch that must overwrite all of it.
  bool fill_bytes(uint8_t value) { return ok() && cudaMemset(ptr_, value, std::max<size_t>(bytes(), 1)) == cudaSuccess; }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// A quantized tensor's three device buffers: codes, scales and the FP32 tensor scale.
struct DeviceQuantized {
  DeviceArray<uint8_t> codes, scales;
  DeviceArray<float> tensor_scale{1};

  DeviceQuantized(size_t code_bytes, size_t scale_bytes) : codes(code_bytes), scales(scale_bytes) {}
  // An upload of a CPU-quantized tensor.
  explicit DeviceQuantized(const QuantizedTensor& q) : codes(q.codes), scales(q.scales) {
    tensor_scale.upload({q.tensor_scale});
  }
  bool ok() const { return codes.ok() && scales.ok() && tensor_scale.ok(); }
  QuantizedBuffers buffers() { return {codes.data(), scales.data(), tensor_scale.data()}; }
  QuantizedConstBuffers const_buffers() const { return {codes.data(), scales.data(), tensor_scale.data()}; }
};

}  // namespace mxattn
