"""MXTensor and quantize(): one type for a block-scaled tensor, on the GPU (torch) or the CPU (NumPy)."""
from __future__ import annotations

import sys
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _mxattn


# torch and the ops module, looked up once: these functions run under torch.compile too, where each step must
# be traceable Python (no module-table lookups, imports or calls into the compiled module on the way).
_torch_module = None
_ops_module = None


def torch_tensor(x: Any) -> bool:
    """Whether x is a torch tensor, without importing torch (a program holding one has imported it)."""
    global _torch_module
    if _torch_module is None:
        _torch_module = sys.modules.get("torch")
        if _torch_module is None:
            return False
    return isinstance(x, _torch_module.Tensor)


def ops():
    """mxattn._ops (torch's ops), imported on first use."""
    global _ops_module
    if _ops_module is None:
        from . import _ops

        _ops_module = _ops
    return _ops_module


def normalize_axis(axis: int, ndim: int, name: str = "axis") -> int:
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{name}: must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim


def check_layout(layout: str) -> str:
    if layout not in ("rowmajor", "tiled"):
        raise ValueError(f"layout: expected 'rowmajor' or 'tiled', got {layout!r}")
    return layout


_canonical_names = {}


def canonical_format(format: str) -> str:
    """The canonical name of a format (format_info's), parsed once a spelling (a dict lookup after)."""
    name = _canonical_names.get(format)
    if name is None:
        if not isinstance(format, str):
            raise TypeError(f"format: must be a format name (str), got {type(format).__name__}")
        name = _canonical_names[format] = _mxattn.format_info(format)["name"]  # ValueError "format: ..."
    return name


class MXTensor:
    """A block-scaled (microscaling) tensor.

    codes         packed element codes, uint8, the block axis moved last: [..., row_bytes]
    scales        the block scales' bytes (E8M0 or UE4M3), flat, in `layout` ('rowmajor' or 'tiled': the
                  128x4 layout of cuDNN, cuBLAS and CUTLASS, padding included)
    tensor_scale  S_enc, float32 of one element (1 for formats without a tensor scale)
    format        canonical format name (`mxattn.format_info`)
    shape         the logical (source) shape; `axis` is the block axis in it

    On the GPU the three arrays are torch CUDA tensors; from a NumPy array they are NumPy arrays (the CPU
    reference). Attention takes Q and K blocked along D (axis -1) and V along the keys (axis 1), with
    row-major scales.
    """

    def __init__(self, codes, scales, tensor_scale, format: str, shape: Sequence[int], axis: int, layout: str,
                 _reference=None):
        self.codes, self.scales, self.tensor_scale = codes, scales, tensor_scale
        self.shape = tuple(map(int, shape))
        self.format, self.layout = canonical_format(format), check_layout(layout)
        self.axis = normalize_axis(axis, len(self.shape))
        self._reference = _reference  # the CPU reference's QuantizedTensor (NumPy arrays)

    def check(self, name: str = "t") -> "MXTensor":
        """Raises ValueError, naming `name`, unless the arrays hold a tensor of this format and shape on one CUDA
        device (the GPU functions read them as such; an MXTensor from mxattn.quantize always does)."""
        o = ops()
        if o.compiling():  # (inside a compiled graph the tensors come from the ops themselves)
            return self
        torch = o.torch
        if not self.is_cuda:
            raise ValueError(f"{name}: an MXTensor on the GPU (mxattn.quantize of a CUDA tensor)")
        code_shape, scale_bytes = o.geometry(self.shape, self.format, self.axis, self.layout)
        c, s, t = self.codes, self.scales, self.tensor_scale
        dev = c.get_device()
        if not (c.dtype == torch.uint8 and tuple(c.shape) == code_shape and c.is_contiguous()
                and torch_tensor(s) and s.dtype == torch.uint8 and s.numel() >= scale_bytes and s.is_contiguous()
                and s.get_device() == dev and torch_tensor(t) and t.dtype == torch.float32 and t.numel() == 1
                and t.get_device() == dev):
            raise ValueError(
                f"{name}: a {self.format} tensor of shape {self.shape} blocked along axis {self.axis} needs codes "
                f"uint8 {code_shape}, {self.layout} scales of {scale_bytes} bytes (uint8) and a float32 tensor scale "
                f"of one element, contiguous on one CUDA device")
        return self

    @property
    def is_cuda(self) -> bool:
        return torch_tensor(self.codes) and self.codes.is_cuda

    @property
    def device(self):
        return self.codes.device if torch_tensor(self.codes) else "cpu"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def stored_shape(self) -> Tuple[int, ...]:
        """The element shape in stored order: the block axis last."""
        s = list(self.shape)
        s.append(s.pop(self.axis))
        return tuple(s)

    @property
    def scale_shape(self) -> Tuple[int, int]:
        """(rows, blocks a row): the logical grid of block scales."""
        block = _mxattn.format_info(self.format)["block"]
        rows = int(np.prod(self.stored_shape[:-1], dtype=np.int64))
        return rows, -(-self.shape[self.axis] // block)

    def dequantize(self, dtype=None):
        """The decoded values in the logical shape: a torch tensor of `dtype` (default bfloat16) on the GPU,
        float32 NumPy on the CPU."""
        if self._reference is not None:
            values = _mxattn.dequantize(self._reference)
            return values if dtype is None else values.astype(dtype)
        o = ops()
        torch = o.torch
        dtype = torch.bfloat16 if dtype is None else dtype
        if dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise TypeError(f"dtype: must be torch.float32, float16 or bfloat16, got {dtype}")
        self.check("self")
        f = o.dequantize_op if o.compiling() else o.dequantize_impl
        return f(self.codes, self.scales, self.tensor_scale, list(self.shape), self.format, self.axis, self.layout,
                 dtype)

    def to(self, layout: str) -> "MXTensor":
        """The same tensor with its scales in another layout ('rowmajor' or 'tiled')."""
        check_layout(layout)
        if layout == self.layout:
            return self
        if self._reference is not None:
            return reference_tensor(self._reference.with_layout(layout), self.format, self.shape, self.axis, layout)
        self.check("self")
        rows, cols = self.scale_shape
        o = ops()
        dst_bytes = o.geometry(self.shape, self.format, self.axis, layout)[1]
        f = o.convert_scales_op if o.compiling() else o.convert_scales_impl
        scales = f(self.scales, rows, cols, self.layout, layout, dst_bytes)
        return MXTensor(self.codes, scales, self.tensor_scale, self.format, self.shape, self.axis, layout)

    def __repr__(self) -> str:
        return (f"MXTensor(format='{self.format}', shape={self.shape}, axis={self.axis}, layout='{self.layout}', "
                f"device={self.device})")


def quantize(x, format: str, axis: int = -1, layout: str = "rowmajor",
             tensor_scale: Optional[Union[float, Any]] = None) -> MXTensor:
    """Quantize `x` into `format` with blocks along `axis`.

    x: a torch CUDA tensor (float32, float16 or bfloat16, any strides; the GPU kernels, on the current
    stream) or a float32 NumPy array (the CPU reference). tensor_scale: S_enc for formats with a tensor
    scale (NVFP4), a float or a one-element CUDA tensor; computed from the tensor's amax when not given.
    Both paths give the same bits.
    """
    format = canonical_format(format)
    check_layout(layout)
    if torch_tensor(x):
        o = ops()
        torch = o.torch
        if not x.is_cuda:
            raise ValueError("x: a torch tensor must be on a CUDA device (use .numpy() for the CPU reference)")
        if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise TypeError(f"x: dtype must be float32, float16 or bfloat16, got {x.dtype}")
        if x.ndim == 0:
            raise ValueError("x: expected at least one dimension, got a scalar")
        axis = normalize_axis(axis, x.ndim)
        ts = None
        if tensor_scale is not None:
            if not o.has_tensor_scale(format):
                raise ValueError(f"tensor_scale: format '{format}' has no tensor scale")
            if torch_tensor(tensor_scale):
                if tensor_scale.numel() != 1 or tensor_scale.device != x.device:
                    raise ValueError("tensor_scale: must be one element on x's device")
                ts = tensor_scale
            else:
                value = float(tensor_scale)
                if not (np.isfinite(value) and value > 0):
                    raise ValueError(f"tensor_scale: must be finite and positive, got {value}")
                ts = torch.full((1,), value, dtype=torch.float32, device=x.device)
        f = o.quantize_op if o.compiling() else o.quantize_impl
        codes, scales, s_enc = f(x, format, axis, layout, ts)
        return MXTensor(codes, scales, s_enc, format, x.shape, axis, layout)
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError(f"x: expected a torch CUDA tensor or a float32 NumPy array, got {type(x).__name__}")
    if x.ndim == 0:
        raise ValueError("x: expected at least one dimension, got a scalar")
    axis = normalize_axis(axis, x.ndim)
    r = _mxattn.quantize(x, format, block_axis=axis, layout=layout, tensor_scale=tensor_scale)
    return reference_tensor(r, format, x.shape, axis, layout)


def reference_tensor(r, format: str, shape, axis: int, layout: str) -> MXTensor:
    """An MXTensor over the CPU reference's QuantizedTensor r (codes shaped as on the GPU: [..., row_bytes])."""
    stored = list(shape)
    stored.pop(axis)
    codes = r.codes.reshape(tuple(stored) + (r.row_bytes,))
    return MXTensor(codes, r.scales, np.float32(r.tensor_scale), format, shape, axis, layout, r)


def dequantize(t, dtype=None):
    """t.dequantize(dtype) for an MXTensor; the reference's QuantizedTensor is accepted too."""
    if isinstance(t, MXTensor):
        return t.dequantize(dtype)
    if isinstance(t, _mxattn.QuantizedTensor):
        return _mxattn.dequantize(t)
    raise TypeError(f"t: expected an MXTensor, got {type(t).__name__}")
