"""The 128x4 tiled scale layout (seeds/001): its worked examples, its reference conversion code, and
round trips with row-major, padded and unpadded."""
import math

import numpy as np
import pytest

import mx_numpy as ref
import mxattn
from checks import assert_same


def seed_to_128x4_tiled(scales_2d):
    """seeds/001's reference conversion, as printed there (requires a padded [outer, inner])."""
    outer_dim, inner_dim = scales_2d.shape
    assert outer_dim % 128 == 0 and inner_dim % 4 == 0
    num_tile_cols = inner_dim // 4
    out = np.empty(outer_dim * inner_dim, dtype=scales_2d.dtype)
    for r in range(outer_dim):
        for c in range(inner_dim):
            tile_r, tile_c = r // 128, c // 4
            tile_base = (tile_c + tile_r * num_tile_cols) * 512
            lr, lc = r % 128, c % 4
            out[tile_base + (lr % 32) * 16 + (lr // 32) * 4 + lc] = scales_2d[r, c]
    return out


def seed_quantize_scales_for_cudnn(scales_2d):
    """seeds/001: pad to [ceil(M/128)*128, ceil(cols/4)*4] with zeros, then tile."""
    m, cols = scales_2d.shape
    padded = np.zeros((math.ceil(m / 128) * 128, math.ceil(cols / 4) * 4), dtype=scales_2d.dtype)
    padded[:m, :cols] = scales_2d
    return seed_to_128x4_tiled(padded)


def test_worked_example_4x2(rng):
    """seeds/001: scales [4, 2] = [[a, b], [c, d], [e, f], [g, h]] padded to [128, 4] and tiled."""
    a, b, c, d, e, f, g, h = rng.integers(1, 256, 8)  # non-zero, so padding is told apart
    scales = np.array([[a, b], [c, d], [e, f], [g, h]], np.uint8)
    t = mxattn.to_tiled(scales)
    assert t.shape == (512,) and t.dtype == np.uint8
    assert t[0:4].tolist() == [a, b, 0, 0]  # row 0
    assert t[4:16].tolist() == [0] * 12  # rows 32, 64, 96
    assert t[16:20].tolist() == [c, d, 0, 0]  # row 1
    assert t[20:32].tolist() == [0] * 12  # rows 33, 65, 97
    assert t[32:36].tolist() == [e, f, 0, 0]  # row 2
    assert t[48:52].tolist() == [g, h, 0, 0]  # row 3
    assert not np.any(t[64:]), "offsets 64-511 (rows 4-31 and their 32-stride partners) must be zero"
    assert np.count_nonzero(t) == 8
    assert_same(mxattn.from_tiled(t, 4, 2), scales, "from_tiled")


def test_tile_order_256x8():
    """seeds/001: MXFP8 [256, 256] data -> [256, 8] scales -> 2x2 tiles A B / C D, row-major, 2048 bytes."""
    scales = np.zeros((256, 8), np.uint8)
    for tile, (r0, c0) in enumerate([(0, 0), (0, 4), (128, 0), (128, 4)]):
        scales[r0 : r0 + 128, c0 : c0 + 4] = tile + 1
    t = mxattn.to_tiled(scales)
    assert t.size == 2048
    for tile in range(4):
        assert np.all(t[tile * 512 : (tile + 1) * 512] == tile + 1), f"tile {tile}"


def test_tile_internal_order():
    """Offsets 0-15 of a tile hold rows 0, 32, 64, 96 (4 columns each); 16-31 rows 1, 33, 65, 97."""
    r = np.arange(128)[:, None]
    c = np.arange(4)[None, :]
    scales = (r * 4 + c).astype(np.uint16)  # unique per (row, col) once split into two bytes
    lo = mxattn.to_tiled((scales & 0xFF).astype(np.uint8)).astype(np.uint16)
    hi = mxattn.to_tiled((scales >> 8).astype(np.uint8)).astype(np.uint16)
    pos = lo | hi << 8  # the (row*4 + col) stored at each offset
    rows, cols = pos // 4, pos % 4
    assert rows[:16].tolist() == [0] * 4 + [32] * 4 + [64] * 4 + [96] * 4
    assert rows[16:32].tolist() == [1] * 4 + [33] * 4 + [65] * 4 + [97] * 4
    assert cols[:16].tolist() == [0, 1, 2, 3] * 4
    # The seed's inverse map: outer = ((offset % 16) // 4) * 32 + offset // 16, inner = offset % 4.
    off = np.arange(512)
    assert np.array_equal(rows, ((off % 16) // 4) * 32 + off // 16)
    assert np.array_equal(cols, off % 4)


SHAPES = [(4, 2), (1, 1), (128, 4), (256, 8), (130, 5), (129, 13), (500, 6), (500, 12), (3, 300), (0, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{r}x{c}" for r, c in SHAPES])
def test_to_tiled_matches_seed_reference(shape, rng):
    scales = rng.integers(1, 256, shape).astype(np.uint8)
    t = mxattn.to_tiled(scales)
    assert t.size == math.ceil(shape[0] / 128) * 128 * math.ceil(shape[1] / 4) * 4
    assert_same(t, ref.to_tiled(scales), "to_tiled vs mx_numpy")
    if shape[0] * shape[1] <= 4096:  # the seed's loops are slow
        assert_same(t, seed_quantize_scales_for_cudnn(scales), "to_tiled vs seeds/001 code")
    # Padding is zero: exactly the logical entries are non-zero.
    assert np.count_nonzero(t) == scales.size


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{r}x{c}" for r, c in SHAPES])
def test_round_trips(shape, rng):
    rows, cols = shape
    scales = rng.integers(0, 256, shape).astype(np.uint8)
    t = mxattn.to_tiled(scales)
    assert_same(mxattn.from_tiled(t, rows, cols), scales, "from_tiled(to_tiled(s))")
    # Any tiled buffer with zero padding survives tiled -> row-major -> tiled.
    flat = np.zeros_like(t)
    flat[ref.tiled_offsets(rows, cols)] = rng.integers(0, 256, shape).astype(np.uint8)
    assert_same(mxattn.to_tiled(mxattn.from_tiled(flat, rows, cols)), flat, "to_tiled(from_tiled(t))")
    # Strided (transposed-view) input gives the same result as a contiguous copy.
    st = np.ascontiguousarray(scales.T).T
    assert_same(mxattn.to_tiled(st), t, "to_tiled of a column-major array")


def test_quantized_tensor_scales_agree_across_layouts(rng):
    x = rng.standard_normal((3, 5, 70)).astype(np.float32)  # 15 rows, 3 blocks per row
    rm = mxattn.quantize(x, "mxfp8", layout="rowmajor")
    tl = mxattn.quantize(x, "mxfp8", layout="tiled")
    assert rm.scale_shape == tl.scale_shape == (15, 3)
    assert_same(tl.scales, mxattn.to_tiled(rm.scales.reshape(15, 3)), "tiled scales")
    assert_same(mxattn.from_tiled(tl.scales, 15, 3), rm.scales.reshape(15, 3), "row-major scales")
    assert_same(mxattn.dequantize(tl), mxattn.dequantize(rm), "dequantize does not depend on the layout")
