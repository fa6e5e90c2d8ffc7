"""mxattn's PyTorch operators: `torch.library` custom ops over the CUDA launchers (`_mxattn.ops`).

Each op allocates its outputs with PyTorch's caching allocator, launches on the current CUDA stream and
never synchronizes, so it can be captured in a CUDA graph; each has a fake (meta) implementation giving its
outputs' shapes, so `torch.compile` traces through it. The eager paths of the public API (`quantize`,
`attention`, `PagedKVCache`) call the `*_impl` functions directly, skipping the dispatcher's cost, and go
through `torch.ops.mxattn.*` only while compiling. Arguments are checked by the public API before they get
here (devices, dtypes, shapes, formats).

Imported on first use with a torch tensor: `import mxattn` does not import torch.
"""

import functools
from typing import List, Optional, Tuple

import torch

from . import _mxattn

_k = _mxattn.ops
_gpu = _mxattn.gpu

DTYPE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


# The current stream as a cudaStream_t, for the device a tensor lives on. torch's private accessor costs
# 0.2 us where torch.cuda.current_stream() costs 2-8 (a Stream object a call); the public one where it is gone.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def stream_of(index: int) -> int:
    """The current stream of CUDA device `index`."""
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


def stream(device: torch.device) -> int:
    return stream_of(device.index if device.index is not None else torch.cuda.current_device())


# One float32 1.0 a device: the tensor scale of the formats without one (never read by a kernel), shared by
# eagerly quantized tensors instead of a fill kernel a call; the op (torch.compile) returns a copy of its own.
_ones = {}


def one(device: torch.device) -> torch.Tensor:
    t = _ones.get(device)
    if t is None:
        t = torch.ones((1,), dtype=torch.float32, device=device)
        if not torch.cuda.is_current_stream_capturing():  # (memory of a graph's pool is not kept)
            _ones[device] = t
    return t


def compiling() -> bool:
    return torch.compiler.is_compiling()


@functools.lru_cache(maxsize=4096)
def geometry(shape: Tuple[int, ...], format: str, axis: int, layout: str) -> Tuple[Tuple[int, ...], int]:
    """(the codes' shape: the block axis last, its length in bytes; the scales' bytes)."""
    g = _gpu.quantized_geometry(list(shape), format, axis, layout)
    code_shape = tuple(g["stored_shape"][:-1]) + (g["row_bytes"],)
    return code_shape, g["scale_bytes"]


_tensor_scale_formats = {}


def has_tensor_scale(format: str) -> bool:
    """Whether a format has an FP32 tensor scale (format_info's, looked up once a name)."""
    has = _tensor_scale_formats.get(format)
    if has is None:
        has = _tensor_scale_formats[format] = _mxattn.format_info(format)["tensor_scale"]
    return has


def _strides(t: torch.Tensor) -> List[int]:
    return list(t.stride())


# ---- quantize / dequantize / scale layouts ----

def quantize_impl(x: torch.Tensor, format: str, axis: int, layout: str,
                  tensor_scale: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    code_shape, scale_bytes = geometry(tuple(x.shape), format, axis, layout)
    codes = torch.empty(code_shape, dtype=torch.uint8, device=x.device)
    scales = torch.empty((scale_bytes,), dtype=torch.uint8, device=x.device)
    # S_enc: given (copied: the op returns a tensor of its own), computed by the kernel, or 1 (formats without one).
    if tensor_scale is not None:
        ts = tensor_scale.to(torch.float32, copy=True).reshape(1)
    elif has_tensor_scale(format):
        ts = torch.empty((1,), dtype=torch.float32, device=x.device)
    else:
        ts = one(x.device)
    _k.quantize(x.data_ptr(), DTYPE_NAMES[x.dtype], list(x.shape), _strides(x), axis, format, layout,
                codes.data_ptr(), scales.data_ptr(), ts.data_ptr(), tensor_scale is not None, stream(x.device))
    return codes, scales, ts


@torch.library.custom_op("mxattn::quantize", mutates_args=())
def quantize_op(x: torch.Tensor, format: str, axis: int, layout: str,
                tensor_scale: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    codes, scales, ts = quantize_impl(x, format, axis, layout, tensor_scale)
    return codes, scales, ts.clone() if ts is one(x.device) else ts


@quantize_op.register_fake
def _(x, format, axis, layout, tensor_scale):
    code_shape, scale_bytes = geometry(tuple(x.shape), format, axis, layout)
    return (x.new_empty(code_shape, dtype=torch.uint8), x.new_empty((scale_bytes,), dtype=torch.uint8),
            x.new_empty((1,), dtype=torch.float32))


def dequantize_impl(codes: torch.Tensor, scales: torch.Tensor, tensor_scale: torch.Tensor, shape: List[int],
                    format: str, axis: int, layout: str, dtype: torch.dtype) -> torch.Tensor:
    out = torch.empty(shape, dtype=dtype, device=codes.device)
    _k.dequantize(codes.data_ptr(), scales.data_ptr(), tensor_scale.data_ptr(), format, layout, out.data_ptr(),
                  DTYPE_NAMES[dtype], list(shape), _strides(out), axis, stream(codes.device))
    return out


@torch.library.custom_op("mxattn::dequantize", mutates_args=())
def dequantize_op(codes: torch.Tensor, scales: torch.Tensor, tensor_scale: torch.Tensor, shape: List[int],
                  format: str, axis: int, layout: str, dtype: torch.dtype) -> torch.Tensor:
    return dequantize_impl(codes, scales, tensor_scale, shape, format, axis, layout, dtype)


@dequantize_op.register_fake
def _(codes, scales, tensor_scale, shape, format, axis, layout, dtype):
    return codes.new_empty(shape, dtype=dtype)


def convert_scales_impl(scales: torch.Tensor, rows: int, cols: int, src_layout: str, dst_layout: str,
                        dst_bytes: int) -> torch.Tensor:
    out = torch.empty((dst_bytes,), dtype=torch.uint8, device=scales.device)
    _k.convert_scale_layout(scales.data_ptr(), src_layout, out.data_ptr(), dst_layout, rows, cols,
                            stream(scales.device))
    return out


@torch.library.custom_op("mxattn::convert_scales", mutates_args=())
def convert_scales_op(scales: torch.Tensor, rows: int, cols: int, src_layout: str, dst_layout: str,
                      dst_bytes: int) -> torch.Tensor:
    return convert_scales_impl(scales, rows, cols, src_layout, dst_layout, dst_bytes)


@convert_scales_op.register_fake
def _(scales, rows, cols, src_layout, dst_layout, dst_bytes):
    return scales.new_empty((dst_bytes,), dtype=torch.uint8)


# ---- prefill attention ----

def _operand(fmt: str, codes: torch.Tensor, scales: Optional[torch.Tensor], ts: Optional[torch.Tensor]):
    if fmt == "dense":
        return ("dense", codes.data_ptr(), DTYPE_NAMES[codes.dtype], tuple(codes.stride()[:3]))
    return (fmt, codes.data_ptr(), scales.data_ptr(), ts.data_ptr())


def attention_impl(q: torch.Tensor, q_scales: Optional[torch.Tensor], q_ts: Optional[torch.Tensor], q_format: str,
                   k: torch.Tensor, k_scales: torch.Tensor, k_ts: torch.Tensor, k_format: str,
                   v: torch.Tensor, v_scales: torch.Tensor, v_ts: torch.Tensor, v_format: str,
                   shape: List[int], causal: bool, softmax_scale: float, kernel: str, out_dtype: torch.dtype,
                   return_lse: bool, cu_seqlens_q: Optional[torch.Tensor], cu_seqlens_k: Optional[torch.Tensor],
                   seqused_k: Optional[torch.Tensor]) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """shape: (batch, seq_q, seq_kv, heads_q, heads_kv, head_dim) as the kernel takes them (a packed batch:
    its sequence count and longest lengths). q, k: [B, S, H, row] codes (or q dense [B, S, H, D]); v: [B, H, D, row].
    Returns out and the LSE (None without return_lse)."""
    batch, seq_q, _, heads_q, _, head_dim = shape
    rows = (k.shape[0], q.shape[1], k.shape[1])
    out = torch.empty((rows[0], rows[1], heads_q, head_dim), dtype=out_dtype, device=k.device)
    lse = None
    if return_lse and cu_seqlens_q is not None:  # a packed batch's rows past a sequence's length stay NaN
        lse = torch.full((batch, heads_q, seq_q), float("nan"), dtype=torch.float32, device=k.device)
    elif return_lse:
        lse = torch.empty((batch, heads_q, seq_q), dtype=torch.float32, device=k.device)
    ptr = lambda t: 0 if t is None else t.data_ptr()  # noqa: E731
    _k.attention_prefill(_operand(q_format, q, q_scales, q_ts), _operand(k_format, k, k_scales, k_ts),
                         _operand(v_format, v, v_scales, v_ts), tuple(shape), rows, causal, softmax_scale, kernel,
                         out.data_ptr(), DTYPE_NAMES[out_dtype], tuple(out.stride()[:3]),
                         ptr(lse), ptr(cu_seqlens_q), ptr(cu_seqlens_k), ptr(seqused_k), stream(k.device))
    return out, lse


@torch.library.custom_op("mxattn::attention", mutates_args=())
def attention_op(q: torch.Tensor, q_scales: Optional[torch.Tensor], q_ts: Optional[torch.Tensor], q_format: str,
                 k: torch.Tensor, k_scales: torch.Tensor, k_ts: torch.Tensor, k_format: str,
                 v: torch.Tensor, v_scales: torch.Tensor, v_ts: torch.Tensor, v_format: str,
                 shape: List[int], causal: bool, softmax_scale: float, kernel: str, out_dtype: torch.dtype,
                 return_lse: bool, cu_seqlens_q: Optional[torch.Tensor], cu_seqlens_k: Optional[torch.Tensor],
                 seqused_k: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    out, lse = attention_impl(q, q_scales, q_ts, q_format, k, k_scales, k_ts, k_format, v, v_scales, v_ts, v_format,
                              shape, causal, softmax_scale, kernel, out_dtype, return_lse, cu_seqlens_q, cu_seqlens_k,
                              seqused_k)
    return out, lse if lse is not None else out.new_empty((0,), dtype=torch.float32)


@attention_op.register_fake
def _(q, q_scales, q_ts, q_format, k, k_scales, k_ts, k_format, v, v_scales, v_ts, v_format, shape, causal,
      softmax_scale, kernel, out_dtype, return_lse, cu_seqlens_q, cu_seqlens_k, seqused_k):
    batch, seq_q, _, heads_q, _, head_dim = shape
    out = k.new_empty((k.shape[0], q.shape[1], heads_q, head_dim), dtype=out_dtype)
    lse = k.new_empty((batch, heads_q, seq_q) if return_lse else (0,), dtype=torch.float32)
    return out, lse


# ---- the paged KV cache ----

@functools.lru_cache(maxsize=64)
def kv_cache(k_format: str, v_format: str, num_pages: int, page_size: int, heads_kv: int, head_dim: int):
    """A launcher object for a cache geometry (the ops bind the arrays' addresses to it each call)."""
    return _k.KvCache(k_format, v_format, num_pages, page_size, heads_kv, head_dim)


def _cache_launcher(spec: List[int], k_format: str, v_format: str, arrays: List[torch.Tensor]):
    c = kv_cache(k_format, v_format, *spec)
    c.bind(*(a.data_ptr() for a in arrays))
    return c


def append_impl(launcher, k: torch.Tensor, v: torch.Tensor, block_table: torch.Tensor,
                seq_lens: torch.Tensor) -> None:
    launcher.append(block_table.data_ptr(), block_table.shape[1], seq_lens.data_ptr(), k.shape[0], k.shape[1],
                    k.data_ptr(), k.stride()[:3], v.data_ptr(), v.stride()[:3], DTYPE_NAMES[k.dtype], stream(k.device))


@torch.library.custom_op("mxattn::kv_append",
                         mutates_args=("k_codes", "k_scales", "v_codes", "v_scales"))
def kv_append_op(k: torch.Tensor, v: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor,
                 k_codes: torch.Tensor, k_scales: torch.Tensor, v_codes: torch.Tensor, v_scales: torch.Tensor,
                 k_tensor_scale: torch.Tensor, v_tensor_scale: torch.Tensor, spec: List[int], k_format: str,
                 v_format: str) -> None:
    arrays = [k_codes, k_scales, v_codes, v_scales, k_tensor_scale, v_tensor_scale]
    append_impl(_cache_launcher(spec, k_format, v_format, arrays), k, v, block_table, seq_lens)


@kv_append_op.register_fake
def _(k, v, block_table, seq_lens, k_codes, k_scales, v_codes, v_scales, k_tensor_scale, v_tensor_scale, spec,
      k_format, v_format):
    return None


def decode_impl(launcher, q: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor, max_seq_len: int,
                causal: bool, softmax_scale: float, return_lse: bool,
                workspace: torch.Tensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Returns out and the LSE (None without return_lse)."""
    batch, q_len, heads_q, _ = q.shape
    out = torch.empty_like(q)
    lse = torch.empty((batch, heads_q, q_len), dtype=torch.float32, device=q.device) if return_lse else None
    dtype = DTYPE_NAMES[q.dtype]
    launcher.decode(block_table.data_ptr(), block_table.shape[1], seq_lens.data_ptr(), batch, max_seq_len,
                    q.data_ptr(), dtype, q_len, heads_q, q.stride()[:3], causal, softmax_scale, out.data_ptr(), dtype,
                    out.stride()[:3], lse.data_ptr() if return_lse else 0, workspace.data_ptr(), workspace.numel(),
                    stream(q.device))
    return out, lse


@torch.library.custom_op("mxattn::paged_decode", mutates_args=("workspace",))
def paged_decode_op(q: torch.Tensor, block_table: torch.Tensor, seq_lens: torch.Tensor, k_codes: torch.Tensor,
                    k_scales: torch.Tensor, v_codes: torch.Tensor, v_scales: torch.Tensor,
                    k_tensor_scale: torch.Tensor, v_tensor_scale: torch.Tensor, workspace: torch.Tensor,
                    spec: List[int], k_format: str, v_format: str, max_seq_len: int, causal: bool,
                    softmax_scale: float, return_lse: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    arrays = [k_codes, k_scales, v_codes, v_scales, k_tensor_scale, v_tensor_scale]
    out, lse = decode_impl(_cache_launcher(spec, k_format, v_format, arrays), q, block_table, seq_lens, max_seq_len,
                           causal, softmax_scale, return_lse, workspace)
    return out, lse if lse is not None else q.new_empty((0,), dtype=torch.float32)


@paged_decode_op.register_fake
def _(q, block_table, seq_lens, k_codes, k_scales, v_codes, v_scales, k_tensor_scale, v_tensor_scale, workspace,
      spec, k_format, v_format, max_seq_len, causal, softmax_scale, return_lse):
    batch, q_len, heads_q, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((batch, heads_q, q_len) if return_lse else (0,), dtype=torch.float32)
