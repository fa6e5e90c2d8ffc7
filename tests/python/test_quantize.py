"""quantize/dequantize against the independent NumPy implementation of DESIGN.md §2 (mx_numpy.quantize),
bit for bit: packed codes, scale codes (row-major and tiled), the NVFP4 tensor scale, decoded values."""
import numpy as np
import pytest

import mx_numpy as ref
import mxattn
from checks import assert_same
from mx_numpy import Fmt

FORMATS = {
    "mxfp8": Fmt("e4m3", 32, "ue8m0", "rceil"),
    "mxfp8_e5m2": Fmt("e5m2", 32, "ue8m0", "rceil"),
    "mxfp6_e2m3": Fmt("e2m3", 32, "ue8m0", "rceil"),
    "mxfp6_e3m2": Fmt("e3m2", 32, "ue8m0", "rceil"),
    "mxfp4": Fmt("e2m1", 32, "ue8m0", "rceil"),
    "mxint8": Fmt("int8", 32, "ue8m0", "rceil"),
    "nvfp4": Fmt("e2m1", 16, "ue4m3", "nvfp4", True),
    "mxfp8/floor": Fmt("e4m3", 32, "ue8m0", "floor"),
    "mxfp6_e3m2/floor": Fmt("e3m2", 32, "ue8m0", "floor"),
    "mxfp4/floor": Fmt("e2m1", 32, "ue8m0", "floor"),
    "mxint8/floor": Fmt("int8", 32, "ue8m0", "floor"),
    "e3m3/k16/ue8m0": Fmt("e3m3", 16, "ue8m0", "rceil"),
    "int4/k8/ue8m0/floor": Fmt("int4", 8, "ue8m0", "floor"),
    "e5m1/k128/ue8m0": Fmt("e5m1", 128, "ue8m0", "rceil"),
    "e2m3/k16/ue4m3": Fmt("e2m3", 16, "ue4m3", "rceil"),
    "e3m2/k64/ue4m3/floor": Fmt("e3m2", 64, "ue4m3", "floor"),
    "e2m3/k16/ue4m3/ts": Fmt("e2m3", 16, "ue4m3", "nvfp4", True),
}

# (shape, block_axis): block axis last and not last, columns that are not a multiple of the block,
# more than 128 rows (two row tiles in the tiled layout).
CASES = [
    ((4, 64), -1),
    ((3, 70), -1),
    ((2, 3, 45), -1),
    ((40, 6), 0),
    ((4, 37, 3), 1),
    ((100,), 0),
    ((2, 5, 3, 33), 1),
    ((130, 20), -1),
]


def make_input(shape, axis, rng, specials):
    """Normal values with magnitudes spread over many binades, per element and per line, so blocks see
    both their maximum and small neighbours. With specials: NaN, +-Inf, all-zero lines, float32
    subnormals and values near the float32 maximum."""
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, shape))
    lines = np.moveaxis(x, axis, -1)  # a view: one line per row of blocks
    flat = lines.reshape(-1, lines.shape[-1])
    flat *= np.exp2(rng.integers(-40, 41, (flat.shape[0], 1)))
    if specials:
        n = flat.shape[0]
        flat[rng.integers(n), rng.integers(flat.shape[1])] = np.nan
        flat[rng.integers(n), rng.integers(flat.shape[1])] = np.inf
        flat[rng.integers(n), rng.integers(flat.shape[1])] = -np.inf
        flat[rng.integers(n)] = 0.0
        flat[rng.integers(n)] *= 1e-40  # float32 subnormals
        flat[rng.integers(n)] = rng.uniform(-3.4e38, 3.4e38, flat.shape[1])
    x = np.moveaxis(flat.reshape(lines.shape), -1, axis)
    return np.ascontiguousarray(x.astype(np.float32))


def check_against_reference(x, name, axis, layout="rowmajor", tensor_scale=None):
    f = FORMATS[name]
    qt = mxattn.quantize(x, name, axis=axis, layout=layout, tensor_scale=tensor_scale)
    r = ref.quantize(x, f, axis, tensor_scale=tensor_scale)
    ctx = f"{name} shape={x.shape} axis={axis} layout={layout}"
    assert qt.stored_shape == r.stored_shape and qt.shape == x.shape, ctx
    assert qt.axis == axis % x.ndim, ctx
    assert qt.layout == layout
    assert np.float32(qt.tensor_scale) == r.tensor_scale, f"{ctx}: S_enc {qt.tensor_scale} != {r.tensor_scale}"
    assert qt.codes.shape == r.stored_shape[:-1] + (qt.codes.shape[-1],), ctx
    assert_same(qt.codes.reshape(-1, qt.codes.shape[-1]), ref.pack(r.codes, f.elem.bits), "codes", ctx)
    want_scales = r.scales.ravel() if layout == "rowmajor" else ref.to_tiled(r.scales)
    assert_same(qt.scales, want_scales, "scales", ctx)
    want_values = np.moveaxis(r.values.reshape(r.stored_shape), -1, axis)
    assert_same(mxattn.dequantize(qt), want_values, "dequantize", ctx)
    return qt, r


def test_format_table_matches_format_info():
    for name, f in FORMATS.items():
        info = mxattn.format_info(name)
        got = (info["element"], info["block"], info["scale"], info["rule"], info["tensor_scale"])
        assert got == (f.element, f.block, f.scale, f.rule, f.tensor_scale), name


@pytest.mark.parametrize("specials", [False, True], ids=["finite", "specials"])
@pytest.mark.parametrize("shape,axis", CASES, ids=[f"{s}ax{a}" for s, a in CASES])
@pytest.mark.parametrize("name", FORMATS)
def test_quantize_matches_reference(name, shape, axis, specials, rng):
    x = make_input(shape, axis, rng, specials)
    check_against_reference(x, name, axis)


@pytest.mark.parametrize("name", FORMATS)
def test_power_of_two_block_maxima(name, rng):
    """Block maxima on the rules' edges: max_elem * 2^k (RCEIL's quotient is a power of two), 2^k
    (FLOOR's log2 is whole) and one float32 ulp either side of each."""
    f = FORMATS[name]
    k = rng.integers(-20, 21, 24)
    edges = np.concatenate([f.elem.max * np.exp2(k[:8]), np.exp2(k[8:16]), f.elem.max * np.exp2(k[16:])])
    edges = edges.astype(np.float32)
    edges = np.concatenate([edges, np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(0))])
    x = rng.uniform(-1, 1, (edges.size, f.block)).astype(np.float32) * edges[:, None]
    x[np.arange(edges.size), rng.integers(0, f.block, edges.size)] = edges * rng.choice([-1, 1], edges.size)
    check_against_reference(x, name, -1)


def test_nvfp4_block_holding_the_tensor_amax_gets_scale_448(rng):
    x = rng.standard_normal((8, 64)).astype(np.float32)
    qt, _ = check_against_reference(x, "nvfp4", -1)
    r, c = np.unravel_index(np.argmax(np.abs(x)), x.shape)
    assert qt.scales.reshape(8, 4)[r, c // 16] == 0x7E  # UE4M3 448 = amax * S_enc / 6


@pytest.mark.parametrize("name", ["mxfp8", "mxfp4", "mxfp6_e2m3", "nvfp4", "e3m2/k64/ue4m3/floor"])
@pytest.mark.parametrize("shape,axis", [((130, 20), -1), ((3, 300), -1), ((40, 6), 0), ((2, 70, 9), 1)])
def test_tiled_layout_matches_reference(name, shape, axis, rng):
    x = make_input(shape, axis, rng, specials=True)
    tiled, _ = check_against_reference(x, name, axis, layout="tiled")
    flat = mxattn.quantize(x, name, axis=axis)
    assert_same(tiled.codes, flat.codes, "codes do not depend on the scale layout")


@pytest.mark.parametrize("name", ["mxfp8", "mxfp4", "mxint8", "nvfp4"])
def test_strided_input(name, rng):
    base = make_input((6, 140), -1, rng, specials=False)
    for view, axis in [(base[:, ::2], -1), (base.T, 0), (base[::-1, 3:50], 1), (base.T[::3], -1)]:
        qt = mxattn.quantize(view, name, axis=axis)
        want = mxattn.quantize(np.ascontiguousarray(view), name, axis=axis)
        assert_same(qt.codes, want.codes, "codes of a strided view", f"strides={view.strides}")
        assert_same(qt.scales, want.scales, "scales of a strided view", f"strides={view.strides}")
        check_against_reference(np.ascontiguousarray(view), name, axis)


@pytest.mark.parametrize("name", ["nvfp4", "e2m3/k16/ue4m3/ts"])
def test_tensor_scale_override(name, rng):
    x = make_input((5, 48), -1, rng, specials=False)
    for s_enc in [1.0, 0.375, 1234.5, float(np.float32(2688) / np.float32(np.abs(x).max()))]:
        qt, _ = check_against_reference(x, name, -1, tensor_scale=s_enc)
        assert qt.tensor_scale == np.float32(s_enc)


NAN_SCALE = {"ue8m0": 0xFF, "ue4m3": 0x7F}


@pytest.mark.parametrize("name", ["mxfp8", "mxfp8_e5m2", "mxfp4", "mxint8", "nvfp4", "e2m3/k16/ue4m3"])
def test_nonfinite_block_has_nan_scale_and_decodes_nan(name, rng):
    f = FORMATS[name]
    k = f.block
    x = rng.standard_normal((4, 3 * k)).astype(np.float32)
    x[0, 1] = np.nan  # row 0, block 0
    x[1, k + 5] = np.inf  # row 1, block 1
    x[2, 3 * k - 1] = -np.inf  # row 2, block 2 (last element)
    qt, _ = check_against_reference(x, name, -1)
    scales = qt.scales.reshape(4, 3)
    bad = np.zeros((4, 3), bool)
    bad[0, 0] = bad[1, 1] = bad[2, 2] = True
    assert np.all(scales[bad] == NAN_SCALE[f.scale]), scales
    assert np.all(scales[~bad] != NAN_SCALE[f.scale]), scales
    back = mxattn.dequantize(qt).reshape(4, 3, k)
    assert np.all(np.isnan(back[bad])), "a block holding NaN/Inf must decode to NaN entirely"
    assert np.all(np.isfinite(back[~bad]))


@pytest.mark.parametrize("name", ["mxfp8", "mxfp4/floor", "mxint8", "nvfp4", "e2m3/k16/ue4m3"])
def test_all_zero_block(name, rng):
    f = FORMATS[name]
    x = rng.standard_normal((3, 2 * f.block)).astype(np.float32)
    x[1, : f.block] = 0.0
    x[2, f.block :] = -0.0
    qt, _ = check_against_reference(x, name, -1)
    scales = qt.scales.reshape(3, 2)
    assert scales[1, 0] == 0 and scales[2, 1] == 0, scales  # E8M0 0x00 (2^-127) / UE4M3 zero
    back = mxattn.dequantize(qt).reshape(3, 2, f.block)
    assert np.all(back[1, 0] == 0) and np.all(back[2, 1] == 0)


def test_all_zero_tensor_nvfp4():
    x = np.zeros((2, 32), np.float32)
    qt, _ = check_against_reference(x, "nvfp4", -1)
    assert qt.tensor_scale == 1.0
    assert np.all(mxattn.dequantize(qt) == 0)


@pytest.mark.parametrize("name,bits", [("mxfp4", 4), ("mxfp6_e2m3", 6), ("mxfp6_e3m2", 6), ("mxfp8", 8)])
def test_packing_order(name, bits, rng):
    """FP4: even element in the low nibble. FP6: four codes in three bytes, little-endian bit order."""
    x = rng.standard_normal((2, 40)).astype(np.float32)  # 40 codes: the last FP6 group is whole, FP4 even
    qt = mxattn.quantize(x, name)
    c = ref.quantize(x, FORMATS[name]).codes.astype(np.uint32)
    if bits == 4:
        want = c[:, 0::2] | c[:, 1::2] << 4
    elif bits == 6:
        g = c.reshape(2, -1, 4)
        word = g[..., 0] | g[..., 1] << 6 | g[..., 2] << 12 | g[..., 3] << 18
        want = np.stack([word & 0xFF, word >> 8 & 0xFF, word >> 16 & 0xFF], axis=-1).reshape(2, -1)
    else:
        want = c
    assert_same(qt.codes, want.astype(np.uint8), f"{name} packing")


def test_rceil_never_clips_and_floor_may(rng):
    """RCEIL: no element is clamped (the block max scaled lands at or below max_elem). FLOOR may clamp."""
    x = rng.standard_normal((64, 32)).astype(np.float32) * 7
    for name, clips in [("mxfp4", False), ("mxfp4/floor", True)]:
        r = ref.quantize(x, FORMATS[name])
        el = FORMATS[name].elem
        scaled_max = np.abs(x).max(axis=1) * np.exp2(127 - r.scales[:, 0].astype(np.float64))
        assert np.any(scaled_max > el.max) == clips, name


def test_nvfp4_tiny_tensor_stays_finite():
    """A tensor whose amax is a float32 subnormal: S_enc clamps to FLT_MAX and S_enc / s would overflow.

    The element multiplier is capped at FLT_MAX, so zeros stay +0 and nothing becomes NaN or Inf;
    such a tensor is below NVFP4's range (amax < ~1e-35): its largest values keep their sign, the
    smaller ones flush to zero."""
    x = np.array([1e-39, 0.5e-39, 0.25e-39, 0.0, -1e-39, -0.5e-39, 0.0, 0.0] * 2, np.float32)
    q = mxattn.quantize(x, "nvfp4")
    back = mxattn.dequantize(q)
    assert np.all(np.isfinite(back)), back
    assert not np.any(np.signbit(back[x == 0])), "a zero decoded as -0 (the E2M1 NaN code)"
    assert np.all(back * x >= 0), "no sign flips"
    assert back[0] > 0 and back[4] < 0, back
