"""mxattn: microscaling (MX) block-scaled tensors and fused attention over them.

- `quantize(x, format, axis, layout)` -> `MXTensor`: torch CUDA tensors through the GPU kernels, NumPy
  float32 arrays through the CPU reference (the same bits); `MXTensor.dequantize()`, `.to(layout=...)`.
- `attention(q, k, v, ...)`: prefill attention over MX (or dense) Q, K, V on the GPU.
- `PagedKVCache`: a paged, block-scaled KV cache with `append` and `decode` on the GPU.
- The GPU functions are also `torch.library` ops (`torch.ops.mxattn.*`: fake implementations for
  `torch.compile`, the current stream, CUDA-graph safe).
- CPU reference: element codecs (`encode`, `decode`), `format_info`, scale layouts (`to_tiled`,
  `from_tiled`), FP64 attention (`attention_fp64`, `mx_attention`).
Built with CUDA, `mxattn.gpu` holds the lower-level GPU bindings (DLPack tensors in and out). `import mxattn`
does not import torch.
"""
import sys as _sys

from . import _mxattn
from ._mxattn import (  # noqa: F401
    QuantizedTensor,
    attention_fp64,
    decode,
    encode,
    format_info,
    from_tiled,
    mx_attention,
    named_formats,
    to_tiled,
)
from ._tensor import MXTensor, dequantize, quantize  # noqa: F401
from ._attention import PagedKVCache, attention  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "MXTensor",
    "PagedKVCache",
    "QuantizedTensor",
    "attention",
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
