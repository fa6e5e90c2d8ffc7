"""Independent NumPy definitions of the mxattn numerics (DESIGN.md §2), for the tests to compare against.

Nothing here calls mxattn. Standard element formats go through ml_dtypes; custom minifloats and INTn
through a table of every code's value built from the bit fields; scales follow the rules as DESIGN.md
states them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

# The element formats ml_dtypes implements, by their mxattn names.
ML_DTYPES = {
    "e2m1": ml_dtypes.float4_e2m1fn,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
}


@dataclass(frozen=True)
class Elem:
    """An element format: minifloat EeMm or INTn, with the code layout of DESIGN.md §2."""

    name: str
    is_int: bool
    bits: int
    e: int = 0
    m: int = 0

    @property
    def specials(self) -> str:
        # Only the OCP FP8 formats spend codes on NaN/Inf; every other minifloat is all-finite.
        return {"e4m3": "nan_only", "e5m2": "ieee"}.get(self.name, "none")

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def mag_mask(self) -> int:
        return self.sign_bit - 1

    @property
    def nan_code(self) -> int:
        if self.is_int:
            return 0
        return {"nan_only": 0x7F, "ieee": 0x7E}.get(self.specials, self.sign_bit)

    def magnitudes(self) -> np.ndarray:
        """float64 value of every magnitude code 0 .. mag_mask (NaN/Inf where the format has them)."""
        codes = np.arange(self.mag_mask + 1)
        if self.is_int:
            return codes * 2.0 ** -(self.bits - 2)
        bias = 2 ** (self.e - 1) - 1
        ef, f = codes >> self.m, codes & ((1 << self.m) - 1)
        vals = np.where(ef == 0, f * 2.0 ** (1 - bias - self.m), (f + 2**self.m) * 2.0 ** (ef - bias - self.m))
        if self.specials == "nan_only":
            vals[-1] = np.nan
        elif self.specials == "ieee":
            top = ef == 2**self.e - 1
            vals[top] = np.where(f[top] == 0, np.inf, np.nan)
        return vals

    @property
    def max_code(self) -> int:
        mags = self.magnitudes()
        return int(np.flatnonzero(np.isfinite(mags))[-1])

    @property
    def max(self) -> float:
        return float(self.magnitudes()[self.max_code])

    @property
    def emax(self) -> int:
        return 0 if self.is_int else math.floor(math.log2(self.max))

    def decode(self, codes: np.ndarray) -> np.ndarray:
        codes = np.asarray(codes, dtype=np.int64)
        if self.is_int:
            signed = np.where(codes & self.sign_bit, codes - (1 << self.bits), codes)
            return (signed * 2.0 ** -(self.bits - 2)).astype(np.float32)
        mag = self.magnitudes()[codes & self.mag_mask]
        return np.where(codes & self.sign_bit, -mag, mag).astype(np.float32)


def elem(name: str) -> Elem:
    name = name.lower()
    if name.startswith("int"):
        return Elem(name, True, int(name[3:]))
    e, m = (int(p) for p in name[1:].split("m"))
    return Elem(name, False, 1 + e + m, e, m)


def encode_table(el: Elem, x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even, saturating encode by searching the table of code values (any minifloat)."""
    x = np.asarray(x, dtype=np.float32)
    a = np.abs(x.astype(np.float64))
    mags = el.magnitudes()[: el.max_code + 1]  # finite magnitudes, increasing with the code
    i = np.clip(np.searchsorted(mags, a, side="right") - 1, 0, el.max_code)
    j = np.minimum(i + 1, el.max_code)
    mid = (mags[i] + mags[j]) / 2  # exact in float64
    # A tie goes to the even significand, counted in quanta of the lower candidate's spacing: for m >= 1
    # that is the even code; for m = 0 it is the larger power of two (as ml_dtypes' float8_e8m0fnu
    # rounds), except between 0 and the smallest value, where 0 wins.
    with np.errstate(divide="ignore", invalid="ignore"):
        quanta = mags[i] / (mags[j] - mags[i])
        up = (a > mid) | ((a == mid) & (quanta % 2 == 1))
    code = np.where((j > i) & up, j, i)
    code = np.where(np.signbit(x), code | el.sign_bit, code)
    return np.where(np.isnan(x), el.nan_code, code).astype(np.uint8)


def encode_int(el: Elem, x: np.ndarray) -> np.ndarray:
    """INTn: round(x * 2^(n-2)) to nearest even, clipped to +-(2^(n-1) - 1); NaN -> 0."""
    x = np.asarray(x, dtype=np.float32)
    lim = 2 ** (el.bits - 1) - 1
    scaled = np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=2.0**100, neginf=-(2.0**100)) * 2.0 ** (el.bits - 2)
    r = np.clip(np.rint(scaled), -lim, lim)
    return (r.astype(np.int64) & ((1 << el.bits) - 1)).astype(np.uint8)


def encode_ml(el: Elem, x: np.ndarray) -> np.ndarray:
    """The standard formats through ml_dtypes. ml_dtypes overflows to NaN (e4m3) or Inf (e5m2) where
    mxattn saturates, so values are clipped to +-max first; NaN gets the format's NaN code."""
    x = np.asarray(x, dtype=np.float32)
    clipped = np.clip(x, -el.max, el.max)
    codes = clipped.astype(ML_DTYPES[el.name]).view(np.uint8) & ((1 << el.bits) - 1)
    return np.where(np.isnan(x), el.nan_code, codes).astype(np.uint8)


def encode(name: str, x: np.ndarray) -> np.ndarray:
    el = elem(name)
    if el.is_int:
        return encode_int(el, x)
    if el.name in ML_DTYPES:
        return encode_ml(el, x)
    return encode_table(el, x)


# ---- scales ----

E4M3 = elem("e4m3")
UE4M3_VALUES = E4M3.magnitudes()[:0x7F]  # codes 0x00 .. 0x7E; 0x7F is NaN


def e8m0_rceil(t: np.ndarray) -> np.ndarray:
    """E8M0 code of 2^ceil(log2 t), t >= 0 float32, clamped to [2^-127, 2^127]; t = 0 gives 0x00."""
    mant, ex = np.frexp(t)  # t = mant * 2^ex, mant in [0.5, 1)
    ceil_log2 = np.where(mant == 0.5, ex - 1, ex)
    return np.where(t == 0, 0, np.clip(ceil_log2 + 127, 0, 254)).astype(np.int64)


def e8m0_floor(amax: np.ndarray, emax: int) -> np.ndarray:
    """OCP MX v1.0: 2^(floor(log2 amax) - emax_elem); amax = 0 gives 0x00."""
    _, ex = np.frexp(amax)
    return np.where(amax == 0, 0, np.clip(ex - 1 - emax + 127, 0, 254)).astype(np.int64)


@dataclass(frozen=True)
class Fmt:
    element: str
    block: int
    scale: str  # "ue8m0" | "ue4m3"
    rule: str  # "rceil" | "floor" | "nvfp4"
    tensor_scale: bool = False

    @property
    def elem(self) -> Elem:
        return elem(self.element)


def nvfp4_tensor_scale(x: np.ndarray, max_elem: float) -> np.float32:
    """S_enc = 448 * max_elem / amax_tensor in float32 (NaN ignored), clamped to the float32 max; 1 if 0."""
    a = np.abs(x[~np.isnan(x)]).astype(np.float32)
    amax = np.float32(a.max()) if a.size else np.float32(0)
    with np.errstate(divide="ignore", over="ignore"):
        s = np.float32(np.float32(448.0) * np.float32(max_elem)) / amax
    s = min(s, np.finfo(np.float32).max)
    return np.float32(1.0) if (amax == 0 or s == 0) else np.float32(s)


@dataclass
class RefQuantized:
    codes: np.ndarray  # [rows, cols] element codes, unpacked
    scales: np.ndarray  # [rows, blocks] scale codes
    values: np.ndarray  # dequantized, [rows, cols] float32
    tensor_scale: np.float32
    stored_shape: tuple


def quantize(x: np.ndarray, f: Fmt, axis: int = -1, tensor_scale=None) -> RefQuantized:
    """Blocks of f.block along `axis`; stored order moves that axis last (np.moveaxis)."""
    x = np.asarray(x, dtype=np.float32)
    stored = np.moveaxis(x, axis, -1)
    cols = stored.shape[-1]
    rows = int(np.prod(stored.shape[:-1]))
    nb = -(-cols // f.block)
    xp = np.zeros((rows, nb * f.block), np.float32)
    xp[:, :cols] = stored.reshape(rows, cols)
    blocks = xp.reshape(rows, nb, f.block)
    el = f.elem

    nonfinite = ~np.isfinite(blocks).all(axis=2)
    with np.errstate(invalid="ignore"):
        amax = np.where(nonfinite, 0, np.abs(blocks).max(axis=2)).astype(np.float32)
    s_enc = np.float32(1.0)
    if f.tensor_scale:
        s_enc = np.float32(tensor_scale) if tensor_scale is not None else nvfp4_tensor_scale(x, el.max)

    inv_max = np.float32(1.0) / np.float32(el.max)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if f.scale == "ue8m0":
            sc = e8m0_rceil(amax * inv_max) if f.rule == "rceil" else e8m0_floor(amax, el.emax)
            scale_val = np.ldexp(np.float32(1), (sc - 127).astype(np.int32)).astype(np.float32)
            mult = np.ldexp(np.float32(1), (127 - sc).astype(np.int32)).astype(np.float32)
            nan_scale = 0xFF
        else:
            if f.rule == "nvfp4":
                t = (amax * s_enc) / np.float32(el.max)  # float32, left to right
                sc = np.clip(t, 0, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8).astype(np.int64)
            elif f.rule == "rceil":  # smallest UE4M3 >= amax / max_elem, saturating
                sc = np.minimum(np.searchsorted(UE4M3_VALUES, amax * inv_max, side="left"), 0x7E)
            else:  # largest UE4M3 <= amax / 2^emax
                t = amax * np.float32(2.0 ** -el.emax)
                sc = np.searchsorted(UE4M3_VALUES, t, side="right") - 1
                sc = np.where(amax > 0, np.maximum(sc, 1), sc)  # a non-zero block never gets a zero scale
            scale_val = UE4M3_VALUES[sc].astype(np.float32)
            with np.errstate(over="ignore", divide="ignore"):
                mult = np.where(scale_val > 0, s_enc / scale_val, np.float32(0)).astype(np.float32)
            mult = np.minimum(mult, np.finfo(np.float32).max)  # capped so that 0 * mult stays 0
            nan_scale = 0x7F
        sc = np.where(nonfinite, nan_scale, sc).astype(np.uint8)
        scale_val = np.where(nonfinite, np.float32(np.nan), scale_val).astype(np.float32)

        scaled = (blocks * mult[:, :, None]).astype(np.float32)
        codes = encode(f.element, scaled)
        # A NaN/Inf block multiplies by a NaN scale: every element takes the element's NaN code.
        codes = np.where(nonfinite[:, :, None], np.uint8(el.nan_code), codes)
        values = el.decode(codes) * scale_val[:, :, None]
        if f.tensor_scale:
            values = values / s_enc
    return RefQuantized(
        codes=codes.reshape(rows, -1)[:, :cols],
        scales=sc,
        values=values.astype(np.float32).reshape(rows, -1)[:, :cols],
        tensor_scale=s_enc,
        stored_shape=stored.shape,
    )


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """[rows, cols] codes -> [rows, ceil(cols*bits/8)] bytes: a little-endian bit stream per row."""
    rows, cols = codes.shape
    stream = np.unpackbits(codes.astype(np.uint8)[:, :, None], axis=2, bitorder="little")[:, :, :bits]
    stream = stream.reshape(rows, cols * bits)
    return np.packbits(stream, axis=1, bitorder="little").reshape(rows, -(-cols * bits // 8))


# ---- scale layout (seeds/001) ----


def tiled_offsets(rows: int, cols: int) -> np.ndarray:
    """[rows, cols] byte offsets in the 128x4 tiled layout: 512-byte tiles row-major, and inside a tile
    (r % 32) * 16 + (r % 128) // 32 * 4 + c % 4."""
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    tiles_per_row = -(-cols // 4)
    tile = (r // 128) * tiles_per_row + c // 4
    return tile * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def to_tiled(scales: np.ndarray) -> np.ndarray:
    rows, cols = scales.shape
    out = np.zeros(-(-rows // 128) * 128 * (-(-cols // 4) * 4), np.uint8)
    out[tiled_offsets(rows, cols)] = scales
    return out


# ---- attention ----


def attention(q, k, v, causal=False, softmax_scale=0.0):
    """Plain softmax attention in float64. q [B,Sq,Hq,D], k/v [B,Skv,Hkv,D]; query head h reads KV head
    h // (Hq/Hkv); causal masks bottom-right aligned (query i sees keys j <= i + Skv - Sq)."""
    _, sq, hq, d = q.shape
    skv, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    kk, vv = np.repeat(k, g, axis=2), np.repeat(v, g, axis=2)
    scale = softmax_scale if softmax_scale != 0.0 else 1.0 / math.sqrt(d)
    s = np.einsum("bqhd,bkhd->bhqk", q, kk) * scale
    if causal:
        mask = np.arange(skv)[None, :] > np.arange(sq)[:, None] + skv - sq
        s = np.where(mask, -np.inf, s)
    m = s.max(axis=-1, keepdims=True)
    dead = np.isneginf(m)  # a query that sees no key
    p = np.exp(s - np.where(dead, 0.0, m))
    total = p.sum(axis=-1, keepdims=True)
    out = np.einsum("bhqk,bkhd->bqhd", p / np.where(dead, 1.0, total), vv)
    with np.errstate(divide="ignore"):
        lse = np.where(dead, -np.inf, m + np.log(total))[..., 0]
    return out, lse
