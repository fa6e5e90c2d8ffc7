"""The module's surface: format names and their meaning (DESIGN.md §2), QuantizedTensor, and errors that
name the bad argument."""
import gc
import math

import numpy as np
import pytest

import mxattn

# DESIGN.md §2: element, bits, block, scale, rule, tensor scale, max, smallest subnormal.
NAMED = {
    "mxfp8": ("e4m3", 8, 32, "ue8m0", "rceil", False, 448.0, 2.0**-9),
    "mxfp8_e5m2": ("e5m2", 8, 32, "ue8m0", "rceil", False, 57344.0, 2.0**-16),
    "mxfp6_e2m3": ("e2m3", 6, 32, "ue8m0", "rceil", False, 7.5, 2.0**-3),
    "mxfp6_e3m2": ("e3m2", 6, 32, "ue8m0", "rceil", False, 28.0, 2.0**-4),
    "mxfp4": ("e2m1", 4, 32, "ue8m0", "rceil", False, 6.0, 0.5),
    "mxint8": ("int8", 8, 32, "ue8m0", "rceil", False, 127 / 64, 2.0**-6),
    "nvfp4": ("e2m1", 4, 16, "ue4m3", "nvfp4", True, 6.0, 0.5),
}
KEYS = ("element", "bits", "block", "scale", "rule", "tensor_scale", "max", "min_subnormal")


def test_exports():
    for name in mxattn.__all__:
        assert hasattr(mxattn, name), name
    assert mxattn.named_formats() == list(NAMED)


@pytest.mark.parametrize("name", NAMED)
def test_named_format_info(name):
    info = mxattn.format_info(name)
    assert info["name"] == name
    assert tuple(info[k] for k in KEYS) == NAMED[name]
    assert info["bits_per_element"] == info["bits"] + 8 / info["block"]


@pytest.mark.parametrize(
    "spelling,canonical",
    [
        ("MXFP8", "mxfp8"),
        ("mxfp8_e4m3", "mxfp8"),
        ("e2m1/k32/ue8m0", "mxfp4"),
        ("e2m1/k16/ue4m3/ts", "nvfp4"),
        ("mxfp4/floor", "mxfp4/floor"),
        ("mxfp4/rceil", "mxfp4"),
        ("E3M2/K16/UE8M0", "e3m2/k16/ue8m0"),
        ("int4/k32/e8m0/floor", "int4/k32/ue8m0/floor"),
        ("e2m3/k16/ue4m3/ts", "e2m3/k16/ue4m3/ts"),
        ("e3m3/k128/ue4m3", "e3m3/k128/ue4m3"),
    ],
)
def test_format_names(spelling, canonical):
    info = mxattn.format_info(spelling)
    assert info["name"] == canonical
    assert mxattn.format_info(canonical) == info


def test_custom_format_info():
    info = mxattn.format_info("e3m3/k64/ue8m0/floor")
    assert (info["element"], info["bits"], info["block"], info["scale"], info["rule"]) == (
        "e3m3", 7, 64, "ue8m0", "floor")
    assert info["max"] == 2.0**4 * (1 + 7 / 8)  # all-finite: the top code is a number
    assert info["min_subnormal"] == 2.0 ** (1 - 3 - 3)
    assert info["bits_per_element"] == 7 + 8 / 64
    assert mxattn.format_info("int4/k8/ue8m0")["max"] == 7 / 4


@pytest.mark.parametrize(
    "name,fragment",
    [
        ("mxfp9", "unknown format 'mxfp9'"),
        ("e3m2/k12/ue8m0", "k8, k16, k32, k64 or k128"),
        ("e3m2/k16/fp32", "ue8m0 or ue4m3"),
        ("e3m2", "ELEMENT/kBLOCK/SCALE"),
        ("e9m2/k16/ue8m0", "1 + e + m <= 8"),
        ("int9/k16/ue8m0", "2 <= n <= 8"),
        ("float8/k16/ue8m0", "expected EeMm"),
        ("mxfp8/ts", "needs ue4m3"),
        ("nvfp4/floor", "NVFP4 rule is fixed"),
        ("mxfp4/bogus", "unknown option 'bogus'"),
    ],
)
def test_format_parse_errors(name, fragment):
    with pytest.raises(ValueError) as e:
        mxattn.format_info(name)
    msg = str(e.value)
    assert msg.startswith("format: ") and fragment in msg, msg


def expect(exc, fragment, fn, *args, **kwargs):
    with pytest.raises(exc) as e:
        fn(*args, **kwargs)
    assert fragment in str(e.value), f"{fragment!r} not in {str(e.value)!r}"


F32 = np.zeros((4, 32), np.float32)


def test_codec_errors():
    expect(ValueError, "element: element 'e9m9'", mxattn.encode, "e9m9", F32)
    expect(TypeError, "x: expected a float32 array, got float64", mxattn.encode, "e4m3", F32.astype(np.float64))
    expect(TypeError, "codes: expected a uint8 array, got int32", mxattn.decode, "e4m3", np.zeros(3, np.int32))
    expect(ValueError, "codes: value 16", mxattn.decode, "e2m1", np.array([1, 16], np.uint8))
    expect(ValueError, "element:", mxattn.decode, "bf16", np.zeros(3, np.uint8))


def test_quantize_errors():
    expect(TypeError, "x: expected a float32 array, got float64", mxattn.quantize, F32.astype(np.float64), "mxfp8")
    expect(TypeError, "x: expected a float32 array, got int8", mxattn.quantize, F32.astype(np.int8), "mxfp8")
    expect(ValueError, "x: expected at least one dimension", mxattn.quantize, np.float32(1.0).reshape(()), "mxfp8")
    expect(ValueError, "format: unknown format 'mxfp3'", mxattn.quantize, F32, "mxfp3")
    expect(ValueError, "axis: 2 is out of range", mxattn.quantize, F32, "mxfp8", axis=2)
    expect(ValueError, "axis: -3 is out of range", mxattn.quantize, F32, "mxfp8", axis=-3)
    expect(ValueError, "layout: expected 'rowmajor' or 'tiled'", mxattn.quantize, F32, "mxfp8", layout="colmajor")
    expect(ValueError, "tensor_scale: format 'mxfp8' has no tensor scale", mxattn.quantize, F32, "mxfp8",
           tensor_scale=2.0)
    expect(ValueError, "tensor_scale: must be finite and positive", mxattn.quantize, F32, "nvfp4", tensor_scale=0.0)
    expect(ValueError, "tensor_scale: must be finite and positive", mxattn.quantize, F32, "nvfp4",
           tensor_scale=float("inf"))


def test_layout_errors():
    expect(ValueError, "scales: expected 2 dimensions, got 1", mxattn.to_tiled, np.zeros(8, np.uint8))
    expect(TypeError, "scales: expected a uint8 array, got float32", mxattn.to_tiled, F32)
    expect(ValueError, "flat: 511 bytes", mxattn.from_tiled, np.zeros(511, np.uint8), 4, 2)
    expect(ValueError, "flat: expected 1 dimensions, got 2", mxattn.from_tiled, np.zeros((2, 256), np.uint8), 4, 2)
    expect(ValueError, "rows: must be >= 0", mxattn.from_tiled, np.zeros(512, np.uint8), -1, 2)


def qkv(b=1, sq=4, skv=6, hq=4, hkv=2, d=8, dtype=np.float64):
    return (np.zeros((b, sq, hq, d), dtype), np.zeros((b, skv, hkv, d), dtype), np.zeros((b, skv, hkv, d), dtype))


def test_attention_errors():
    q, k, v = qkv()
    expect(TypeError, "q: expected a float64 array, got float32", mxattn.attention_fp64, q.astype(np.float32), k, v)
    expect(TypeError, "v: expected a float64 array", mxattn.attention_fp64, q, k, v.astype(np.float16))
    expect(ValueError, "k: expected 4 dimensions, got 3", mxattn.attention_fp64, q, k[0], v)
    expect(ValueError, "v: shape [1, 5, 2, 8] must equal k's shape [1, 6, 2, 8]", mxattn.attention_fp64, q, k,
           v[:, :5])
    expect(ValueError, "k: batch 2 must equal q's batch 1", mxattn.attention_fp64, q, *qkv(b=2)[1:])
    expect(ValueError, "k: head_dim 4 must equal q's head_dim 8", mxattn.attention_fp64, q, *qkv(d=4)[1:])
    expect(ValueError, "heads_q (4) must be a positive multiple of heads_kv (3)", mxattn.attention_fp64, q,
           *qkv(hkv=3)[1:])
    expect(ValueError, "seq_q must be >= 1", mxattn.attention_fp64, *qkv(sq=0))


def test_mx_attention_errors():
    q, k, v = qkv(dtype=np.float32)
    expect(TypeError, "q: expected a float32 array, got float64", mxattn.mx_attention, *qkv())
    expect(ValueError, "q_format: unknown format 'mxfp5'", mxattn.mx_attention, q, k, v, q_format="mxfp5")
    expect(ValueError, "k_format:", mxattn.mx_attention, q, k, v, k_format="e3m2")
    expect(ValueError, "v_format:", mxattn.mx_attention, q, k, v, v_format="nvfp4/floor")
    expect(ValueError, "v_axis: expected 'seq' or 'head_dim', got 'd'", mxattn.mx_attention, q, k, v, v_axis="d")
    expect(ValueError, "heads_q (4) must be a positive multiple of heads_kv (3)", mxattn.mx_attention, q,
           *qkv(hkv=3, dtype=np.float32)[1:])


def test_mx_tensor_properties(rng):
    x = rng.standard_normal((3, 70, 5)).astype(np.float32)
    qt = mxattn.quantize(x, "MXFP6_E2M3", axis=1, layout="tiled")
    assert isinstance(qt, mxattn.MXTensor) and not qt.is_cuda and qt.device == "cpu"
    assert qt.shape == (3, 70, 5) and qt.stored_shape == (3, 5, 70) and qt.axis == 1 and qt.ndim == 3
    assert qt.format == "mxfp6_e2m3" and qt.layout == "tiled" and qt.tensor_scale == 1.0
    assert qt.scale_shape == (15, 3)
    assert qt.codes.shape == (3, 5, math.ceil(70 * 6 / 8)) and qt.codes.dtype == np.uint8
    assert qt.scales.shape == (128 * 4,) and qt.scales.dtype == np.uint8
    assert "mxfp6_e2m3" in repr(qt) and "(3, 70, 5)" in repr(qt)
    assert qt.dequantize().shape == x.shape and qt.dequantize().dtype == np.float32
    assert mxattn.dequantize(qt).dtype == np.float32 and qt.dequantize(np.float64).dtype == np.float64
    # The scales in the other layout: the same values, scales as the reference's conversion gives them.
    rm = qt.to(layout="rowmajor")
    assert rm.layout == "rowmajor" and rm.scales.shape == (15 * 3,) and rm.codes is not None
    np.testing.assert_array_equal(mxattn.to_tiled(rm.scales.reshape(15, 3)), qt.scales)
    np.testing.assert_array_equal(rm.dequantize(), qt.dequantize())
    assert qt.to(layout="tiled") is qt
    with pytest.raises(ValueError, match="layout: expected 'rowmajor' or 'tiled'"):
        qt.to(layout="colmajor")
    with pytest.raises(TypeError, match="t: expected an MXTensor"):
        mxattn.dequantize(x)
    n = mxattn.quantize(x, "nvfp4", axis=-1)
    assert n.tensor_scale == np.float32(2688) / np.float32(np.abs(x).max())


def test_codes_and_scales_are_views_of_the_tensor(rng):
    x = (rng.standard_normal((2, 64)) + 4).astype(np.float32)  # no zero blocks
    qt = mxattn.quantize(x, "mxfp8")
    codes, scales = qt.codes, qt.scales
    codes[0, :32] = 0  # block (0, 0) becomes zeros
    scales[1] += 1  # block (0, 1) doubles
    back = mxattn.dequantize(qt)
    fresh = mxattn.dequantize(mxattn.quantize(x, "mxfp8"))
    assert np.all(back[0, :32] == 0)
    assert np.array_equal(back[0, 32:], 2 * fresh[0, 32:])
    assert np.array_equal(back[1], fresh[1])
    del qt
    gc.collect()
    assert codes.sum() >= 0 and np.all(codes[0, :32] == 0)  # the views keep the tensor alive


def test_empty_tensor():
    qt = mxattn.quantize(np.zeros((0, 64), np.float32), "mxfp8")
    assert qt.codes.shape == (0, 64) and qt.scales.size == 0
    assert mxattn.dequantize(qt).shape == (0, 64)
