// The _mxattn Python module: NumPy arrays in and out, over the CPU reference (format, layout, reference).
//
// Thin by design: validate arguments (messages name the argument), convert, call the library, wrap the
// result. Every array argument may have any strides; results are new C-contiguous arrays, except the
// `codes` and `scales` of a QuantizedTensor, which are views of its storage (writable, so edited codes
// can be dequantized).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "mxattn/format/format.h"
#include "mxattn/layout/scale_layout.h"
#include "mxattn/reference/attention.h"
#include "mxattn/reference/quantize.h"

namespace nb = nanobind;
using namespace nb::literals;

// GPU functions live in another source file, compiled only with the CUDA library.
#if defined(MXATTN_WITH_CUDA)
void mxattn_bind_gpu(nanobind::module_& m);
void mxattn_bind_ops(nanobind::module_& m);
#endif

namespace {

using mxattn::Element;
using mxattn::Format;
using mxattn::QuantizedTensor;
using mxattn::ScaleLayout;

// Any CPU array; the dtype is checked here so the message can name the argument (nanobind would
// otherwise convert silently or report an overload mismatch).
using InArray = nb::ndarray<nb::ro, nb::device::cpu>;
template <class T>
using OutArray = nb::ndarray<nb::numpy, T>;

std::string dtype_name(nb::dlpack::dtype t) {
  using Code = nb::dlpack::dtype_code;
  std::string kind;
  switch (Code(t.code)) {
    case Code::Int: kind = "int"; break;
    case Code::UInt: kind = "uint"; break;
    case Code::Float: kind = "float"; break;
    case Code::Bfloat: kind = "bfloat"; break;
    case Code::Complex: kind = "complex"; break;
    case Code::Bool: return "bool";
    default: kind = "dtype_code" + std::to_string(t.code) + "_"; break;
  }
  return kind + std::to_string(t.bits);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A checked view of an input array: typed data pointer, shape and strides in elements.
template <class T>
struct View {
  const T* data = nullptr;
  std::vector<int64_t> shape, strides;

  size_t size() const {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    return n;
  }
  bool contiguous() const { return strides == mxattn::contiguous_strides(shape); }

  // The elements in C order, whatever the strides.
  std::vector<T> gather() const {
    std::vector<T> out(size());
    if (out.empty()) return out;
    const int rank = int(shape.size());
    std::vector<int64_t> idx(size_t(rank), 0);
    int64_t off = 0;
    for (size_t n = 0; n < out.size(); ++n) {
      out[n] = data[off];
      for (int d = rank - 1; d >= 0; --d) {  // odometer increment, last axis fastest
        off += strides[d];
        if (++idx[d] < shape[d]) break;
        off -= strides[d] * shape[d];
        idx[d] = 0;
      }
    }
    return out;
  }
};

template <class T>
View<T> view_of(const InArray& a, const char* arg, int rank = -1) {
  if (a.dtype() != nb::dtype<T>())
    throw nb::type_error((std::string(arg) + ": expected a " + dtype_name(nb::dtype<T>()) + " array, got " +
                          dtype_name(a.dtype()))
                             .c_str());
  if (rank >= 0 && int(a.ndim()) != rank)
    throw std::invalid_argument(std::string(arg) + ": expected " + std::to_string(rank) + " dimensions, got " +
                                std::to_string(a.ndim()));
  View<T> v;
  v.data = static_cast<const T*>(a.data());
  for (size_t d = 0; d < a.ndim(); ++d) v.shape.push_back(int64_t(a.shape(d)));
  v.strides = a.stride_ptr() ? std::vector<int64_t>(a.stride_ptr(), a.stride_ptr() + a.ndim())
                             : mxattn::contiguous_strides(v.shape);
  return v;
}

// A new NumPy array that owns `values`.
template <class T>
OutArray<T> to_numpy(std::vector<T>&& values, const std::vector<int64_t>& shape) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::vector<size_t> dims(shape.begin(), shape.end());
  return OutArray<T>(owned->data(), dims.size(), dims.data(), owner);
}

nb::tuple to_tuple(const std::vector<int64_t>& v) {
  nb::list l;
  for (int64_t x : v) l.append(x);
  return nb::tuple(l);
}

Element element_arg(const std::string& name, const char* arg) {
  std::string why;
  auto e = mxattn::parse_element(name, &why);
  if (!e) throw std::invalid_argument(std::string(arg) + ": " + why);
  return *e;
}

Format format_arg(const std::string& name, const char* arg) {
  std::string why;
  auto f = mxattn::parse_format(name, &why);
  if (!f) throw std::invalid_argument(std::string(arg) + ": " + why);
  return *f;
}

ScaleLayout layout_arg(const std::string& s) {
  if (s == "rowmajor") return ScaleLayout::RowMajor;
  if (s == "tiled") return ScaleLayout::Tiled128x4;
  throw std::invalid_argument("layout: expected 'rowmajor' or 'tiled', got '" + s + "'");
}

const char* layout_name(ScaleLayout l) { return l == ScaleLayout::RowMajor ? "rowmajor" : "tiled"; }

// ---- element codecs ----

OutArray<uint8_t> encode(const std::string& element, const InArray& x) {
  const Element e = element_arg(element, "element");
  const View<float> v = view_of<float>(x, "x");
  std::vector<float> values = v.gather();
  std::vector<uint8_t> codes(values.size());
  for (size_t i = 0; i < values.size(); ++i) codes[i] = uint8_t(e.encode(values[i]));
  return to_numpy(std::move(codes), v.shape);
}

OutArray<float> decode(const std::string& element, const InArray& codes) {
  const Element e = element_arg(element, "element");
  const View<uint8_t> v = view_of<uint8_t>(codes, "codes");
  std::vector<uint8_t> c = v.gather();
  std::vector<float> out(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] >> e.bits)
      throw std::invalid_argument("codes: value " + std::to_string(c[i]) + " at flat index " + std::to_string(i) +
                                  " does not fit in the " + std::to_string(e.bits) + " bits of " +
                                  mxattn::element_name(e));
    out[i] = e.decode(c[i]);
  }
  return to_numpy(std::move(out), v.shape);
}

nb::dict format_info(const std::string& name) {
  const Format f = format_arg(name, "format");
  nb::dict d;
  d["name"] = mxattn::format_name(f);
  d["element"] = mxattn::element_name(f.elem);
  d["bits"] = int(f.elem.bits);
  d["block"] = f.block;
  d["scale"] = mxattn::scale_type_name(f.scale);
  d["rule"] = mxattn::scale_rule_name(f.rule);
  d["tensor_scale"] = f.tensor_scale;
  d["max"] = double(f.elem.max_value());
  d["min_subnormal"] = std::ldexp(1.0, f.elem.min_subnormal_exp());
  d["bits_per_element"] = f.bits_per_element();
  return d;
}

std::vector<std::string> named_formats() {
  std::vector<std::string> names;
  for (const auto& nf : mxattn::named_formats()) names.emplace_back(nf.name);
  return names;
}

// ---- quantization ----

QuantizedTensor quantize(const InArray& x, const std::string& format, int block_axis, const std::string& layout,
                         std::optional<float> tensor_scale) {
  const Format f = format_arg(format, "format");
  const ScaleLayout l = layout_arg(layout);
  const View<float> v = view_of<float>(x, "x");
  const int rank = int(v.shape.size());
  if (rank == 0) throw std::invalid_argument("x: expected at least one dimension, got a scalar");
  if (block_axis < -rank || block_axis >= rank)
    throw std::invalid_argument("block_axis: " + std::to_string(block_axis) + " is out of range for x of rank " +
                                std::to_string(rank));
  if (tensor_scale) {
    if (!f.tensor_scale)
      throw std::invalid_argument("tensor_scale: format '" + mxattn::format_name(f) + "' has no tensor scale");
    if (!(std::isfinite(*tensor_scale) && *tensor_scale > 0.0f))
      throw std::invalid_argument("tensor_scale: must be finite and positive, got " + std::to_string(*tensor_scale));
  }
  nb::gil_scoped_release unlocked;
  return mxattn::quantize(v.data, v.shape, v.strides, block_axis, f, l, tensor_scale);
}

std::vector<int64_t> source_shape(const QuantizedTensor& q) {
  std::vector<int64_t> s(q.shape.begin(), q.shape.end() - 1);
  s.insert(s.begin() + q.source_axis, q.shape.back());
  return s;
}

OutArray<float> dequantize(const QuantizedTensor& q) {
  std::vector<float> out;
  {
    nb::gil_scoped_release unlocked;
    out = mxattn::dequantize(q);
  }
  return to_numpy(std::move(out), source_shape(q));
}

// ---- scale layouts ----

OutArray<uint8_t> to_tiled(const InArray& scales) {
  const View<uint8_t> v = view_of<uint8_t>(scales, "scales", 2);
  const mxattn::ScaleShape s{size_t(v.shape[0]), size_t(v.shape[1])};
  const std::vector<uint8_t> src = v.gather();
  std::vector<uint8_t> dst(mxattn::scale_bytes(ScaleLayout::Tiled128x4, s));
  mxattn::convert_scale_layout(src.data(), ScaleLayout::RowMajor, dst.data(), ScaleLayout::Tiled128x4, s);
  const int64_t n = int64_t(dst.size());
  return to_numpy(std::move(dst), {n});
}

OutArray<uint8_t> from_tiled(const InArray& flat, int64_t rows, int64_t cols) {
  if (rows < 0) throw std::invalid_argument("rows: must be >= 0, got " + std::to_string(rows));
  if (cols < 0) throw std::invalid_argument("cols: must be >= 0, got " + std::to_string(cols));
  const View<uint8_t> v = view_of<uint8_t>(flat, "flat", 1);
  const mxattn::ScaleShape s{size_t(rows), size_t(cols)};
  const size_t need = mxattn::scale_bytes(ScaleLayout::Tiled128x4, s);
  if (v.size() != need)
    throw std::invalid_argument("flat: " + std::to_string(v.size()) + " bytes, but the tiled layout of [" +
                                std::to_string(rows) + ", " + std::to_string(cols) + "] scales takes " +
                                std::to_string(need));
  const std::vector<uint8_t> src = v.gather();
  std::vector<uint8_t> dst(mxattn::scale_bytes(ScaleLayout::RowMajor, s));
  mxattn::convert_scale_layout(src.data(), ScaleLayout::Tiled128x4, dst.data(), ScaleLayout::RowMajor, s);
  return to_numpy(std::move(dst), {rows, cols});
}

// ---- attention ----

// Q [B, S_q, H_q, D], K and V [B, S_kv, H_kv, D]; the library checks what the shapes themselves imply
// (H_q a multiple of H_kv, sizes >= 1).
template <class T>
mxattn::AttentionShape attention_shape(const View<T>& q, const View<T>& k, const View<T>& v) {
  if (v.shape != k.shape)
    throw std::invalid_argument("v: shape " + shape_str(v.shape) + " must equal k's shape " + shape_str(k.shape));
  if (k.shape[0] != q.shape[0])
    throw std::invalid_argument("k: batch " + std::to_string(k.shape[0]) + " must equal q's batch " +
                                std::to_string(q.shape[0]));
  if (k.shape[3] != q.shape[3])
    throw std::invalid_argument("k: head_dim " + std::to_string(k.shape[3]) + " must equal q's head_dim " +
                                std::to_string(q.shape[3]));
  mxattn::AttentionShape s{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]};
  mxattn::check_attention_shape(s);
  return s;
}

using AttentionOut = std::tuple<OutArray<double>, OutArray<double>>;

AttentionOut wrap(mxattn::AttentionResult&& r, const mxattn::AttentionShape& s) {
  return {to_numpy(std::move(r.out), {s.batch, s.seq_q, s.heads_q, s.head_dim}),
          to_numpy(std::move(r.lse), {s.batch, s.heads_q, s.seq_q})};
}

AttentionOut attention_fp64(const InArray& q, const InArray& k, const InArray& v, bool causal,
                            double softmax_scale) {
  const auto qv = view_of<double>(q, "q", 4), kv = view_of<double>(k, "k", 4), vv = view_of<double>(v, "v", 4);
  const mxattn::AttentionShape s = attention_shape(qv, kv, vv);
  const auto qc = qv.gather(), kc = kv.gather(), vc = vv.gather();
  mxattn::AttentionResult r;
  {
    nb::gil_scoped_release unlocked;
    r = mxattn::attention_fp64(qc.data(), kc.data(), vc.data(), s, {causal, softmax_scale});
  }
  return wrap(std::move(r), s);
}

AttentionOut mx_attention(const InArray& q, const InArray& k, const InArray& v, const std::string& q_format,
                          const std::string& k_format, const std::string& v_format, const std::string& v_axis,
                          bool causal, double softmax_scale) {
  mxattn::MxAttentionFormats f{format_arg(q_format, "q_format"), format_arg(k_format, "k_format"),
                               format_arg(v_format, "v_format"), mxattn::VBlockAxis::Seq};
  if (v_axis == "head_dim") {
    f.v_axis = mxattn::VBlockAxis::HeadDim;
  } else if (v_axis != "seq") {
    throw std::invalid_argument("v_axis: expected 'seq' or 'head_dim', got '" + v_axis + "'");
  }
  const auto qv = view_of<float>(q, "q", 4), kv = view_of<float>(k, "k", 4), vv = view_of<float>(v, "v", 4);
  const mxattn::AttentionShape s = attention_shape(qv, kv, vv);
  const auto qc = qv.gather(), kc = kv.gather(), vc = vv.gather();
  mxattn::AttentionResult r;
  {
    nb::gil_scoped_release unlocked;
    r = mxattn::mx_attention(qc.data(), kc.data(), vc.data(), s, f, {causal, softmax_scale});
  }
  return wrap(std::move(r), s);
}

}  // namespace

NB_MODULE(_mxattn, m) {
  m.doc() = "mxattn: microscaling (MX) block-scaled tensors; CPU reference codecs, layouts and attention";

  m.def("encode", &encode, "element"_a, "x"_a,
        "Element codes (uint8, same shape) of float32 values: round-to-nearest-even, saturating.");
  m.def("decode", &decode, "element"_a, "codes"_a, "float32 values of element codes (uint8).");
  m.def("format_info", &format_info, "name"_a, "What a format name means: element, block, scale, rule, range.");
  m.def("named_formats", &named_formats, "The named formats (mxfp8, ..., nvfp4).");

  nb::class_<QuantizedTensor>(m, "QuantizedTensor",
                              "A block-scaled tensor, stored with its block axis last.")
      .def_prop_ro(
          "codes",
          [](QuantizedTensor& q) {
            const size_t shape[2] = {q.rows(), q.row_bytes()};
            return OutArray<uint8_t>(q.codes.data(), 2, shape, nb::find(&q));
          },
          "Packed element codes, uint8 [rows, row_bytes]; a view of this tensor's storage.")
      .def_prop_ro(
          "scales",
          [](QuantizedTensor& q) {
            const size_t shape[1] = {q.scales.size()};
            return OutArray<uint8_t>(q.scales.data(), 1, shape, nb::find(&q));
          },
          "Block scale codes, uint8, in this tensor's layout (padding included); a view.")
      .def_prop_ro("shape", [](const QuantizedTensor& q) { return to_tuple(q.shape); },
                   "Shape in stored order (block axis last).")
      .def_prop_ro("source_shape", [](const QuantizedTensor& q) { return to_tuple(source_shape(q)); })
      .def_prop_ro("source_axis", [](const QuantizedTensor& q) { return q.source_axis; })
      .def_prop_ro("tensor_scale", [](const QuantizedTensor& q) { return q.tensor_scale; },
                   "S_enc for formats with a tensor scale, else 1.")
      .def_prop_ro("format", [](const QuantizedTensor& q) { return mxattn::format_name(q.format); })
      .def_prop_ro("layout", [](const QuantizedTensor& q) { return layout_name(q.layout); })
      .def_prop_ro("rows", &QuantizedTensor::rows)
      .def_prop_ro("cols", &QuantizedTensor::cols)
      .def_prop_ro("row_bytes", &QuantizedTensor::row_bytes)
      .def_prop_ro("scale_shape",
                   [](const QuantizedTensor& q) {
                     return std::make_tuple(q.scale_shape().rows, q.scale_shape().cols);
                   },
                   "Logical scale shape (rows, blocks per row).")
      .def(
          "with_layout",
          [](const QuantizedTensor& q, const std::string& layout) {
            QuantizedTensor r = q;
            r.layout = layout_arg(layout);
            r.scales.assign(mxattn::scale_bytes(r.layout, q.scale_shape()), 0);
            mxattn::convert_scale_layout(q.scales.data(), q.layout, r.scales.data(), r.layout, q.scale_shape());
            return r;
          },
          "layout"_a, "A copy with the scales in `layout` ('rowmajor' or 'tiled').")
      .def("__repr__", [](const QuantizedTensor& q) {
        return "QuantizedTensor(format='" + mxattn::format_name(q.format) + "', shape=" + shape_str(q.shape) +
               ", source_axis=" + std::to_string(q.source_axis) + ", layout='" + layout_name(q.layout) + "')";
      });

  m.def("quantize", &quantize, "x"_a, "format"_a, "block_axis"_a = -1, "layout"_a = "rowmajor",
        "tensor_scale"_a = nb::none(),
        "Quantize a float32 array with blocks along block_axis. tensor_scale overrides S_enc (NVFP4-rule formats).");
  m.def("dequantize", &dequantize, "qt"_a, "float32 values in the source order.");

  m.def("to_tiled", &to_tiled, "scales"_a,
        "Row-major [rows, cols] scales -> flat 128x4 tiled layout (rows padded to 128, cols to 4, zeros).");
  m.def("from_tiled", &from_tiled, "flat"_a, "rows"_a, "cols"_a, "Flat 128x4 tiled scales -> [rows, cols].");

  m.def("attention_fp64", &attention_fp64, "q"_a, "k"_a, "v"_a, "causal"_a = false, "softmax_scale"_a = 0.0,
        "FP64 attention: q [B,Sq,Hq,D], k/v [B,Skv,Hkv,D] float64 -> (out [B,Sq,Hq,D], lse [B,Hq,Sq]).");
  m.def("mx_attention", &mx_attention, "q"_a, "k"_a, "v"_a, "q_format"_a = "mxfp8", "k_format"_a = "mxfp8",
        "v_format"_a = "mxfp8", "v_axis"_a = "seq", "causal"_a = false, "softmax_scale"_a = 0.0,
        "Quantize q, k (along D) and v (along v_axis: 'seq' or 'head_dim') from float32, dequantize, "
        "then FP64 attention -> (out, lse).");

#if defined(MXATTN_WITH_CUDA)
  mxattn_bind_gpu(m);  // GPU functions, bound in another source file
  mxattn_bind_ops(m);  // the launchers behind the PyTorch ops (bindings_ops.cu)
#endif
}
