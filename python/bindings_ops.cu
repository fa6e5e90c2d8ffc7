// The launchers behind the package's PyTorch ops (python/mxattn/_ops.py), as the submodule `_mxattn.ops`.
//
// Tensors arrive as device addresses (torch's data_ptr()), with dtypes, shapes and element strides as
// plain values, and outputs are given (the caller allocates them from its framework's allocator): a call
// costs a few hundred nanoseconds of argument conversion, where a DLPack import costs microseconds a tensor.
// _ops.py checks devices, dtypes and shapes first and names the argument; the launchers check again
// (alignment, strides, supported formats) and their Status becomes a ValueError here. Nothing here
// synchronizes or allocates device memory (the prefill launcher's workspace comes from its own pool).
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mxattn/api/attention.h"
#include "mxattn/api/kv_cache.h"
#include "mxattn/api/quantize.h"
#include "mxattn/format/format.h"
#include "bindings_args.h"

namespace nb = nanobind;

namespace {

using mxattn::DType;
using namespace mxattn_bindings;
using Strides3 = std::array<int64_t, 3>;

template <typename T = void>
T* ptr(uintptr_t p) { return reinterpret_cast<T*>(p); }
cudaStream_t stream_of(uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

void quantize(uintptr_t x, const std::string& dtype, const std::vector<int64_t>& shape,
              const std::vector<int64_t>& strides, int axis, const std::string& format, const std::string& layout,
              uintptr_t codes, uintptr_t scales, uintptr_t tensor_scale, bool tensor_scale_given, uintptr_t stream) {
  mxattn::QuantizeOptions opt;
  opt.tensor_scale = tensor_scale_given ? mxattn::TensorScale::Given : mxattn::TensorScale::Compute;
  check(mxattn::quantize(ptr<const void>(x), dtype_arg(dtype), shape, strides, axis, format_arg(format),
                         layout_arg(layout), {ptr<uint8_t>(codes), ptr<uint8_t>(scales), ptr<float>(tensor_scale)}, stream_of(stream), opt));
}

void dequantize(uintptr_t codes, uintptr_t scales, uintptr_t tensor_scale, const std::string& format,
                const std::string& layout, uintptr_t out, const std::string& dtype, const std::vector<int64_t>& shape,
                const std::vector<int64_t>& strides, int axis, uintptr_t stream) {
  check(mxattn::dequantize({ptr<const uint8_t>(codes), ptr<const uint8_t>(scales), ptr<const float>(tensor_scale)},
                           format_arg(format), layout_arg(layout), ptr(out), dtype_arg(dtype), shape, strides, axis,
                           stream_of(stream)));
}

// An MX operand: (format, codes, scales, tensor_scale) with its rows back to back (gpu.quantize's layout,
// row-major scales), outer extents n0 x n1 x n2 and `cols` elements a row.
mxattn::MxOperand mx_operand(const nb::tuple& t, int64_t n0, int64_t n1, int64_t n2, int64_t cols) {
  const std::string format = nb::cast<std::string>(t[0]);
  return mxattn::MxOperand::contiguous(format_arg(format),
                                       {ptr<const uint8_t>(nb::cast<uintptr_t>(t[1])),
                                        ptr<const uint8_t>(nb::cast<uintptr_t>(t[2])),
                                        ptr<const float>(nb::cast<uintptr_t>(t[3]))},
                                       n0, n1, n2, cols);
}

// shape: (batch, seq_q, seq_kv, heads_q, heads_kv, head_dim) as PrefillArgs takes them (a packed batch:
// its sequence count and longest lengths); rows: the operands' stored (batch, total_q, total_kv).
// q: ("dense", data, dtype, (strides)) or (format, codes, scales, tensor_scale); k, v: MX.
void attention_prefill(const nb::tuple& q, const nb::tuple& k, const nb::tuple& v, const std::array<int64_t, 6>& shape,
                       const std::array<int64_t, 3>& rows, bool causal, double softmax_scale,
                       const std::string& kernel, uintptr_t out, const std::string& out_dtype,
                       const Strides3& out_strides, uintptr_t lse, uintptr_t cu_seqlens_q, uintptr_t cu_seqlens_kv,
                       uintptr_t seqused_kv, uintptr_t stream) {
  mxattn::PrefillArgs a;
  a.shape = {shape[0], shape[1], shape[2], shape[3], shape[4], shape[5]};
  const int64_t b = rows[0], sq = rows[1], skv = rows[2], hq = shape[3], hkv = shape[4], d = shape[5];
  a.q_is_mx = nb::cast<std::string>(q[0]) != "dense";
  if (a.q_is_mx) {
    a.q_mx = mx_operand(q, b, sq, hq, d);
  } else {
    a.q_dense.data = ptr<const void>(nb::cast<uintptr_t>(q[1]));
    a.q_dense.dtype = dtype_arg(nb::cast<std::string>(q[2]));
    const auto s = nb::cast<Strides3>(q[3]);
    for (int i = 0; i < 3; ++i) a.q_dense.strides[i] = s[i];
  }
  a.k = mx_operand(k, b, skv, hkv, d);
  a.v = mx_operand(v, b, hkv, d, skv);
  a.options.causal = causal;
  a.options.softmax_scale = softmax_scale;
  a.kernel = kernel_arg(kernel);
  a.out.data = ptr(out);
  a.out.dtype = dtype_arg(out_dtype);
  for (int i = 0; i < 3; ++i) a.out.strides[i] = out_strides[i];
  a.lse = ptr<float>(lse);
  a.cu_seqlens_q = ptr<const int32_t>(cu_seqlens_q);
  a.cu_seqlens_kv = ptr<const int32_t>(cu_seqlens_kv);
  a.seqused_kv = ptr<const int32_t>(seqused_kv);
  check(mxattn::attention_prefill(a, stream_of(stream)));
}

// A paged KV cache's arrays (api/kv_cache.h), described once by the Python object that owns them.
struct KvCache {
  mxattn::KvCacheView view;

  KvCache(const std::string& k_format, const std::string& v_format, int num_pages, int page_size, int heads_kv,
          int head_dim) {
    view.k_format = format_arg(k_format);
    view.v_format = format_arg(v_format);
    view.num_pages = num_pages;
    view.page_size = page_size;
    view.heads_kv = heads_kv;
    view.head_dim = head_dim;
  }
  void bind(uintptr_t k_codes, uintptr_t k_scales, uintptr_t v_codes, uintptr_t v_scales, uintptr_t k_tensor_scale,
            uintptr_t v_tensor_scale) {
    view.k_codes = ptr<uint8_t>(k_codes);
    view.k_scales = ptr<uint8_t>(k_scales);
    view.v_codes = ptr<uint8_t>(v_codes);
    view.v_scales = ptr<uint8_t>(v_scales);
    view.k_tensor_scale = ptr<const float>(k_tensor_scale);
    view.v_tensor_scale = ptr<const float>(v_tensor_scale);
  }

  static mxattn::PagedSequences seqs(uintptr_t block_table, int max_pages, uintptr_t seq_lens, int batch) {
    return {ptr<const int32_t>(block_table), max_pages, ptr<const int32_t>(seq_lens), batch};
  }

  void append(uintptr_t block_table, int max_pages, uintptr_t seq_lens, int batch, int new_tokens, uintptr_t k,
              const Strides3& k_strides, uintptr_t v, const Strides3& v_strides, const std::string& dtype,
              uintptr_t stream) const {
    const int64_t ks[3] = {k_strides[0], k_strides[1], k_strides[2]}, vs[3] = {v_strides[0], v_strides[1], v_strides[2]};
    check(mxattn::kv_cache_append(view, seqs(block_table, max_pages, seq_lens, batch), new_tokens, ptr<const void>(k),
                                  ks, ptr<const void>(v), vs, dtype_arg(dtype), stream_of(stream)));
  }

  mxattn::DecodeArgs decode_args(uintptr_t block_table, int max_pages, uintptr_t seq_lens, int batch, int max_seq_len,
                                 int q_len, int heads_q) const {
    mxattn::DecodeArgs a;
    a.cache = view;
    a.seqs = seqs(block_table, max_pages, seq_lens, batch);
    a.max_seq_len = max_seq_len;
    a.q_len = q_len;
    a.heads_q = heads_q;
    return a;
  }

  size_t workspace_bytes(int batch, int max_seq_len, int q_len, int heads_q) const {
    return mxattn::decode_workspace_bytes(decode_args(0, 0, 0, batch, max_seq_len, q_len, heads_q));
  }

  void decode(uintptr_t block_table, int max_pages, uintptr_t seq_lens, int batch, int max_seq_len, uintptr_t q,
              const std::string& q_dtype, int q_len, int heads_q, const Strides3& q_strides, bool causal,
              double softmax_scale, uintptr_t out, const std::string& out_dtype, const Strides3& out_strides,
              uintptr_t lse, uintptr_t workspace, size_t workspace_bytes, uintptr_t stream) const {
    mxattn::DecodeArgs a = decode_args(block_table, max_pages, seq_lens, batch, max_seq_len, q_len, heads_q);
    a.q = ptr<const void>(q);
    a.q_dtype = dtype_arg(q_dtype);
    a.out = ptr(out);
    a.out_dtype = dtype_arg(out_dtype);
    for (int i = 0; i < 3; ++i) a.q_strides[i] = q_strides[i], a.out_strides[i] = out_strides[i];
    a.causal = causal;
    a.softmax_scale = softmax_scale;
    a.lse = ptr<float>(lse);
    a.workspace = ptr(workspace);
    a.workspace_bytes = workspace_bytes;
    check(mxattn::attention_decode(a, stream_of(stream)));
  }
};

}  // namespace

void mxattn_bind_ops(nb::module_& m) {
  nb::module_ ops = m.def_submodule(
      "ops", "Launchers behind mxattn's PyTorch ops: device addresses in, outputs given, no allocation or sync");
  ops.def("quantize", &quantize, nb::arg("x"), nb::arg("dtype"), nb::arg("shape"), nb::arg("strides"), nb::arg("axis"),
          nb::arg("format"), nb::arg("layout"), nb::arg("codes"), nb::arg("scales"), nb::arg("tensor_scale"),
          nb::arg("tensor_scale_given"), nb::arg("stream"));
  ops.def("dequantize", &dequantize, nb::arg("codes"), nb::arg("scales"), nb::arg("tensor_scale"), nb::arg("format"),
          nb::arg("layout"), nb::arg("out"), nb::arg("dtype"), nb::arg("shape"), nb::arg("strides"), nb::arg("axis"),
          nb::arg("stream"));
  ops.def(
      "convert_scale_layout",
      [](uintptr_t src, const std::string& from, uintptr_t dst, const std::string& to, size_t rows, size_t cols,
         uintptr_t stream) {
        check(mxattn::convert_scale_layout(ptr<const uint8_t>(src), layout_arg(from), ptr<uint8_t>(dst), layout_arg(to),
                                           {rows, cols}, stream_of(stream)));
      },
      nb::arg("src"), nb::arg("src_layout"), nb::arg("dst"), nb::arg("dst_layout"), nb::arg("rows"), nb::arg("cols"),
      nb::arg("stream"));
  ops.def("attention_prefill", &attention_prefill, nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("shape"),
          nb::arg("rows"), nb::arg("causal"), nb::arg("softmax_scale"), nb::arg("kernel"), nb::arg("out"),
          nb::arg("out_dtype"), nb::arg("out_strides"), nb::arg("lse"), nb::arg("cu_seqlens_q"),
          nb::arg("cu_seqlens_kv"), nb::arg("seqused_kv"), nb::arg("stream"));
  nb::class_<KvCache>(ops, "KvCache")
      .def(nb::init<const std::string&, const std::string&, int, int, int, int>(), nb::arg("k_format"),
           nb::arg("v_format"), nb::arg("num_pages"), nb::arg("page_size"), nb::arg("heads_kv"), nb::arg("head_dim"))
      .def("bind", &KvCache::bind, nb::arg("k_codes"), nb::arg("k_scales"), nb::arg("v_codes"), nb::arg("v_scales"),
           nb::arg("k_tensor_scale"), nb::arg("v_tensor_scale"))
      .def_prop_ro("k_code_bytes", [](const KvCache& c) { return c.view.code_bytes(c.view.k_format); })
      .def_prop_ro("k_scale_bytes", [](const KvCache& c) { return c.view.scale_bytes(c.view.k_format); })
      .def_prop_ro("v_code_bytes", [](const KvCache& c) { return c.view.code_bytes(c.view.v_format); })
      .def_prop_ro("v_scale_bytes", [](const KvCache& c) { return c.view.scale_bytes(c.view.v_format); })
      .def("append", &KvCache::append, nb::arg("block_table"), nb::arg("max_pages"), nb::arg("seq_lens"),
           nb::arg("batch"), nb::arg("new_tokens"), nb::arg("k"), nb::arg("k_strides"), nb::arg("v"),
           nb::arg("v_strides"), nb::arg("dtype"), nb::arg("stream"))
      .def("workspace_bytes", &KvCache::workspace_bytes, nb::arg("batch"), nb::arg("max_seq_len"), nb::arg("q_len"),
           nb::arg("heads_q"))
      .def("decode", &KvCache::decode, nb::arg("block_table"), nb::arg("max_pages"), nb::arg("seq_lens"),
           nb::arg("batch"), nb::arg("max_seq_len"), nb::arg("q"), nb::arg("q_dtype"), nb::arg("q_len"),
           nb::arg("heads_q"), nb::arg("q_strides"), nb::arg("causal"), nb::arg("softmax_scale"), nb::arg("out"),
           nb::arg("out_dtype"), nb::arg("out_strides"), nb::arg("lse"), nb::arg("workspace"),
           nb::arg("workspace_bytes"), nb::arg("stream"));
}
