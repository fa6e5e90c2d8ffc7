"""mxattn: microscaling (MX) block-scaled tensors.

CPU reference codecs, block quantization, scale layouts and attention, over NumPy arrays.
"""
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
