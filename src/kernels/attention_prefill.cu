// Host side of the portable prefill kernel: validation, parameter packing, launch.
#include <cmath>
#include <string>

#include "mxattn/api/attention.h"
#include "mxattn/kernels/attention/hopper/launch.h"
#include "mxattn/kernels/attention/prefill_kernel.h"
#include "mxattn/kernels/attention/sm120/launch.h"
#include "mxattn/kernels/launchable.h"

namespace mxattn {
namespace {

using kernels::MxRows;
using kernels::PrefillParams;

bool aligned(const void* p, int64_t a) { return reinterpret_cast<uintptr_t>(p) % uint64_t(a) == 0; }

// Bytes a 16-code chunk loads at once: 16 for 8-bit codes, 8 for 4-bit, 4 for 6-bit.
int chunk_align(int bits) { return bits == 8 ? 16 : (bits == 4 ? 8 : 4); }

Status check_mx(const char* name, const MxOperand& t) {
  const int bits = t.format.elem.bits;
  if (bits != 4 && bits != 6 && bits != 8)
    return Status::error(std::string(name) + ": element width " + std::to_string(bits) +
                         " bits not supported (4, 6 or 8)");
  if (t.format.block < 8 || t.format.block % 8 != 0)
    return Status::error(std::string(name) + ": block size " + std::to_string(t.format.block) +
                         " not supported (a multiple of 8)");
  if (!t.buffers.codes || !t.buffers.scales) return Status::error(std::string(name) + ": null codes or scales");
  if (t.format.tensor_scale && !t.buffers.tensor_scale)
    return Status::error(std::string(name) + ": format needs a tensor scale (S_enc) pointer");
  return Status::success();
}

// Rows along D: each row start must allow the chunk's vector load.
Status check_rows_aligned(const char* name, const MxOperand& t) {
  const int a = chunk_align(t.format.elem.bits);
  bool ok = aligned(t.buffers.codes, a);
  for (int i = 0; i < 3; ++i) ok = ok && t.code_strides[i] % a == 0;
  if (!ok)
    return Status::error(std::string(name) + ": codes and code strides must be multiples of " + std::to_string(a) +
                         " bytes");
  return Status::success();
}

MxRows rows_of(const MxOperand& t) {
  MxRows r;
  r.codes = t.buffers.codes;
  r.scales = t.buffers.scales;
  for (int i = 0; i < 3; ++i) r.code_stride[i] = t.code_strides[i], r.scale_stride[i] = t.scale_strides[i];
  r.format = t.format;
  r.tensor_scale = t.buffers.tensor_scale;
  return r;
}

template <int D>
Status launch(const PrefillParams& p, cudaStream_t stream) {
  using T = kernels::PrefillTraits<D>;
  const size_t smem = sizeof(kernels::PrefillShared<D>);
  const kernels::Launchable l = kernels::launchable(reinterpret_cast<const void*>(kernels::prefill_kernel<D>), T::kThreads, smem);
  if (l.error != cudaSuccess) return Status::error(std::string("attention_prefill: ") + cudaGetErrorString(l.error));
  const dim3 grid((p.seq_q + T::kBlockM - 1) / T::kBlockM, p.heads_q, p.batch);
  kernels::prefill_kernel<D><<<grid, T::kThreads, smem, stream>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return Status::error(std::string("attention_prefill: launch failed: ") + cudaGetErrorString(e));
  return Status::success();
}

}  // namespace

MxOperand MxOperand::contiguous(const Format& format, QuantizedConstBuffers buffers, int64_t n0, int64_t n1,
                                int64_t n2, int64_t cols) {
  (void)n0;
  MxOperand t;
  t.format = format;
  t.buffers = buffers;
  const int64_t rb = int64_t(packed_bytes(size_t(cols), format.elem.bits));
  const int64_t sb = (cols + format.block - 1) / format.block;
  t.code_strides[2] = rb, t.code_strides[1] = rb * n2, t.code_strides[0] = rb * n2 * n1;
  t.scale_strides[2] = sb, t.scale_strides[1] = sb * n2, t.scale_strides[0] = sb * n2 * n1;
  return t;
}

DenseOperand DenseOperand::contiguous(const void* data, DType dtype, int64_t seq, int64_t heads, int64_t head_dim) {
  return {data, dtype, {seq * heads * head_dim, heads * head_dim, head_dim}};
}
DenseOutput DenseOutput::contiguous(void* data, DType dtype, int64_t seq, int64_t heads, int64_t head_dim) {
  return {data, dtype, {seq * heads * head_dim, heads * head_dim, head_dim}};
}

Status attention_prefill(const PrefillArgs& a, cudaStream_t stream) {
  const AttentionShape& s = a.shape;
  try {
    check_attention_shape(s);
  } catch (const std::exception& e) {
    return Status::error(std::string("shape: ") + e.what());
  }
  if (s.head_dim != 64 && s.head_dim != 128 && s.head_dim != 256)
    return Status::error("shape.head_dim: " + std::to_string(s.head_dim) + " not supported (64, 128 or 256)");
  if (s.seq_q > INT32_MAX || s.seq_kv > INT32_MAX || s.heads_q > 65535 || s.batch > 65535)
    return Status::error("shape: extents too large for the grid");
  Status st;
  if (a.q_is_mx) {
    if (!(st = check_mx("q_mx", a.q_mx)) || !(st = check_rows_aligned("q_mx", a.q_mx))) return st;
  } else {
    const DenseOperand& q = a.q_dense;
    if (q.dtype != DType::BF16 && q.dtype != DType::F16) return Status::error("q_dense.dtype: must be bf16 or f16");
    if (!q.data || !aligned(q.data, 16) || q.strides[0] % 8 || q.strides[1] % 8 || q.strides[2] % 8)
      return Status::error("q_dense: data must be 16-byte aligned with strides multiples of 8 elements");
  }
  if (!(st = check_mx("k", a.k)) || !(st = check_rows_aligned("k", a.k))) return st;
  if (!(st = check_mx("v", a.v))) return st;
  if (a.out.dtype != DType::BF16 && a.out.dtype != DType::F16) return Status::error("out.dtype: must be bf16 or f16");
  if (!a.out.data || !aligned(a.out.data, 4) || a.out.strides[0] % 2 || a.out.strides[1] % 2 || a.out.strides[2] % 2)
    return Status::error("out: data must be 4-byte aligned with even strides");

  PrefillParams p;
  p.batch = int(s.batch), p.seq_q = int(s.seq_q), p.seq_kv = int(s.seq_kv);
  p.heads_q = int(s.heads_q), p.heads_kv = int(s.heads_kv), p.group = int(s.heads_q / s.heads_kv);
  p.causal = a.options.causal;
  p.softmax_scale = float(a.options.softmax_scale != 0.0 ? a.options.softmax_scale : 1.0 / std::sqrt(double(s.head_dim)));
  p.q_is_mx = a.q_is_mx;
  if (a.q_is_mx) {
    p.q_mx = rows_of(a.q_mx);
  } else {
    p.q.data = const_cast<void*>(a.q_dense.data);
    for (int i = 0; i < 3; ++i) p.q.stride[i] = a.q_dense.strides[i];
    p.q.fp16 = a.q_dense.dtype == DType::F16;
  }
  p.k = rows_of(a.k);
  p.v = rows_of(a.v);
  {
    const int al = chunk_align(a.v.format.elem.bits);
    bool ok = aligned(a.v.buffers.codes, al);
    for (int i = 0; i < 3; ++i) ok = ok && a.v.code_strides[i] % al == 0;
    p.v_vector = ok;
  }
  p.out.data = a.out.data;
  for (int i = 0; i < 3; ++i) p.out.stride[i] = a.out.strides[i];
  p.out.fp16 = a.out.dtype == DType::F16;
  p.lse = a.lse;
  if ((a.cu_seqlens_q == nullptr) != (a.cu_seqlens_kv == nullptr))
    return Status::error("cu_seqlens_q, cu_seqlens_kv: a packed batch needs both offsets (or neither)");
  if (a.cu_seqlens_q && (!aligned(a.cu_seqlens_q, 4) || !aligned(a.cu_seqlens_kv, 4)))
    return Status::error("cu_seqlens_q, cu_seqlens_kv: must be 4-byte aligned int32 arrays");
  if (a.seqused_kv && !a.cu_seqlens_q)
    return Status::error("seqused_kv: only for a packed batch (cu_seqlens_q, cu_seqlens_kv)");
  p.cu_seqlens_q = a.cu_seqlens_q;
  p.cu_seqlens_kv = a.cu_seqlens_kv;
  p.seqused_kv = a.seqused_kv;

  PrefillKernel kernel = a.kernel;
  // The sm_120a kernel, asked for or (Auto) where it takes the arguments; or its emulation, asked for.
  if (kernel == PrefillKernel::BlockScaled || kernel == PrefillKernel::Auto ||
      kernel == PrefillKernel::BlockScaledEmulated) {
    const bool emulated = kernel == PrefillKernel::BlockScaledEmulated;
    const std::string why = kernels::sm120::prefill_unsupported(p, emulated);
    if (why.empty()) return kernels::sm120::launch_prefill(p, int(s.head_dim), emulated, stream);
    if (kernel != PrefillKernel::Auto)
      return Status::error(std::string("kernel: ") + (emulated ? "BlockScaledEmulated" : "BlockScaled") +
                           " does not take these arguments: " + why);
  }
  // Why the Hopper kernel (the exact mode, for Auto) does not take the arguments; empty where it does.
  const std::string why = kernel == PrefillKernel::Portable
                              ? std::string()
                              : kernels::hopper::prefill_unsupported(p, int(s.head_dim), kernel != PrefillKernel::HopperFp8);
  if (kernel == PrefillKernel::Auto) {
    // UE4M3 scales (NVFP4) round Q's and K's elements times the scale's significand to E4M3 (hopper/fold.h),
    // which the portable kernel does not: those stay there.
    const bool exact_fold = (!p.q_is_mx || p.q_mx.format.scale == ScaleType::E8M0) && p.k.format.scale == ScaleType::E8M0;
    kernel = exact_fold && why.empty() ? PrefillKernel::HopperExact : PrefillKernel::Portable;
  }
  if (kernel == PrefillKernel::HopperFp8 || kernel == PrefillKernel::HopperExact) {
    const bool exact = kernel == PrefillKernel::HopperExact;
    if (!why.empty())
      return Status::error(std::string("kernel: ") + (exact ? "HopperExact" : "HopperFp8") +
                           " does not take these arguments: " + why);
    return exact ? kernels::hopper::launch_prefill<true>(p, int(s.head_dim), stream)
                 : kernels::hopper::launch_prefill<false>(p, int(s.head_dim), stream);
  }
  switch (s.head_dim) {
    case 64: return launch<64>(p, stream);
    case 128: return launch<128>(p, stream);
    default: return launch<256>(p, stream);
  }
}

}  // namespace mxattn
