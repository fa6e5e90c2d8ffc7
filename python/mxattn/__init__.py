"""mxattn: microscaling (MX) block-scaled tensors.

CPU reference codecs, block quantization, scale layouts and attention, over NumPy arrays.
Built with CUDA, `mxattn.gpu` holds the GPU kernels (DLPack tensors in and out); without CUDA it is absent.
"""
import sys as _sys

from . import _mxattn
from ._mxattn import (  # noqa: F401
    QuantizedTensor,
    attention_fp64,
    decode,
    dequantize,
    encode,
    format_info,
    from_tiled,
    mx_attention,
    named_formats,
    quantize,
    to_tiled,
)

__all__ = [
    "QuantizedTensor",
    "attention_fp64",
    "decode",
    "dequantize",
    "encode",
    "format_info",
    "from_tiled",
    "mx_attention",
    "named_formats",
    "quantize",
    "to_tiled",
]

# The GPU functions are a submodule of the compiled module (python/bindings_gpu.cu), present only in a CUDA
# build. Registered in sys.modules too, so that `import mxattn.gpu` works as well as `mxattn.gpu.quantize`.
if hasattr(_mxattn, "gpu"):
    gpu = _mxattn.gpu
    _sys.modules[__name__ + ".gpu"] = gpu
    __all__.append("gpu")
