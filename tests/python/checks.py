"""Loud comparisons: on failure, say how many elements differ and show the first few with their indices."""
import numpy as np


def _bits(a):
    """float32 bit patterns with every NaN made the same NaN, so -0 != +0 but NaN == NaN."""
    a = np.asarray(a, dtype=np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), a).view(np.uint32)


def mismatch_report(got, want, bad, limit=8):
    idx = np.argwhere(bad)[:limit]
    shown = ", ".join(f"{tuple(int(i) for i in ix)}: got {got[tuple(ix)]!r} want {want[tuple(ix)]!r}" for ix in idx)
    return f"{int(bad.sum())} of {bad.size} differ; first: {shown}"


def assert_same(got, want, what="", context=None):
    """Bit-exact equality of codes (integers) or float32 values (NaN == NaN, -0 != +0)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != expected {want.shape}"
    bad = _bits(got) != _bits(want) if want.dtype.kind == "f" else got != want
    if bad.any():
        ctx = f" [{context}]" if context is not None else ""
        raise AssertionError(f"{what}{ctx}: {mismatch_report(got, want, bad)}")


def assert_close(got, want, rtol, atol, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != expected {want.shape}"
    both_inf = np.isinf(got) & np.isinf(want) & (np.sign(got) == np.sign(want))
    with np.errstate(invalid="ignore"):
        bad = ~(both_inf | (np.abs(got - want) <= atol + rtol * np.abs(want)))
    if bad.any():
        raise AssertionError(f"{what}: {mismatch_report(got, want, bad)}")
