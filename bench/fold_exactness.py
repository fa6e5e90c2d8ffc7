#!/usr/bin/env python3
"""How exact the Hopper prefill's K fold is (CPU model; NumPy + ml_dtypes).

K is quantized to MXFP8 (E4M3 elements, 32-element blocks along D, E8M0 scales, saturating), then folded
to E4M3 against one reference exponent per key (the largest block exponent of the key) or per KV tile
of 128 keys at D = 128 (the kernel's choice: 128 keys to v6 and again since v9, 192 between; the softmax
needs no multiply per score). A block whose exponent lies k below the reference shifts down by k binades and stays exact while its elements stay
E4M3 normals. Prints the fraction of elements folded inexactly, the largest score error against the
scores of the dequantized K, and the attention output's rel-L2 (random V).

NVFP4 (E2M1 elements, blocks of 16, UE4M3 scales, an FP32 tensor scale) folds with a rounding: an element
times its scale's significand has up to 6 significant bits and E4M3 keeps 4. The last lines model Q, K and
V folded that way (per row, the reference from the largest scale exponent, headroom 5) against attention
of the exact products, P unrounded.

    python3 bench/fold_exactness.py
"""
import ml_dtypes
import numpy as np

E4M3 = ml_dtypes.float8_e4m3fn
TILE = 128  # Traits<128>::kBlockN
rng = np.random.default_rng(1)


def mx_quantize(x):
    """x: keys x D -> (codes, block exponents) with value = code * 2^e, blocks of 32 along D."""
    b = x.reshape(x.shape[0], -1, 32)
    amax = np.abs(b).max(-1, keepdims=True)
    e = np.floor(np.log2(np.maximum(amax, 1e-30))) - 8  # E4M3's largest exponent is 8
    return np.clip(b / 2.0**e, -448, 448).astype(E4M3), e


def attention(scores, v, d):
    z = scores / np.sqrt(d)  # softmax scale 1/sqrt(D)
    z = z - z.max(1, keepdims=True)
    w = np.exp(z)
    return (w / w.sum(1, keepdims=True)) @ v


def report(name, k):
    q, v = rng.standard_normal((64, k.shape[1])), rng.standard_normal((k.shape[0], 64))
    codes, e = mx_quantize(k)
    exact = q @ (codes.astype(np.float64) * 2.0**e).reshape(k.shape).T
    for mode in ("key", "tile"):
        ref = e.max(axis=1, keepdims=True)  # per key
        if mode == "tile":
            ref = np.repeat(ref.reshape(-1, TILE, 1, 1).max(axis=1, keepdims=True), TILE, axis=1).reshape(ref.shape)
        shifted = codes.astype(np.float64) * 2.0**(e - ref)
        folded = shifted.astype(E4M3).astype(np.float64)
        scores = q @ (folded * 2.0**ref).reshape(k.shape).T
        o0, o1 = attention(exact, v, k.shape[1]), attention(scores, v, k.shape[1])
        print(f"{name:26s} {mode:4s}  inexact elements {np.mean(folded != shifted):.2e}  "
              f"score max abs error {np.abs(scores - exact).max():.2e}  "
              f"output rel-L2 {np.linalg.norm(o1 - o0) / np.linalg.norm(o0):.2e}")


S, D = 21 * TILE, 128  # ~4k keys, whole tiles
report("N(0,1)", rng.standard_normal((S, D)))
k = rng.standard_normal((S, D))
k[:, rng.choice(D, 4, replace=False)] *= 50
report("4 channels x50", k)
for f in (100, 1e4):
    k = rng.standard_normal((S, D))
    k[::TILE] *= f
    report(f"1 key a tile x{f:g}", k)
report("key norms lognormal(0, 2)", rng.standard_normal((S, D)) * np.exp(2 * rng.standard_normal((S, 1))))


def nvfp4_products(x):
    """x: rows x D -> (e2m1 code value * UE4M3 scale, scales, S_enc), blocks of 16 along D; the values
    are the products / S_enc."""
    b = x.reshape(x.shape[0], -1, 16)
    s_enc = 448 * 6 / np.abs(x).max()
    scale = (np.abs(b).max(-1, keepdims=True) / 6 * s_enc).astype(E4M3).astype(np.float64)
    elem = (b / np.where(scale > 0, scale, 1) * s_enc).astype(ml_dtypes.float4_e2m1fn).astype(np.float64)
    return (elem * scale).reshape(x.shape), scale.reshape(x.shape[0], -1), s_enc


def nvfp4_fold(prod, scale):
    ref = np.floor(np.log2(np.maximum(scale.max(1, keepdims=True), 1e-30))) - 5
    shifted = prod * 2.0**-ref
    folded = shifted.astype(E4M3).astype(np.float64)
    return folded * 2.0**ref, np.mean((folded != shifted)[prod != 0])


for name, draw in (("N(0,1)", rng.standard_normal), ("uniform(-1, 1)", lambda n: rng.uniform(-1, 1, n))):
    S = 1024
    exact, folded, inexact = [], [], []
    for x in (draw((S, D)), draw((S, D)), draw((S, D)).T):  # Q, K; V blocked along the sequence
        prod, scale, s_enc = nvfp4_products(x)
        f, i = nvfp4_fold(prod, scale)
        exact.append(prod / s_enc), folded.append(f / s_enc), inexact.append(i)
    o0 = attention(exact[0] @ exact[1].T, exact[2].T, D)
    o1 = attention(folded[0] @ folded[1].T, folded[2].T, D)
    print(f"NVFP4 {name:16s} inexact nonzero elements q/k/v {' / '.join(f'{i:.2f}' for i in inexact)}  "
          f"output rel-L2 {np.linalg.norm(o1 - o0) / np.linalg.norm(o0):.2e}")
