// GPU part of the Python module: the quantize / dequantize / scale-layout launchers and prefill
// attention over DLPack tensors (torch, CuPy, JAX CUDA arrays are read in place, no copies). python/bindings.cpp calls
// mxattn_bind_gpu(m) when the module is built with CUDA; the functions live in the submodule `gpu`.
//
// Outputs are either given (the *_into functions, any DLPack CUDA tensor of the right size) or
// allocated here with cudaMalloc and returned, without a copy, as tensors of `framework`: "auto"
// (torch when torch is imported, else a bare DLPack-capable array), "torch", "cupy", "jax", "dlpack". `stream` is a cudaStream_t as an integer (torch: stream.cuda_stream); 0 is
// the legacy default stream.
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mxattn/api/attention.h"
#include "mxattn/api/quantize.h"
#include "mxattn/format/format.h"
#include "bindings_args.h"

namespace nb = nanobind;

namespace {

using mxattn::DType;
using namespace mxattn_bindings;
using CudaArray = nb::ndarray<nb::device::cuda>;

void check_cuda(cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + cudaGetErrorString(e));
}

DType dtype_of(const CudaArray& a, const char* what) {
  const nb::dlpack::dtype t = a.dtype();
  if (t.lanes == 1 && t.code == uint8_t(nb::dlpack::dtype_code::Float) && t.bits == 32) return DType::F32;
  if (t.lanes == 1 && t.code == uint8_t(nb::dlpack::dtype_code::Float) && t.bits == 16) return DType::F16;
  if (t.lanes == 1 && t.code == uint8_t(nb::dlpack::dtype_code::Bfloat) && t.bits == 16) return DType::BF16;
  throw nb::type_error((std::string(what) + ": dtype must be float32, float16 or bfloat16").c_str());
}

std::vector<int64_t> shape_of(const CudaArray& a) {
  std::vector<int64_t> s(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) s[i] = int64_t(a.shape(i));
  return s;
}
std::vector<int64_t> strides_of(const CudaArray& a) {
  std::vector<int64_t> s(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) s[i] = a.stride(i);  // elements
  return s;
}

cudaStream_t stream_arg(uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

void need_bytes(const CudaArray& a, size_t bytes, const char* what) {
  if (a.nbytes() < bytes)
    throw nb::value_error((std::string(what) + ": holds " + std::to_string(a.nbytes()) + " bytes, needs " +
                           std::to_string(bytes))
                              .c_str());
  if (a.ndim() > 1) {  // must be one dense block of bytes
    int64_t expect = int64_t(a.itemsize());
    for (int d = int(a.ndim()) - 1; d >= 0; --d) {
      if (a.shape(d) > 1 && a.stride(d) * int64_t(a.itemsize()) != expect)
        throw nb::value_error((std::string(what) + ": must be contiguous").c_str());
      expect *= int64_t(a.shape(d));
    }
  }
}

// Device memory from cudaMalloc, owned by a capsule that frees it; viewed as a CudaArray here and
// handed to Python as a tensor of the caller's framework.
struct DeviceAlloc {
  void* ptr = nullptr;
  nb::capsule owner;
  std::vector<size_t> shape;
  nb::dlpack::dtype dtype;
  int device = 0;

  DeviceAlloc(std::vector<size_t> s, nb::dlpack::dtype dt) : shape(std::move(s)), dtype(dt) {
    size_t count = 1;
    for (size_t n : shape) count *= n;
    const cudaError_t e = cudaMalloc(&ptr, std::max<size_t>(count, 1) * dt.bits / 8);
    if (e != cudaSuccess) throw std::runtime_error(std::string("cudaMalloc: ") + cudaGetErrorString(e));
    owner = nb::capsule(ptr, [](void* q) noexcept { cudaFree(q); });
    cudaGetDevice(&device);
  }
  CudaArray view() const {
    return CudaArray(ptr, shape.size(), shape.data(), owner, nullptr, dtype, nb::device::cuda::value, device);
  }
  // framework: "torch", "cupy", "jax", "dlpack" (a bare DLPack-capable array), or "auto" (torch when
  // it is imported already, else dlpack).
  nb::object to_python(const std::string& framework) const {
    std::string fw = framework;
    if (fw == "auto") fw = nb::cast<nb::dict>(nb::module_::import_("sys").attr("modules")).contains("torch") ? "torch" : "dlpack";
    const int cuda = nb::device::cuda::value;
    if (fw == "torch")
      return nb::cast(nb::ndarray<nb::pytorch, nb::device::cuda>(ptr, shape.size(), shape.data(), owner, nullptr,
                                                                   dtype, cuda, device));
    if (fw == "cupy")
      return nb::cast(nb::ndarray<nb::cupy, nb::device::cuda>(ptr, shape.size(), shape.data(), owner, nullptr, dtype,
                                                                cuda, device));
    if (fw == "jax")
      return nb::cast(nb::ndarray<nb::jax, nb::device::cuda>(ptr, shape.size(), shape.data(), owner, nullptr, dtype,
                                                               cuda, device));
    if (fw == "dlpack") return nb::cast(view());
    throw nb::value_error(("framework: '" + framework + "' must be auto, torch, cupy, jax or dlpack").c_str());
  }
};

nb::dlpack::dtype dlpack_dtype(DType t) {
  if (t == DType::F32) return nb::dtype<float>();
  return {uint8_t(t == DType::F16 ? nb::dlpack::dtype_code::Float : nb::dlpack::dtype_code::Bfloat), 16, 1};
}

nb::dict geometry_dict(const mxattn::QuantizedGeometry& g) {
  nb::dict d;
  d["stored_shape"] = g.stored_shape;
  d["block_axis"] = g.block_axis;
  d["rows"] = g.rows;
  d["cols"] = g.cols;
  d["row_bytes"] = g.row_bytes;
  d["blocks_per_row"] = g.blocks_per_row;
  d["code_bytes"] = g.code_bytes;
  d["scale_bytes"] = g.scale_bytes;
  return d;
}

mxattn::QuantizedGeometry geometry(const std::vector<int64_t>& shape, int block_axis, const mxattn::Format& f,
                                   mxattn::ScaleLayout layout) {
  mxattn::QuantizedGeometry g;
  check(mxattn::quantized_geometry(shape, block_axis, f, layout, &g));
  return g;
}

void quantize_into(const CudaArray& x, CudaArray codes, CudaArray scales, std::optional<CudaArray> tensor_scale,
                   const std::string& format, int block_axis, const std::string& layout, bool tensor_scale_given,
                   bool fast_codecs, uintptr_t stream) {
  const mxattn::Format f = format_arg(format);
  const mxattn::ScaleLayout l = layout_arg(layout);
  const auto shape = shape_of(x);
  const auto g = geometry(shape, block_axis, f, l);
  need_bytes(codes, g.code_bytes, "codes");
  need_bytes(scales, g.scale_bytes, "scales");
  float* ts = nullptr;
  if (f.tensor_scale) {
    if (!tensor_scale) throw nb::value_error("tensor_scale: the format has a tensor scale; pass a float32 tensor of one element");
    if (dtype_of(*tensor_scale, "tensor_scale") != DType::F32) throw nb::type_error("tensor_scale: must be float32");
    need_bytes(*tensor_scale, sizeof(float), "tensor_scale");
    ts = static_cast<float*>(tensor_scale->data());
  }
  mxattn::QuantizeOptions opt;
  opt.tensor_scale = tensor_scale_given ? mxattn::TensorScale::Given : mxattn::TensorScale::Compute;
  opt.fast_codecs = fast_codecs;
  check(mxattn::quantize(x.data(), dtype_of(x, "x"), shape, strides_of(x), block_axis, f, l,
                         {static_cast<uint8_t*>(codes.data()), static_cast<uint8_t*>(scales.data()), ts},
                         stream_arg(stream), opt));
}

nb::tuple quantize(const CudaArray& x, const std::string& format, int block_axis, const std::string& layout,
                   std::optional<float> tensor_scale, bool fast_codecs, uintptr_t stream, const std::string& framework) {
  const mxattn::Format f = format_arg(format);
  const auto g = geometry(shape_of(x), block_axis, f, layout_arg(layout));
  std::vector<size_t> code_shape(g.stored_shape.begin(), g.stored_shape.end());
  code_shape.back() = g.row_bytes;
  const DeviceAlloc codes(code_shape, nb::dtype<uint8_t>()), scales({g.scale_bytes}, nb::dtype<uint8_t>()),
      ts({1}, nb::dtype<float>());
  const float given = tensor_scale.value_or(1.0f);
  if (tensor_scale || !f.tensor_scale) {
    const cudaError_t e = cudaMemcpyAsync(ts.ptr, &given, sizeof(float), cudaMemcpyHostToDevice, stream_arg(stream));
    if (e != cudaSuccess) throw std::runtime_error(std::string("cudaMemcpyAsync: ") + cudaGetErrorString(e));
    cudaStreamSynchronize(stream_arg(stream));  // `given` lives on this stack frame
  }
  quantize_into(x, codes.view(), scales.view(), ts.view(), format, block_axis, layout, tensor_scale.has_value(),
                fast_codecs, stream);
  return nb::make_tuple(codes.to_python(framework), scales.to_python(framework), ts.to_python(framework));
}

void dequantize_into(const CudaArray& codes, const CudaArray& scales, std::optional<CudaArray> tensor_scale,
                     CudaArray out, const std::string& format, int block_axis, const std::string& layout,
                     uintptr_t stream) {
  const mxattn::Format f = format_arg(format);
  const mxattn::ScaleLayout l = layout_arg(layout);
  const auto shape = shape_of(out);
  const auto g = geometry(shape, block_axis, f, l);
  need_bytes(codes, g.code_bytes, "codes");
  need_bytes(scales, g.scale_bytes, "scales");
  const float* ts = nullptr;
  if (f.tensor_scale) {
    if (!tensor_scale) throw nb::value_error("tensor_scale: the format has a tensor scale");
    need_bytes(*tensor_scale, sizeof(float), "tensor_scale");
    ts = static_cast<const float*>(tensor_scale->data());
  }
  check(mxattn::dequantize({static_cast<const uint8_t*>(codes.data()), static_cast<const uint8_t*>(scales.data()), ts},
                           f, l, out.data(), dtype_of(out, "out"), shape, strides_of(out), block_axis,
                           stream_arg(stream)));
}

nb::object dequantize(const CudaArray& codes, const CudaArray& scales, std::optional<CudaArray> tensor_scale,
                      const std::vector<int64_t>& shape, const std::string& format, int block_axis,
                      const std::string& layout, const std::string& dtype, uintptr_t stream,
                      const std::string& framework) {
  const DeviceAlloc out(std::vector<size_t>(shape.begin(), shape.end()), dlpack_dtype(dtype_arg(dtype)));
  dequantize_into(codes, scales, tensor_scale, out.view(), format, block_axis, layout, stream);
  return out.to_python(framework);
}

// An MX operand of prefill attention as gpu.quantize returns it: (codes, scales, tensor_scale), row-major
// scales, quantized from a tensor of `shape` [B, S, H, D] along `block_axis` (3: Q, K; 1: V).
mxattn::MxOperand mx_operand(const nb::handle& arg, const std::string& format, const std::vector<int64_t>& shape,
                             int block_axis, const char* what) {
  const std::string n(what);
  nb::tuple t;
  if (!nb::try_cast(arg, t) || t.size() != 3)
    throw nb::type_error((n + ": must be (codes, scales, tensor_scale) as gpu.quantize returns").c_str());
  const auto codes = nb::cast<CudaArray>(t[0]), scales = nb::cast<CudaArray>(t[1]), ts = nb::cast<CudaArray>(t[2]);
  const mxattn::Format f = format_arg(format);
  const auto g = geometry(shape, block_axis, f, mxattn::ScaleLayout::RowMajor);
  if (codes.ndim() != 4)
    throw nb::value_error(
        (n + ": codes must be 4-D " + (block_axis == 3 ? "[B, S, H, row_bytes]" : "[B, H, D, row_bytes]")).c_str());
  for (int d = 0; d < 4; ++d)
    if (int64_t(codes.shape(d)) != (d < 3 ? g.stored_shape[d] : int64_t(g.row_bytes)))
      throw nb::value_error(
          (n + ": codes shape does not match the other operands (dim " + std::to_string(d) + ")").c_str());
  need_bytes(codes, g.code_bytes, (n + " codes").c_str());
  need_bytes(scales, g.scale_bytes, (n + " scales").c_str());
  if (f.tensor_scale && dtype_of(ts, (n + " tensor_scale").c_str()) != DType::F32)
    throw nb::type_error((n + ": tensor_scale must be float32").c_str());
  const mxattn::QuantizedConstBuffers buffers{static_cast<const uint8_t*>(codes.data()),
                                              static_cast<const uint8_t*>(scales.data()),
                                              static_cast<const float*>(ts.data())};
  return mxattn::MxOperand::contiguous(f, buffers, g.stored_shape[0], g.stored_shape[1], g.stored_shape[2],
                                       g.stored_shape[3]);
}

// A packed batch's offsets (PrefillArgs::cu_seqlens_q, ...): a 1-D int32 CUDA array of `n` entries.
const int32_t* offsets_arg(const nb::handle& x, size_t n, const char* what) {
  CudaArray a;
  if (!nb::try_cast(x, a) || a.ndim() != 1 || a.dtype() != nb::dtype<int32_t>() || a.stride(0) != 1)
    throw nb::type_error((std::string(what) + ": must be a contiguous 1-D int32 CUDA array").c_str());
  if (a.shape(0) != n)
    throw nb::value_error((std::string(what) + ": must have " + std::to_string(n) + " entries, got " +
                           std::to_string(a.shape(0))).c_str());
  return static_cast<const int32_t*>(a.data());
}

// The longest of a packed batch's lengths: cu[b + 1] - cu[b], or used[b] (copied from the device: a sync).
int64_t longest(const int32_t* cu, const int32_t* used, size_t batch) {
  std::vector<int32_t> h(batch + 1), u(batch);
  check_cuda(cudaMemcpy(h.data(), cu, h.size() * 4, cudaMemcpyDeviceToHost));
  if (used) check_cuda(cudaMemcpy(u.data(), used, u.size() * 4, cudaMemcpyDeviceToHost));
  int64_t m = 1;
  for (size_t b = 0; b < batch; ++b) m = std::max<int64_t>(m, used ? u[b] : h[b + 1] - h[b]);
  return m;
}

// Prefill attention: q dense [B, S_q, H_q, D] (float16 / bfloat16) or MX along D; k MX along D
// [B, S_kv, H_kv, D]; v MX along S_kv (gpu.quantize of [B, S_kv, H_kv, D] with block_axis=1: codes
// [B, H_kv, D, row_bytes]). Returns (out [B, S_q, H_q, D] in out_dtype, lse [B, H_q, S_q] float32).
// A packed batch (cu_seqlens_q, cu_seqlens_kv, optionally seqused_kv; PrefillArgs): q, k, v and out a
// batch of one, [1, total, H, D]; lse [batch, H_q, max_seqlen_q], NaN past each sequence's length.
nb::tuple attention_prefill(const nb::handle& q, const nb::handle& k, const nb::handle& v, const std::string& q_format,
                            const std::string& k_format, const std::string& v_format, bool causal, double softmax_scale,
                            const std::string& kernel, const std::string& out_dtype, const nb::handle& cu_seqlens_q,
                            const nb::handle& cu_seqlens_kv, const nb::handle& seqused_kv, int64_t max_seqlen_q,
                            int64_t max_seqlen_kv, uintptr_t stream, const std::string& framework) {
  nb::tuple kt, vt;
  if (!nb::try_cast(k, kt) || kt.size() != 3 || !nb::try_cast(v, vt) || vt.size() != 3)
    throw nb::type_error("k, v: must be (codes, scales, tensor_scale) as gpu.quantize returns");
  const auto kc = nb::cast<CudaArray>(kt[0]), vc = nb::cast<CudaArray>(vt[0]);
  if (kc.ndim() != 4 || vc.ndim() != 4) throw nb::value_error("k, v: codes must be 4-D");
  mxattn::PrefillArgs a;
  a.shape.batch = int64_t(kc.shape(0));
  a.shape.seq_kv = int64_t(kc.shape(1));
  a.shape.heads_kv = int64_t(kc.shape(2));
  a.shape.head_dim = int64_t(vc.shape(2));
  const bool dense = !nb::isinstance<nb::tuple>(q);
  if (dense) {
    const auto qa = nb::cast<CudaArray>(q);
    if (qa.ndim() != 4 || qa.shape(3) != size_t(a.shape.head_dim) || qa.stride(3) != 1)
      throw nb::value_error("q: must be [B, S_q, H_q, D] with D contiguous");
    a.q_is_mx = false;
    a.q_dense.data = qa.data();
    a.q_dense.dtype = dtype_of(qa, "q");
    if (a.q_dense.dtype == DType::F32) throw nb::type_error("q: dense q must be float16 or bfloat16");
    for (int d = 0; d < 3; ++d) a.q_dense.strides[d] = qa.stride(d);
    a.shape.seq_q = int64_t(qa.shape(1));
    a.shape.heads_q = int64_t(qa.shape(2));
  } else {
    const auto qc = nb::cast<CudaArray>(nb::cast<nb::tuple>(q)[0]);
    if (qc.ndim() != 4) throw nb::value_error("q: codes must be 4-D [B, S_q, H_q, row_bytes]");
    a.shape.seq_q = int64_t(qc.shape(1));
    a.shape.heads_q = int64_t(qc.shape(2));
  }
  const int64_t B = a.shape.batch, D = a.shape.head_dim, total_q = a.shape.seq_q;
  if (!dense) a.q_mx = mx_operand(q, q_format, {B, a.shape.seq_q, a.shape.heads_q, D}, 3, "q");
  a.k = mx_operand(k, k_format, {B, a.shape.seq_kv, a.shape.heads_kv, D}, 3, "k");
  a.v = mx_operand(v, v_format, {B, a.shape.seq_kv, a.shape.heads_kv, D}, 1, "v");
  const bool packed = !cu_seqlens_q.is_none() || !cu_seqlens_kv.is_none();
  if (packed) {
    if (B != 1) throw nb::value_error("q, k, v: a packed batch (cu_seqlens_q, cu_seqlens_kv) is a batch of one");
    CudaArray cq;
    if (!nb::try_cast(cu_seqlens_q, cq) || cq.ndim() != 1 || cq.shape(0) < 2)
      throw nb::type_error("cu_seqlens_q: must be a 1-D int32 CUDA array of batch + 1 offsets");
    const size_t batch = cq.shape(0) - 1;
    a.cu_seqlens_q = offsets_arg(cu_seqlens_q, batch + 1, "cu_seqlens_q");
    a.cu_seqlens_kv = offsets_arg(cu_seqlens_kv, batch + 1, "cu_seqlens_kv");
    if (!seqused_kv.is_none()) a.seqused_kv = offsets_arg(seqused_kv, batch, "seqused_kv");
    a.shape.batch = int64_t(batch);
    a.shape.seq_q = max_seqlen_q > 0 ? max_seqlen_q : longest(a.cu_seqlens_q, nullptr, batch);
    a.shape.seq_kv = max_seqlen_kv > 0 ? max_seqlen_kv : longest(a.cu_seqlens_kv, a.seqused_kv, batch);
  } else if (!seqused_kv.is_none()) {
    throw nb::value_error("seqused_kv: only for a packed batch (cu_seqlens_q, cu_seqlens_kv)");
  }
  a.options.causal = causal;
  a.options.softmax_scale = softmax_scale;
  a.kernel = kernel_arg(kernel);
  const DType od = dtype_arg(out_dtype);
  if (od == DType::F32) throw nb::value_error("out_dtype: must be bf16 or f16");
  const DeviceAlloc out({size_t(B), size_t(total_q), size_t(a.shape.heads_q), size_t(D)}, dlpack_dtype(od)),
      lse({size_t(a.shape.batch), size_t(a.shape.heads_q), size_t(a.shape.seq_q)}, nb::dtype<float>());
  a.out = mxattn::DenseOutput::contiguous(out.ptr, od, total_q, a.shape.heads_q, D);
  a.lse = static_cast<float*>(lse.ptr);
  if (packed)  // NaN past each sequence's length
    check_cuda(cudaMemsetAsync(lse.ptr, 0xFF, lse.shape[0] * lse.shape[1] * lse.shape[2] * 4, stream_arg(stream)));
  check(mxattn::attention_prefill(a, stream_arg(stream)));
  return nb::make_tuple(out.to_python(framework), lse.to_python(framework));
}

}  // namespace

void mxattn_bind_gpu(nb::module_& m) {
  nb::module_ gpu = m.def_submodule("gpu", "CUDA quantize / dequantize / scale-layout kernels (DLPack tensors)");

  gpu.def(
      "quantized_geometry",
      [](const std::vector<int64_t>& shape, const std::string& format, int block_axis, const std::string& layout) {
        return geometry_dict(geometry(shape, block_axis, format_arg(format), layout_arg(layout)));
      },
      nb::arg("shape"), nb::arg("format"), nb::arg("block_axis") = -1, nb::arg("layout") = "rowmajor",
      "Sizes of the quantized tensor: stored_shape, rows, row_bytes, code_bytes, scale_bytes, ...");

  gpu.def("quantize", &quantize, nb::arg("x"), nb::arg("format"), nb::arg("block_axis") = -1,
          nb::arg("layout") = "rowmajor", nb::arg("tensor_scale") = nb::none(), nb::arg("fast_codecs") = true,
          nb::arg("stream") = 0, nb::arg("framework") = "auto",
          "Quantize a CUDA tensor (float32/float16/bfloat16, any strides). Returns (codes, scales, tensor_scale):\n"
          "codes [.., row_bytes] uint8 with the block axis last, scales uint8 in `layout`, tensor_scale float32[1]\n"
          "(S_enc: computed from the tensor's amax, or the given `tensor_scale`; 1 for formats without one).");

  gpu.def("quantize_into", &quantize_into, nb::arg("x"), nb::arg("codes"), nb::arg("scales"),
          nb::arg("tensor_scale").none() = nb::none(), nb::arg("format"), nb::arg("block_axis") = -1,
          nb::arg("layout") = "rowmajor", nb::arg("tensor_scale_given") = false, nb::arg("fast_codecs") = true,
          nb::arg("stream") = 0, "quantize() into given CUDA buffers (no allocation).");

  gpu.def("dequantize", &dequantize, nb::arg("codes"), nb::arg("scales"), nb::arg("tensor_scale").none(),
          nb::arg("shape"), nb::arg("format"), nb::arg("block_axis") = -1, nb::arg("layout") = "rowmajor",
          nb::arg("dtype") = "f32", nb::arg("stream") = 0, nb::arg("framework") = "auto",
          "Decode to a new CUDA tensor of the source `shape` and `dtype` (f32, f16, bf16).");

  gpu.def("dequantize_into", &dequantize_into, nb::arg("codes"), nb::arg("scales"), nb::arg("tensor_scale").none(),
          nb::arg("out"), nb::arg("format"), nb::arg("block_axis") = -1, nb::arg("layout") = "rowmajor",
          nb::arg("stream") = 0, "Decode into `out` (any strides; its shape is the source shape).");

  gpu.def(
      "convert_scale_layout",
      [](const CudaArray& src, size_t rows, size_t cols, const std::string& from, const std::string& to,
         uintptr_t stream, const std::string& framework) {
        const mxattn::ScaleShape s{rows, cols};
        const auto lf = layout_arg(from), lt = layout_arg(to);
        need_bytes(src, mxattn::scale_bytes(lf, s), "src");
        const DeviceAlloc dst({mxattn::scale_bytes(lt, s)}, nb::dtype<uint8_t>());
        check(mxattn::convert_scale_layout(static_cast<const uint8_t*>(src.data()), lf, static_cast<uint8_t*>(dst.ptr),
                                           lt, s, stream_arg(stream)));
        return dst.to_python(framework);
      },
      nb::arg("src"), nb::arg("rows"), nb::arg("cols"), nb::arg("src_layout"), nb::arg("dst_layout"),
      nb::arg("stream") = 0, nb::arg("framework") = "auto", "Scales of a [rows, cols] block grid from one layout to the other (padding zero).");

  gpu.def("attention_prefill", &attention_prefill, nb::arg("q"), nb::arg("k"), nb::arg("v"),
          nb::arg("q_format") = "mxfp8", nb::arg("k_format") = "mxfp8", nb::arg("v_format") = "mxfp8",
          nb::arg("causal") = false, nb::arg("softmax_scale") = 0.0, nb::arg("kernel") = "auto",
          nb::arg("out_dtype") = "bf16", nb::arg("cu_seqlens_q") = nb::none(), nb::arg("cu_seqlens_kv") = nb::none(),
          nb::arg("seqused_kv") = nb::none(), nb::arg("max_seqlen_q") = 0, nb::arg("max_seqlen_kv") = 0,
          nb::arg("stream") = 0, nb::arg("framework") = "auto",
          "Prefill attention over MX operands (q, k, v each (codes, scales, tensor_scale) from gpu.quantize with\n"
          "row-major scales: q and k along D, v along S_kv, block_axis=1) or a dense float16/bfloat16 q\n"
          "[B, S_q, H_q, D]. causal: bottom-right; softmax_scale 0: 1/sqrt(D); kernel: auto, portable, hopper, hopper-exact (P and V in BF16), block-scaled (sm_120).\n"
          "Returns (out [B, S_q, H_q, D] in out_dtype, lse [B, H_q, S_q] float32, natural log).\n"
          "A packed batch (FlashAttention's varlen): q, k, v quantized as a batch of one [1, total, H, D];\n"
          "cu_seqlens_q, cu_seqlens_kv int32 CUDA offsets (batch + 1), each kv offset a multiple of V's block\n"
          "and of 16; seqused_kv (batch) the keys each sequence uses after its offset; max_seqlen_q/kv the\n"
          "longest (0: read from the offsets, a sync). Returns out [1, total_q, H_q, D] and lse\n"
          "[batch, H_q, max_seqlen_q] (NaN past each sequence's length and for offsets that break the rules).");

  gpu.def(
      "tensor_amax",
      [](const CudaArray& x, uintptr_t stream, const std::string& framework) {
        const DeviceAlloc out({1}, nb::dtype<float>());
        check(mxattn::tensor_amax(x.data(), dtype_of(x, "x"), shape_of(x), strides_of(x), static_cast<float*>(out.ptr),
                                  stream_arg(stream)));
        return out.to_python(framework);
      },
      nb::arg("x"), nb::arg("stream") = 0, nb::arg("framework") = "auto", "max |x| over the tensor (NaN ignored), as float32[1] on the GPU.");
}
