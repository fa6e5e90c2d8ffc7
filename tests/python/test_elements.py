"""Element codecs: every code, random values and rounding boundaries, against ml_dtypes (the standard
formats) and against the independent tables of mx_numpy (INTn and custom minifloats)."""
import numpy as np
import pytest

import mx_numpy as ref
import mxattn
from checks import assert_same

STANDARD = list(ref.ML_DTYPES)  # e2m1, e2m3, e3m2, e4m3, e5m2
CUSTOM_FLOATS = ["e3m3", "e2m2", "e1m2", "e4m2", "e5m1", "e3m4", "e2m5", "e1m6", "e6m1", "e4m1", "e3m0", "e7m0"]
INTS = ["int8", "int4", "int2", "int5"]
F32_MAX = np.finfo(np.float32).max


def all_codes(el):
    return np.arange(1 << el.bits, dtype=np.uint8)


def ml_decode(name, codes):
    return codes.view(ref.ML_DTYPES[name]).astype(np.float32)


def boundary_values(el):
    """Representable values, every midpoint between neighbours (ties), midpoints +-1 float32 ulp, the
    region around the maximum (saturation), the subnormal range and below it, +-0; both signs."""
    up, down = np.float32(np.inf), np.float32(-np.inf)
    mags = el.magnitudes()[: el.max_code + 1]
    mids = ((mags[:-1] + mags[1:]) / 2).astype(np.float32)  # exact: a few significant bits
    vals = mags.astype(np.float32)
    top_ulp = mags[-1] - mags[-2]
    above_max = np.float32(mags[-1] + top_ulp / 2)  # where rounding would leave the format
    min_sub = np.float32(mags[1])
    pts = [
        vals, np.nextafter(vals, up), np.nextafter(vals, down),
        mids, np.nextafter(mids, up), np.nextafter(mids, down),
        np.array([above_max, np.nextafter(above_max, up), np.nextafter(above_max, down),
                  mags[-1] * 1.5, mags[-1] * 2, mags[-1] * 1e6, 1e30, F32_MAX], np.float32),
        np.linspace(0, min_sub, 33, dtype=np.float32),
        np.array([min_sub / 2, np.nextafter(min_sub / 2, up), np.nextafter(min_sub / 2, down),
                  min_sub / 4, 1e-30, 1e-40, 1e-45, 0.0], np.float32),
    ]
    x = np.concatenate([p.astype(np.float32) for p in pts])
    x = x[np.isfinite(x)]
    return np.concatenate([x, -x])


def random_values(el, rng, n=300_000):
    """Normal values over every binade of the format and a few beyond, uniform over the range, and
    random float32 bit patterns (NaN removed: tested on its own)."""
    lo = int(np.floor(np.log2(el.magnitudes()[1]))) - 3
    hi = int(np.ceil(np.log2(el.max))) + 3
    scaled = rng.standard_normal(n).astype(np.float32) * np.exp2(rng.integers(lo, hi + 1, n)).astype(np.float32)
    uniform = rng.uniform(-2 * el.max, 2 * el.max, n).astype(np.float32)
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([scaled, uniform, bits])
    return x[~np.isnan(x)]


# ---- 1. every code of the standard formats ----


@pytest.mark.parametrize("name", STANDARD)
def test_decode_every_code_matches_ml_dtypes(name):
    el = ref.elem(name)
    codes = all_codes(el)
    want = ml_decode(name, codes)
    assert_same(mxattn.decode(name, codes), want, f"decode {name}")
    assert_same(el.decode(codes), want, f"mx_numpy table {name}")  # the reference's own tables


@pytest.mark.parametrize("name", STANDARD + CUSTOM_FLOATS + INTS)
def test_every_code_reencodes_to_itself(name):
    """NaN codes re-encode to the canonical NaN code; E5M2's +-Inf codes saturate to +-max; -0 stays -0."""
    el = ref.elem(name)
    codes = all_codes(el)
    values = mxattn.decode(name, codes)
    want = codes.copy()
    want[np.isnan(values)] = el.nan_code
    want[np.isinf(values)] = (codes[np.isinf(values)] & el.sign_bit) | el.max_code
    if el.is_int:  # -2^(n-1) is a valid code but is never produced: it saturates to -(2^(n-1) - 1)
        want[codes == el.sign_bit] = el.sign_bit | 1
    assert_same(mxattn.encode(name, values), want, f"encode(decode(code)) {name}")


# ---- 2. encoding against ml_dtypes ----


@pytest.mark.parametrize("name", STANDARD)
def test_encode_random_matches_ml_dtypes(name, rng):
    el = ref.elem(name)
    x = random_values(el, rng)
    # ml_dtypes overflows to NaN/Inf where mxattn saturates: ref.encode_ml compares against
    # ml_dtypes(clip(x, -max, max)).
    assert_same(mxattn.encode(name, x), ref.encode_ml(el, x), f"encode {name}", context="random")


@pytest.mark.parametrize("name", STANDARD)
def test_encode_boundaries_match_ml_dtypes(name):
    el = ref.elem(name)
    x = boundary_values(el)
    got = mxattn.encode(name, x)
    assert_same(got, ref.encode_ml(el, x), f"encode {name}", context="boundaries")
    # Ties go to the even code, independently of ml_dtypes.
    mags = el.magnitudes()[: el.max_code + 1]
    mids = ((mags[:-1] + mags[1:]) / 2).astype(np.float32)
    assert np.all(mxattn.encode(name, mids) % 2 == 0), f"{name}: a midpoint rounded to an odd code"


@pytest.mark.parametrize("name", STANDARD + CUSTOM_FLOATS)
def test_nan_and_inf(name):
    el = ref.elem(name)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0x7FA00000], np.uint32)
    got = mxattn.encode(name, nans.view(np.float32))
    want = {"e4m3": 0x7F, "e5m2": 0x7E}.get(name, el.sign_bit)  # else the negative-zero code
    assert np.all(got == want), f"{name}: NaN encoded as {got}, want {want:#x}"
    if name in ref.ML_DTYPES:  # the convention ml_dtypes follows for a positive NaN
        ml = np.array([np.nan], np.float32).astype(ref.ML_DTYPES[name]).view(np.uint8) & ((1 << el.bits) - 1)
        assert ml[0] == want
    inf = mxattn.encode(name, np.array([np.inf, -np.inf], np.float32))
    assert inf.tolist() == [el.max_code, el.sign_bit | el.max_code], f"{name}: +-Inf encoded as {inf}"
    assert mxattn.decode(name, inf).tolist() == [el.max, -el.max]


@pytest.mark.parametrize("name", STANDARD)
def test_reference_table_encoder_matches_ml_dtypes(name, rng):
    """The table encoder used for custom formats agrees with ml_dtypes where both apply."""
    el = ref.elem(name)
    x = np.concatenate([boundary_values(el), random_values(el, rng, 20_000)])
    assert_same(ref.encode_table(el, x), ref.encode_ml(el, x), f"mx_numpy.encode_table {name}")


# ---- 3. INTn and custom minifloats ----


def test_int8_decodes_to_int8_times_2_pow_minus_6():
    codes = np.arange(256, dtype=np.uint8)
    want = codes.view(np.int8).astype(np.float32) * np.float32(2.0**-6)
    assert_same(mxattn.decode("int8", codes), want, "decode int8")


@pytest.mark.parametrize("name", INTS)
def test_int_encode(name, rng):
    el = ref.elem(name)
    q = 2.0 ** -(el.bits - 2)
    ks = np.arange(-(1 << (el.bits - 1)) - 2, 1 << (el.bits - 1) + 2)
    x = np.concatenate([
        boundary_values(el),
        ((ks + 0.5) * q).astype(np.float32),  # every tie
        random_values(el, rng, 50_000),
        np.array([np.nan, -np.nan, np.inf, -np.inf], np.float32),
    ])
    got = mxattn.encode(name, x)
    want = ref.encode_int(el, x)  # numpy rint (ties to even) and clip to +-(2^(n-1) - 1)
    assert_same(got, want, f"encode {name}")
    assert not np.any(got == el.sign_bit), f"{name}: produced the unused code -2^(n-1)"


@pytest.mark.parametrize("name", CUSTOM_FLOATS + INTS)
def test_custom_decode_every_code(name):
    el = ref.elem(name)
    codes = all_codes(el)
    assert_same(mxattn.decode(name, codes), el.decode(codes), f"decode {name}")


@pytest.mark.parametrize("name", CUSTOM_FLOATS)
def test_custom_minifloat_encode(name, rng):
    el = ref.elem(name)
    x = np.concatenate([boundary_values(el), random_values(el, rng, 50_000)])
    assert_same(mxattn.encode(name, x), ref.encode_table(el, x), f"encode {name}")


def test_encode_decode_keep_shape_and_accept_strides(rng):
    x = rng.standard_normal((6, 10)).astype(np.float32)
    view = x[::2, ::-3]  # non-contiguous, negative stride
    codes = mxattn.encode("e4m3", view)
    assert codes.shape == view.shape and codes.dtype == np.uint8
    assert_same(codes, ref.encode_ml(ref.elem("e4m3"), np.ascontiguousarray(view)), "strided encode")
    back = mxattn.decode("e4m3", codes.T)
    assert_same(back, ml_decode("e4m3", np.ascontiguousarray(codes.T)), "strided decode")
    assert mxattn.encode("e2m1", np.zeros((0, 3), np.float32)).shape == (0, 3)
