"""attention_fp64 against plain NumPy attention, and mx_attention as quantize -> dequantize -> FP64."""
import numpy as np
import pytest

import mx_numpy as ref
import mxattn
from checks import assert_close

# FP64 against FP64 with another summation order: a few ulps of the largest terms.
RTOL, ATOL = 1e-12, 1e-12

# (B, Sq, Skv, Hq, Hkv, D, causal)
SHAPES = [
    (1, 1, 1, 1, 1, 1, False),
    (2, 5, 7, 4, 2, 16, False),  # GQA 2:1
    (1, 9, 9, 6, 3, 8, True),
    (2, 3, 11, 4, 1, 32, True),  # Sq < Skv: the last query sees every key
    (1, 9, 4, 2, 2, 8, True),  # Sq > Skv: the first 5 queries see no key
    (1, 17, 33, 8, 2, 64, True),
]


def random_qkv(rng, b, sq, skv, hq, hkv, d, dtype=np.float64):
    q = rng.standard_normal((b, sq, hq, d))
    k = rng.standard_normal((b, skv, hkv, d))
    v = rng.standard_normal((b, skv, hkv, d))
    return q.astype(dtype), k.astype(dtype), v.astype(dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=[f"B{s[0]}Sq{s[1]}Skv{s[2]}H{s[3]}/{s[4]}D{s[5]}{'c' if s[6] else ''}" for s in SHAPES])
def test_attention_fp64_matches_numpy(shape, rng):
    b, sq, skv, hq, hkv, d, causal = shape
    q, k, v = random_qkv(rng, b, sq, skv, hq, hkv, d)
    q *= 3.0  # peaky softmax
    for scale in [0.0, 0.37]:
        out, lse = mxattn.attention_fp64(q, k, v, causal=causal, softmax_scale=scale)
        want_out, want_lse = ref.attention(q, k, v, causal, scale)
        assert out.shape == (b, sq, hq, d) and lse.shape == (b, hq, sq)
        assert out.dtype == np.float64 and lse.dtype == np.float64
        assert_close(out, want_out, RTOL, ATOL, f"out scale={scale}")
        assert_close(lse, want_lse, RTOL, ATOL, f"lse scale={scale}")


def test_fully_masked_rows_give_zero_and_minus_inf(rng):
    q, k, v = random_qkv(rng, 2, 9, 4, 2, 1, 8)
    out, lse = mxattn.attention_fp64(q, k, v, causal=True)
    dead = slice(0, 9 - 4)  # query i sees keys j <= i + Skv - Sq = i - 5
    assert np.all(out[:, dead] == 0.0)
    assert np.all(np.isneginf(lse[:, :, dead]))
    assert np.all(np.isfinite(lse[:, :, 5:]))
    # The first live row sees exactly key 0: its output is v[:, 0] for every head of the group.
    assert_close(out[:, 5], np.repeat(v[:, 0], 2, axis=1), RTOL, ATOL, "row that sees one key")


def test_causal_with_equal_lengths_is_lower_triangular(rng):
    """Changing key/value j must leave the outputs of queries i < j unchanged."""
    q, k, v = random_qkv(rng, 1, 8, 8, 2, 2, 4)
    out, _ = mxattn.attention_fp64(q, k, v, causal=True)
    k2, v2 = k.copy(), v.copy()
    k2[:, 5:] += 1.0
    v2[:, 5:] -= 2.0
    out2, _ = mxattn.attention_fp64(q, k2, v2, causal=True)
    assert np.array_equal(out[:, :5], out2[:, :5])
    assert not np.allclose(out[:, 5:], out2[:, 5:])


def test_strided_inputs(rng):
    q, k, v = random_qkv(rng, 2, 6, 10, 4, 2, 8)
    qs = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)  # [B,H,S,D] storage
    ks = np.concatenate([k, k], axis=3)[..., ::2]  # stride 2 along D
    out, lse = mxattn.attention_fp64(qs, ks, v, causal=True)
    want_out, want_lse = mxattn.attention_fp64(q, np.ascontiguousarray(ks), v, causal=True)
    assert np.array_equal(out, want_out) and np.array_equal(lse, want_lse)


def round_trip(x, fmt, axis):
    return mxattn.dequantize(mxattn.quantize(x, fmt, axis=axis)).astype(np.float64)


@pytest.mark.parametrize(
    "formats,v_axis",
    [(("mxfp8", "mxfp8", "mxfp8"), "seq"), (("mxfp4", "nvfp4", "mxfp6_e2m3"), "head_dim"),
     (("nvfp4", "mxfp8_e5m2", "mxfp4/floor"), "seq"), (("mxint8", "e3m2/k16/ue8m0", "nvfp4"), "head_dim")],
)
def test_mx_attention_is_fp64_attention_of_dequantized_inputs(formats, v_axis, rng):
    q, k, v = random_qkv(rng, 2, 7, 40, 4, 2, 48, dtype=np.float32)
    fq, fk, fv = formats
    out, lse = mxattn.mx_attention(q, k, v, fq, fk, fv, v_axis=v_axis, causal=True, softmax_scale=0.2)
    qd, kd = round_trip(q, fq, 3), round_trip(k, fk, 3)
    vd = round_trip(v, fv, 1 if v_axis == "seq" else 3)  # V blocks run along S_kv or along D
    want_out, want_lse = mxattn.attention_fp64(qd, kd, vd, causal=True, softmax_scale=0.2)
    assert_close(out, want_out, 0.0, 0.0, "out")  # the same computation: equal to the bit
    assert_close(lse, want_lse, 0.0, 0.0, "lse")


def test_mx_attention_v_axis_changes_v_blocks(rng):
    q, k, v = random_qkv(rng, 1, 4, 64, 2, 2, 64, dtype=np.float32)
    v[:, :, :, 0] *= 1000.0  # one loud channel: blocks along D squash the rest, blocks along S do not
    seq, _ = mxattn.mx_attention(q, k, v, "mxfp8", "mxfp8", "mxfp4", v_axis="seq")
    dim, _ = mxattn.mx_attention(q, k, v, "mxfp8", "mxfp8", "mxfp4", v_axis="head_dim")
    exact, _ = mxattn.attention_fp64(round_trip(q, "mxfp8", 3), round_trip(k, "mxfp8", 3), v.astype(np.float64))
    err_seq = np.abs(seq - exact)[..., 1:].max()
    err_dim = np.abs(dim - exact)[..., 1:].max()
    assert err_seq < err_dim, (err_seq, err_dim)
