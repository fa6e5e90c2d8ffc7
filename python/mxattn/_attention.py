"""attention() over MX (or dense) Q, K, V and PagedKVCache, on torch CUDA tensors."""
from __future__ import annotations

import math
from typing import Optional, Sequence

from ._tensor import MXTensor, canonical_format, ops, quantize, torch_tensor

_KERNELS = ("auto", "portable", "hopper", "hopper-exact", "block-scaled", "block-scaled-emulated")


def _torch():
    return ops().torch


def _check_cuda(name: str, t, device=None, dtypes=None, ndim=None):
    if not torch_tensor(t) or not t.is_cuda:
        raise ValueError(f"{name}: must be a torch CUDA tensor")
    if device is not None and t.device != device:
        raise ValueError(f"{name}: on {t.device}, expected {device} (the other operands')")
    if dtypes is not None and t.dtype not in dtypes:
        raise TypeError(f"{name}: dtype must be {' or '.join(str(d).replace('torch.', '') for d in dtypes)}, got "
                        f"{str(t.dtype).replace('torch.', '')}")
    if ndim is not None and t.ndim != ndim:
        raise ValueError(f"{name}: must be {ndim}-D, got shape {tuple(t.shape)}")


def _offsets(name: str, t, n: Optional[int], device):
    torch = _torch()
    _check_cuda(name, t, device, (torch.int32,), 1)
    if not t.is_contiguous():
        raise ValueError(f"{name}: must be contiguous")
    if n is not None and t.shape[0] != n:
        raise ValueError(f"{name}: must have {n} entries, got {t.shape[0]}")


def _mx_operand(name: str, t: MXTensor, axis: int, device):
    t.check(name)
    if t.device != device:
        raise ValueError(f"{name}: on {t.device}, expected {device} (the other operands')")
    if t.ndim != 4:
        raise ValueError(f"{name}: must be [B, S, H, D], got shape {t.shape}")
    if t.axis != axis:
        raise ValueError(f"{name}: must be blocked along {'D (axis=-1)' if axis == 3 else 'the keys (axis=1)'}, "
                         f"got axis={t.axis}")
    if t.layout != "rowmajor":
        raise ValueError(f"{name}: attention reads row-major scales; use {name}.to(layout='rowmajor')")
    return t.codes, t.scales, t.tensor_scale, t.format


def attention(q, k, v, causal: bool = False, softmax_scale: Optional[float] = None, return_lse: bool = False,
              cu_seqlens_q=None, cu_seqlens_k=None, seqused_k=None, max_seqlen_q: Optional[int] = None,
              max_seqlen_k: Optional[int] = None, formats: Optional[Sequence[Optional[str]]] = None,
              kernel: str = "auto", out_dtype=None):
    """Prefill attention, softmax(Q K^T * softmax_scale) V, over block-scaled operands.

    q, k, v: MXTensors from `mxattn.quantize` of [B, S, H, D] CUDA tensors (q and k blocked along D,
    axis=-1; v along the keys, axis=1; row-major scales), or bfloat16/float16 [B, S, H, D] tensors with
    `formats=(q_format, k_format, v_format)` to quantize them here (a q_format of None keeps Q dense, which
    the kernels take as is). H_q a multiple of H_kv (GQA); D 64, 128 or 256. causal: bottom-right aligned
    (query i of S_q sees keys up to i + S_kv - S_q). softmax_scale: default 1/sqrt(D).

    A packed batch (FlashAttention's varlen layout): q, k, v are a batch of one, [1, total, H, D], and
    cu_seqlens_q, cu_seqlens_k (int32 CUDA, batch + 1 offsets) mark each sequence's rows; each key offset a
    multiple of V's block and of 16 (pad between sequences and give the keys each uses in seqused_k).
    max_seqlen_q / max_seqlen_k: the longest lengths; read from the offsets when not given (a sync, so give
    them under CUDA graph capture and torch.compile).

    Returns out [B, S_q, H_q, D] (out_dtype: default q's dtype when dense, else bfloat16) and, with
    return_lse, the natural-log LSE [B, H_q, S_q] float32 (a packed batch: [batch, H_q, max_seqlen_q], NaN
    past each sequence's length). kernel: 'auto' (the launcher's choice), 'portable', 'hopper' (FP8
    tensor cores, P in E4M3), 'hopper-exact' (P and V in BF16), 'block-scaled' (sm_120 GPUs: the MX codes
    and scales straight into the block-scaled tensor cores) or 'block-scaled-emulated' (that kernel with its
    instructions emulated, on any GPU: slow, for checking it).
    """
    torch = _torch()
    dense_types = (torch.bfloat16, torch.float16)
    if formats is not None:
        if len(formats) != 3:
            raise ValueError("formats: must be (q_format, k_format, v_format)")
        for name, t, fmt in (("q", q, formats[0]), ("k", k, formats[1]), ("v", v, formats[2])):
            if fmt is not None:
                _check_cuda(name, t, dtypes=dense_types, ndim=4)
        q = quantize(q, formats[0], axis=-1) if formats[0] is not None else q
        k = quantize(k, formats[1], axis=-1)
        v = quantize(v, formats[2], axis=1)
    if not isinstance(k, MXTensor) or not isinstance(v, MXTensor):
        raise TypeError("k, v: must be MXTensors, or dense tensors with formats=(q_format, k_format, v_format)")
    device = k.device
    k_codes, k_scales, k_ts, k_format = _mx_operand("k", k, 3, device)
    v_codes, v_scales, v_ts, v_format = _mx_operand("v", v, 1, device)
    batch, seq_kv, heads_kv, head_dim = k.shape
    if tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"v: shape {v.shape} must equal k's {k.shape}")
    if isinstance(q, MXTensor):
        q_codes, q_scales, q_ts, q_format = _mx_operand("q", q, 3, device)
        q_shape = q.shape
        default_out = torch.bfloat16
    else:
        _check_cuda("q", q, device, dense_types, 4)
        if q.stride(3) != 1:
            raise ValueError("q: its last dimension (D) must be contiguous")
        q_codes, q_scales, q_ts, q_format = q, None, None, "dense"
        q_shape = tuple(q.shape)
        default_out = q.dtype
    if q_shape[0] != batch or q_shape[3] != head_dim:
        raise ValueError(f"q: shape {tuple(q_shape)} does not match k's {k.shape} (B and D)")
    heads_q = q_shape[2]
    if heads_q % heads_kv:
        raise ValueError(f"q: H_q {heads_q} must be a multiple of k's H_kv {heads_kv}")
    out_dtype = default_out if out_dtype is None else out_dtype
    if out_dtype not in dense_types:
        raise TypeError(f"out_dtype: must be torch.bfloat16 or torch.float16, got {out_dtype}")
    if kernel not in _KERNELS:
        raise ValueError(f"kernel: {kernel!r} must be one of {', '.join(_KERNELS)}")
    scale = 1.0 / math.sqrt(head_dim) if softmax_scale is None else float(softmax_scale)
    if not math.isfinite(scale):
        raise ValueError(f"softmax_scale: must be finite, got {scale}")
    seq_q = q_shape[1]
    if (cu_seqlens_q is None) != (cu_seqlens_k is None):
        raise ValueError("cu_seqlens_q, cu_seqlens_k: a packed batch needs both")
    if cu_seqlens_q is not None:
        if batch != 1:
            raise ValueError(f"q, k, v: a packed batch is a batch of one, got B = {batch}")
        _offsets("cu_seqlens_q", cu_seqlens_q, None, device)
        n = cu_seqlens_q.shape[0] - 1
        if n < 1:
            raise ValueError("cu_seqlens_q: needs batch + 1 >= 2 offsets")
        _offsets("cu_seqlens_k", cu_seqlens_k, n + 1, device)
        if seqused_k is not None:
            _offsets("seqused_k", seqused_k, n, device)
        if max_seqlen_q is None:
            max_seqlen_q = int((cu_seqlens_q[1:] - cu_seqlens_q[:-1]).max())
        if max_seqlen_k is None:
            lens = seqused_k if seqused_k is not None else cu_seqlens_k[1:] - cu_seqlens_k[:-1]
            max_seqlen_k = int(lens.max())
        batch, seq_q, seq_kv = n, max(1, int(max_seqlen_q)), max(1, int(max_seqlen_k))
    elif seqused_k is not None:
        raise ValueError("seqused_k: only for a packed batch (cu_seqlens_q, cu_seqlens_k)")
    shape = [batch, seq_q, seq_kv, heads_q, heads_kv, head_dim]
    o = ops()
    f = o.attention_op if o.compiling() else o.attention_impl
    out, lse = f(q_codes, q_scales, q_ts, q_format, k_codes, k_scales, k_ts, k_format, v_codes, v_scales, v_ts,
                 v_format, shape, bool(causal), scale, kernel, out_dtype, bool(return_lse), cu_seqlens_q, cu_seqlens_k,
                 seqused_k)
    return (out, lse) if return_lse else out


class PagedKVCache:
    """A paged KV cache whose K and V are stored block-scaled, with append and decode on the GPU.

    Pages hold page_size tokens (a power of two) of every KV head; sequence b's token j lives in page
    block_table[b, j // page_size], slot j % page_size (FlashInfer's and vLLM's page-table model). K and V
    are blocked along D, each in its own format (MXFP8 K with MXFP4 V, say). Formats with a tensor scale
    (NVFP4) take it per cache: k_scale / v_scale (S_enc; default 1, for values up to 6 x 448).

    The arrays (k_codes, k_scales, v_codes, v_scales: uint8 [num_pages, heads_kv, page_size, bytes]) and a
    decode workspace are held by the object; calls run on the current CUDA stream and never synchronize.
    """

    def __init__(self, num_pages: int, page_size: int, heads_kv: int, head_dim: int, k_format: str = "mxfp8",
                 v_format: Optional[str] = None, device="cuda", k_scale: float = 1.0, v_scale: float = 1.0):
        import torch
        for name, n in (("num_pages", num_pages), ("page_size", page_size), ("heads_kv", heads_kv)):
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"{name}: must be a positive int, got {n!r}")
        if page_size & (page_size - 1):
            raise ValueError(f"page_size: must be a power of two, got {page_size}")
        if head_dim not in (64, 128, 256):
            raise ValueError(f"head_dim: must be 64, 128 or 256, got {head_dim}")
        self.k_format = canonical_format(k_format)
        self.v_format = canonical_format(v_format if v_format is not None else k_format)
        self.num_pages, self.page_size, self.heads_kv, self.head_dim = num_pages, page_size, heads_kv, head_dim
        self.device = torch.device(device)
        if self.device.type != "cuda":
            raise ValueError(f"device: must be a CUDA device, got {device}")
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self._device_index = self.device.index
        self._bf16, self._f16, self._int32 = torch.bfloat16, torch.float16, torch.int32
        o = ops()
        self._spec = [num_pages, page_size, heads_kv, head_dim]
        launcher = o._k.KvCache(self.k_format, self.v_format, *self._spec)
        u8 = dict(dtype=torch.uint8, device=self.device)
        row = lambda n: (num_pages, heads_kv, page_size, n // (num_pages * heads_kv * page_size))  # noqa: E731
        self.k_codes = torch.zeros(row(launcher.k_code_bytes), **u8)
        self.k_scales = torch.zeros(row(launcher.k_scale_bytes), **u8)
        self.v_codes = torch.zeros(row(launcher.v_code_bytes), **u8)
        self.v_scales = torch.zeros(row(launcher.v_scale_bytes), **u8)
        f32 = dict(dtype=torch.float32, device=self.device)
        self.k_tensor_scale = torch.full((1,), float(k_scale), **f32)
        self.v_tensor_scale = torch.full((1,), float(v_scale), **f32)
        launcher.bind(*(a.data_ptr() for a in self._arrays()))
        self._launcher = launcher
        self._workspace = torch.empty((0,), **u8)
        self._default_scale = 1.0 / math.sqrt(head_dim)
        self._workspace_for = {}

    def _arrays(self):
        return [self.k_codes, self.k_scales, self.v_codes, self.v_scales, self.k_tensor_scale, self.v_tensor_scale]

    def _check_pages(self, block_table, seq_lens, batch: int):
        torch = _torch()
        _check_cuda("block_table", block_table, self.device, (torch.int32,), 2)
        if block_table.shape[0] != batch or block_table.stride(1) != 1 or block_table.stride(0) != block_table.shape[1]:
            raise ValueError(f"block_table: must be contiguous int32 [B = {batch}, max_pages], got shape "
                             f"{tuple(block_table.shape)}")
        _offsets("seq_lens", seq_lens, batch, self.device)

    def _valid_decode(self, q, block_table, seq_lens) -> bool:
        """decode's checks as one expression, for the common case (the separate checks cost several microseconds a
        call in attribute lookups; bench/python_overhead.py)."""
        dev, i32 = self._device_index, self._int32
        try:
            b = q.shape[0]
            return (q.get_device() == dev and (q.dtype == self._bf16 or q.dtype == self._f16) and q.dim() == 4
                    and q.shape[3] == self.head_dim and q.stride(3) == 1 and 1 <= q.shape[1] <= 16
                    and q.shape[2] % self.heads_kv == 0 and block_table.get_device() == dev
                    and block_table.dtype == i32 and block_table.dim() == 2 and block_table.shape[0] == b
                    and block_table.is_contiguous() and seq_lens.get_device() == dev and seq_lens.dtype == i32
                    and seq_lens.shape == (b,) and seq_lens.is_contiguous())
        except (AttributeError, IndexError, TypeError):
            return False

    def _check_tokens(self, name: str, t, heads: Optional[int]):
        torch = _torch()
        _check_cuda(name, t, self.device, (torch.bfloat16, torch.float16), 4)
        if t.shape[3] != self.head_dim or t.stride(3) != 1:
            raise ValueError(f"{name}: must be [B, tokens, H, {self.head_dim}] with D contiguous, got shape "
                             f"{tuple(t.shape)}")
        if heads is not None and t.shape[2] != heads:
            raise ValueError(f"{name}: {t.shape[2]} heads, the cache has {heads}")

    def append(self, k, v, block_table, seq_lens) -> None:
        """Quantize k and v ([B, new_tokens, H_kv, D], bfloat16/float16) into the cache at positions
        seq_lens[b] .. seq_lens[b] + new_tokens - 1 of each sequence (seq_lens: int32 [B], the tokens held
        before this call; the caller advances it). The pages must be in block_table already."""
        self._check_tokens("k", k, self.heads_kv)
        self._check_tokens("v", v, self.heads_kv)
        if v.shape != k.shape or v.dtype != k.dtype:
            raise ValueError(f"v: shape {tuple(v.shape)} and dtype must match k's {tuple(k.shape)}")
        self._check_pages(block_table, seq_lens, k.shape[0])
        o = ops()
        if o.compiling():
            o.kv_append_op(k, v, block_table, seq_lens, *self._arrays(), self._spec, self.k_format, self.v_format)
        else:
            o.append_impl(self._launcher, k, v, block_table, seq_lens)

    def workspace(self, batch: int, max_seq_len: int, q_len: int, heads_q: int):
        """The decode workspace for these sizes (grown as needed; allocate it before a CUDA graph capture by
        one call at the largest sizes)."""
        key = (batch, max_seq_len, q_len, heads_q)
        need = self._workspace_for.get(key)
        if need is None:
            need = self._workspace_for[key] = self._launcher.workspace_bytes(batch, max_seq_len, q_len, heads_q)
        if self._workspace.numel() < need:
            self._workspace = _torch().empty((need,), dtype=_torch().uint8, device=self.device)
        return self._workspace

    def decode(self, q, block_table, seq_lens, causal: bool = True, return_lse: bool = False,
               softmax_scale: Optional[float] = None, max_seq_len: Optional[int] = None, out=None):
        """Attention of q ([B, q_len, H_q, D], q_len 1..16, bfloat16/float16) over each sequence's cached
        tokens. seq_lens (int32 [B]) counts the query tokens too (append them first); causal: query i sees
        keys up to seq_len - q_len + i. max_seq_len: a host-side bound of seq_lens that sizes the split grid
        (default: block_table's pages times page_size, which needs no sync). out: where to write the output
        (q's shape, dtype and device; default a new tensor). Returns out and, with return_lse, the natural-log
        LSE [B, H_q, q_len] float32."""
        if not self._valid_decode(q, block_table, seq_lens):  # then the checks below name what is wrong
            self._check_tokens("q", q, None)
            if not 1 <= q.shape[1] <= 16:
                raise ValueError(f"q: q_len {q.shape[1]} must be in 1..16")
            if q.shape[2] % self.heads_kv:
                raise ValueError(f"q: H_q {q.shape[2]} must be a multiple of the cache's H_kv {self.heads_kv}")
            self._check_pages(block_table, seq_lens, q.shape[0])
        batch, q_len, heads_q, _ = q.shape
        if out is not None and (out.shape != q.shape or out.dtype != q.dtype or out.get_device() != self._device_index
                                or out.stride(3) != 1):
            raise ValueError(f"out: must be like q ({tuple(q.shape)}, {q.dtype}, {self.device}) with D contiguous")
        if max_seq_len is None:
            max_seq_len = block_table.shape[1] * self.page_size
        scale = self._default_scale if softmax_scale is None else float(softmax_scale)
        ws = self.workspace(batch, max_seq_len, q_len, heads_q)
        o = ops()
        if o.compiling():
            res, lse = o.paged_decode_op(q, block_table, seq_lens, *self._arrays(), ws, self._spec, self.k_format,
                                         self.v_format, int(max_seq_len), bool(causal), scale, bool(return_lse))
            if out is not None:
                out.copy_(res)
                res = out
            return (res, lse) if return_lse else res
        # The eager path, inline (o.decode_impl's launch, less a call and a few lookups).
        if out is None:
            out = _torch().empty_like(q)
        lse = _torch().empty((batch, heads_q, q_len), dtype=_torch().float32, device=q.device) if return_lse else None
        dtype = "bf16" if q.dtype == self._bf16 else "f16"
        self._launcher.decode(block_table.data_ptr(), block_table.shape[1], seq_lens.data_ptr(), batch, max_seq_len,
                              q.data_ptr(), dtype, q_len, heads_q, q.stride()[:3], causal, scale, out.data_ptr(), dtype,
                              out.stride()[:3], lse.data_ptr() if return_lse else 0, ws.data_ptr(), ws.numel(),
                              o.stream_of(self._device_index))
        return (out, lse) if return_lse else out

    def __repr__(self) -> str:
        return (f"PagedKVCache(num_pages={self.num_pages}, page_size={self.page_size}, heads_kv={self.heads_kv}, "
                f"head_dim={self.head_dim}, k_format='{self.k_format}', v_format='{self.v_format}', "
                f"device={self.device})")
