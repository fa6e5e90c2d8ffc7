"""The package's PyTorch API (mxattn.quantize, MXTensor, mxattn.attention, mxattn.PagedKVCache) on the GPU,
against the CPU reference; under torch.compile, CUDA graph replay and a non-default stream; bad arguments.

Run on a GPU machine by scripts/device_check.sh (PYTHONPATH=python); skipped elsewhere.
"""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
mxattn = pytest.importorskip("mxattn")
pytestmark = pytest.mark.skipif(not hasattr(mxattn, "gpu") or not torch.cuda.is_available(),
                                reason="no CUDA build or no GPU")

# Error bars against FP64 attention of the dequantized inputs (tests/gpu/attention_test.cu's): the exact
# kernels (portable, hopper-exact: Auto's choice on Hopper for MX formats) 5e-3.
EXACT_BAR = 5e-3


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def cpu(x):
    return x.float().cpu().numpy()


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4", "nvfp4", "mxfp6_e3m2", "e2m3/k16/ue8m0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("axis,layout", [(-1, "rowmajor"), (1, "tiled"), (0, "rowmajor")])
def test_quantize_matches_the_cpu_reference(fmt, dtype, axis, layout):
    torch.manual_seed(0)
    x = torch.randn(6, 70, 3, 32, device="cuda", dtype=dtype) * 3
    t = mxattn.quantize(x, fmt, axis=axis, layout=layout)
    r = mxattn.quantize(cpu(x), fmt, axis=axis, layout=layout)
    assert isinstance(t, mxattn.MXTensor) and t.is_cuda and t.device == x.device
    fields = lambda m: (m.format, m.shape, m.axis, m.layout, m.stored_shape)  # noqa: E731
    assert fields(t) == fields(r)
    assert t.codes.dtype == torch.uint8 and tuple(t.codes.shape) == r.codes.shape
    np.testing.assert_array_equal(t.codes.cpu().numpy(), r.codes)
    np.testing.assert_array_equal(t.scales.cpu().numpy(), r.scales)
    assert t.tensor_scale.item() == r.tensor_scale
    for out_dtype in (torch.float32, torch.bfloat16):
        y = t.dequantize(out_dtype)
        assert y.dtype == out_dtype and tuple(y.shape) == tuple(x.shape)
        np.testing.assert_array_equal(cpu(y), torch.from_numpy(r.dequantize()).to(out_dtype).float().numpy())
    other = "tiled" if layout == "rowmajor" else "rowmajor"
    moved = t.to(layout=other)
    np.testing.assert_array_equal(moved.scales.cpu().numpy(), r.to(layout=other).scales)
    assert torch.equal(moved.dequantize(torch.float32), t.dequantize(torch.float32))


def test_quantize_tensor_scale_and_strided_views():
    torch.manual_seed(1)
    x = torch.randn(64, 96, device="cuda", dtype=torch.bfloat16)
    for given in (1000.0, torch.full((1,), 1000.0, device="cuda")):
        t = mxattn.quantize(x, "nvfp4", tensor_scale=given)
        assert t.tensor_scale.item() == 1000.0
        want = mxattn.quantize(cpu(x), "nvfp4", tensor_scale=1000.0)
        np.testing.assert_array_equal(t.codes.cpu().numpy(), want.codes)
    view = x.t()  # strided: blocks along a non-contiguous axis
    np.testing.assert_array_equal(mxattn.quantize(view, "mxfp8").codes.cpu().numpy(),
                                  mxattn.quantize(np.ascontiguousarray(cpu(view)), "mxfp8").codes)


def test_quantize_bad_arguments_name_the_argument():
    x = torch.randn(4, 64, device="cuda")
    cases = [
        (ValueError, "x: a torch tensor must be on a CUDA device", lambda: mxattn.quantize(x.cpu(), "mxfp8")),
        (TypeError, "x: dtype must be float32, float16 or bfloat16", lambda: mxattn.quantize(x.int(), "mxfp8")),
        (ValueError, "format: unknown format 'mxfp3'", lambda: mxattn.quantize(x, "mxfp3")),
        (ValueError, "axis: 2 is out of range", lambda: mxattn.quantize(x, "mxfp8", axis=2)),
        (ValueError, "layout: expected 'rowmajor' or 'tiled'", lambda: mxattn.quantize(x, "mxfp8", layout="cols")),
        (ValueError, "tensor_scale: format 'mxfp8' has no tensor scale",
         lambda: mxattn.quantize(x, "mxfp8", tensor_scale=2.0)),
        (ValueError, "tensor_scale: must be finite and positive",
         lambda: mxattn.quantize(x, "nvfp4", tensor_scale=-1.0)),
        (TypeError, "dtype: must be torch.float32", lambda: mxattn.quantize(x, "mxfp8").dequantize(torch.int32)),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()


def quantized_qkv(b, sq, skv, hq, hkv, d, fmt, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(b, skv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    return q, k, v, mxattn.quantize(q, fmt), mxattn.quantize(k, fmt), mxattn.quantize(v, fmt, axis=1)


def fp64_attention(q, k, v, causal):
    out, lse = mxattn.attention_fp64(*(np.asarray(x, np.float64) for x in (q, k, v)), causal=causal)
    return np.asarray(out), np.asarray(lse)


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4", "nvfp4"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_fp64_of_the_dequantized_inputs(fmt, causal):
    q, k, v, qt, kt, vt = quantized_qkv(2, 77, 130, 8, 2, 128, fmt, seed=2)
    out, lse = mxattn.attention(qt, kt, vt, causal=causal, return_lse=True)
    assert out.dtype == torch.bfloat16 and tuple(out.shape) == (2, 77, 8, 128) and tuple(lse.shape) == (2, 8, 77)
    ref, ref_lse = fp64_attention(cpu(qt.dequantize()), cpu(kt.dequantize()), cpu(vt.dequantize()), causal)
    # NVFP4's Q and K round to E4M3 on the Hopper kernels (Auto keeps them on the portable one: exact).
    assert rel_l2(cpu(out), ref) <= EXACT_BAR
    np.testing.assert_allclose(cpu(lse), ref_lse, rtol=1e-3, atol=1e-3)
    # The same through formats=: quantized here, bit for bit the explicit path's operands. (Without an LSE to
    # write the Hopper kernel sums P on the tensor cores: another rounding, so both calls ask for it.)
    again, _ = mxattn.attention(q, k, v, causal=causal, formats=(fmt, fmt, fmt), return_lse=True)
    assert torch.equal(again, out)
    assert rel_l2(cpu(mxattn.attention(qt, kt, vt, causal=causal)), ref) <= EXACT_BAR


def test_attention_dense_q_kernels_and_packed_batch():
    q, k, v, _, kt, vt = quantized_qkv(1, 40, 64, 4, 2, 64, "mxfp8", seed=3)
    ref, _ = fp64_attention(cpu(q), cpu(kt.dequantize()), cpu(vt.dequantize()), False)
    hopper = torch.cuda.get_device_capability() == (9, 0)
    for kernel in ["auto", "portable"] + (["hopper-exact"] if hopper else []):
        out = mxattn.attention(q.half(), kt, vt, kernel=kernel)
        assert out.dtype == torch.float16 and rel_l2(cpu(out), ref) <= EXACT_BAR, kernel
    assert torch.equal(mxattn.attention(q, k, v, formats=(None, "mxfp8", "mxfp8")), mxattn.attention(q, kt, vt))
    # Two sequences packed: 30 and 10 queries, 40 and 24 keys (the second from key 64, a V block multiple).
    i32 = dict(dtype=torch.int32, device="cuda")
    cu_q, cu_k, used = torch.tensor([0, 30, 40], **i32), torch.tensor([0, 64, 96], **i32), torch.tensor([40, 24], **i32)
    qp = torch.randn(1, 40, 4, 64, device="cuda")
    kp, vp = torch.zeros(1, 96, 2, 64, device="cuda"), torch.zeros(1, 96, 2, 64, device="cuda")
    for x in (kp, vp):  # V's padding zero: it shares its block's scale
        x[:, :40], x[:, 64:88] = torch.randn(1, 40, 2, 64, device="cuda"), torch.randn(1, 24, 2, 64, device="cuda")
    qp, kp, vp = (x.bfloat16() for x in (qp, kp, vp))
    qt, kt, vt = mxattn.quantize(qp, "mxfp8"), mxattn.quantize(kp, "mxfp8"), mxattn.quantize(vp, "mxfp8", axis=1)
    out, lse = mxattn.attention(qt, kt, vt, causal=True, return_lse=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                seqused_k=used)
    assert tuple(lse.shape) == (2, 4, 30) and torch.isnan(lse[1, :, 10:]).all()
    qd, kd, vd = cpu(qt.dequantize()), cpu(kt.dequantize()), cpu(vt.dequantize())
    for (q0, q1), (k0, k1), b in (((0, 30), (0, 40), 0), ((30, 40), (64, 88), 1)):
        ref, ref_lse = fp64_attention(qd[:, q0:q1], kd[:, k0:k1], vd[:, k0:k1], True)
        assert rel_l2(cpu(out[:, q0:q1]), ref) <= EXACT_BAR
        np.testing.assert_allclose(cpu(lse[b:b + 1, :, :q1 - q0]), ref_lse, rtol=1e-3, atol=1e-3)


def test_attention_bad_arguments_name_the_argument():
    q, k, v, qt, kt, vt = quantized_qkv(1, 16, 32, 4, 2, 64, "mxfp8", seed=4)
    i32 = torch.zeros(3, dtype=torch.int32, device="cuda")
    cases = [
        (TypeError, "k, v: must be MXTensors", lambda: mxattn.attention(qt, k, vt)),
        (ValueError, "v: must be blocked along the keys",
         lambda: mxattn.attention(qt, kt, mxattn.quantize(v, "mxfp8"))),
        (ValueError, "k: attention reads row-major scales", lambda: mxattn.attention(qt, kt.to(layout="tiled"), vt)),
        (ValueError, "k: a mxfp8 tensor of shape \\(1, 32, 2, 64\\) blocked along axis 3 needs codes uint8",
         lambda: mxattn.attention(qt, mxattn.MXTensor(kt.codes[:, :16], kt.scales, kt.tensor_scale, "mxfp8", kt.shape,
                                                      -1, "rowmajor"), vt)),
        (ValueError, "self: a mxfp8 tensor", lambda: mxattn.MXTensor(kt.codes, kt.scales[:4], kt.tensor_scale,
                                                                       "mxfp8", kt.shape, -1, "rowmajor").dequantize()),
        (ValueError, "axis: 4 is out of range", lambda: mxattn.MXTensor(kt.codes, kt.scales, kt.tensor_scale, "mxfp8",
                                                                          kt.shape, 4, "rowmajor")),
        (ValueError, "q: must be a torch CUDA tensor", lambda: mxattn.attention(
            q.cpu(), k, v, formats=("mxfp8", "mxfp8", "mxfp8"))),
        (TypeError, "q: dtype must be bfloat16 or float16", lambda: mxattn.attention(q.float(), kt, vt)),
        (ValueError, "q: H_q 3 must be a multiple", lambda: mxattn.attention(q[:, :, :3], kt, vt)),
        (ValueError, "q: shape .* does not match k's", lambda: mxattn.attention(q[..., :32], kt, vt)),
        (ValueError, "formats: must be", lambda: mxattn.attention(q, k, v, formats=("mxfp8",))),
        (ValueError, "format: unknown format 'mxfp5'",
         lambda: mxattn.attention(q, k, v, formats=("mxfp5", "mxfp8", "mxfp8"))),
        (ValueError, "kernel: 'fast'", lambda: mxattn.attention(qt, kt, vt, kernel="fast")),
        (TypeError, "out_dtype: must be", lambda: mxattn.attention(qt, kt, vt, out_dtype=torch.float32)),
        (ValueError, "cu_seqlens_q, cu_seqlens_k: a packed batch needs both",
         lambda: mxattn.attention(qt, kt, vt, cu_seqlens_q=i32)),
        (TypeError, "cu_seqlens_q: dtype must be int32",
         lambda: mxattn.attention(qt, kt, vt, cu_seqlens_q=i32.long(), cu_seqlens_k=i32)),
        (ValueError, "cu_seqlens_k: must have 3 entries",
         lambda: mxattn.attention(qt, kt, vt, cu_seqlens_q=i32, cu_seqlens_k=i32[:2])),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()


def paged_setup(batch, lens, heads_kv, d, page_size, fmt_k, fmt_v, seed, q_len=1, heads_q=None):
    """A cache holding `lens` tokens of each sequence on shuffled pages, filled by appends of a few tokens at a
    time, and the dense K and V that went in."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    pages_per_seq = max(math.ceil(n / page_size) for n in lens)
    num_pages = batch * pages_per_seq + 3
    perm = torch.randperm(num_pages, generator=torch.Generator().manual_seed(seed))[:batch * pages_per_seq]
    block_table = perm.reshape(batch, pages_per_seq).to(torch.int32).cuda()
    cache = mxattn.PagedKVCache(num_pages, page_size, heads_kv, d, fmt_k, fmt_v)
    longest = max(lens)
    k = torch.randn(batch, longest, heads_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(batch, longest, heads_kv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    held = torch.zeros(batch, dtype=torch.int32, device="cuda")
    step = 7
    for t0 in range(0, longest, step):  # every sequence gets `step` tokens a call (past its length: pages it owns)
        n = min(step, longest - t0)
        cache.append(k[:, t0:t0 + n], v[:, t0:t0 + n], block_table, held)
        held += n
    seq_lens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    return cache, block_table, seq_lens, k, v


def paged_reference(q, k, v, lens, fmt_k, fmt_v, causal):
    """FP64 attention per sequence over its first lens[b] tokens of K and V quantized along D (the cache's
    blocks) with the cache's tensor scale (1)."""
    ts = lambda f: 1.0 if mxattn.format_info(f)["tensor_scale"] else None  # noqa: E731
    kd = mxattn.quantize(cpu(k), fmt_k, tensor_scale=ts(fmt_k)).dequantize()
    vd = mxattn.quantize(cpu(v), fmt_v, tensor_scale=ts(fmt_v)).dequantize()
    outs, lses = [], []
    for b, n in enumerate(lens):
        o, l = fp64_attention(cpu(q[b:b + 1]), kd[b:b + 1, :n], vd[b:b + 1, :n], causal)
        outs.append(o), lses.append(l)
    return np.concatenate(outs), np.concatenate(lses)


@pytest.mark.parametrize("fmt_k,fmt_v", [("mxfp8", "mxfp8"), ("mxfp4", "mxfp4"), ("nvfp4", "nvfp4"),
                                         ("mxfp8", "mxfp4")])
@pytest.mark.parametrize("q_len", [1, 4])
def test_paged_cache_decode_matches_fp64(fmt_k, fmt_v, q_len):
    lens = [300, 77, 1024]
    cache, block_table, seq_lens, k, v = paged_setup(3, lens, 2, 128, 64, fmt_k, fmt_v, seed=5)
    q = torch.randn(3, q_len, 8, 128, device="cuda", dtype=torch.bfloat16)
    out, lse = cache.decode(q, block_table, seq_lens, return_lse=True)
    assert out.dtype == q.dtype and out.shape == q.shape and tuple(lse.shape) == (3, 8, q_len)
    ref, ref_lse = paged_reference(q, k, v, lens, fmt_k, fmt_v, causal=True)
    assert rel_l2(cpu(out), ref) <= EXACT_BAR
    np.testing.assert_allclose(cpu(lse), ref_lse, rtol=1e-5, atol=1e-5)
    # A tight max_seq_len gives the same result (it only sizes the split grid); so does a given output.
    assert rel_l2(cpu(cache.decode(q, block_table, seq_lens, max_seq_len=1024)), ref) <= EXACT_BAR
    given = torch.full_like(q, float("nan"))
    assert cache.decode(q, block_table, seq_lens, out=given) is given and rel_l2(cpu(given), ref) <= EXACT_BAR


def test_paged_cache_bad_arguments_name_the_argument():
    cache, block_table, seq_lens, _, _ = paged_setup(2, [40, 10], 2, 64, 16, "mxfp8", "mxfp8", seed=6)
    q = torch.randn(2, 1, 4, 64, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(2, 1, 2, 64, device="cuda", dtype=torch.bfloat16)
    cases = [
        (ValueError, "page_size: must be a power of two", lambda: mxattn.PagedKVCache(8, 24, 2, 64)),
        (ValueError, "head_dim: must be 64, 128 or 256", lambda: mxattn.PagedKVCache(8, 16, 2, 96)),
        (ValueError, "format: unknown format", lambda: mxattn.PagedKVCache(8, 16, 2, 64, "mxfp7")),
        (ValueError, "device: must be a CUDA device", lambda: mxattn.PagedKVCache(8, 16, 2, 64, device="cpu")),
        (ValueError, "q: must be a torch CUDA tensor", lambda: cache.decode(q.cpu(), block_table, seq_lens)),
        (TypeError, "q: dtype must be bfloat16 or float16", lambda: cache.decode(q.float(), block_table, seq_lens)),
        (ValueError, "q: H_q 3 must be a multiple", lambda: cache.decode(q[:, :, :3], block_table, seq_lens)),
        (ValueError, "q: q_len 17 must be in 1..16",
         lambda: cache.decode(q.expand(2, 17, 4, 64), block_table, seq_lens)),
        (TypeError, "block_table: dtype must be int32", lambda: cache.decode(q, block_table.long(), seq_lens)),
        (ValueError, "block_table: must be contiguous int32 \\[B = 2",
         lambda: cache.decode(q, block_table[:1], seq_lens)),
        (ValueError, "seq_lens: must have 2 entries", lambda: cache.decode(q, block_table, seq_lens[:1])),
        (ValueError, "k: 1 heads, the cache has 2",
         lambda: cache.append(kv[:, :, :1], kv[:, :, :1], block_table, seq_lens)),
        (ValueError, "v: shape", lambda: cache.append(kv, kv[:1], block_table, seq_lens)),
        (ValueError, "out: must be like q", lambda: cache.decode(q, block_table, seq_lens, out=q.half())),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()


def test_under_torch_compile():
    q, k, v, qt, kt, vt = quantized_qkv(1, 64, 128, 4, 2, 128, "mxfp8", seed=7)
    cache, block_table, seq_lens, _, _ = paged_setup(2, [100, 64], 2, 128, 16, "mxfp8", "mxfp4", seed=8)
    qd = torch.randn(2, 1, 4, 128, device="cuda", dtype=torch.bfloat16)

    def step(q, k, v, qd):
        t = mxattn.quantize(k, "mxfp8")
        out = mxattn.attention(q, t, mxattn.quantize(v, "mxfp8", axis=1), formats=None)
        kv = k[:, :1].float().bfloat16()
        cache.append(kv[:1].expand(2, 1, 2, 128), kv[:1].expand(2, 1, 2, 128), block_table, seq_lens)
        return out, t.dequantize(torch.float32), cache.decode(qd, block_table, seq_lens + 1)

    eager = step(q, k, v, qd)
    compiled = torch.compile(step, fullgraph=True)(q, k, v, qd)
    for a, b in zip(eager, compiled):
        # Decode's warps take KV tiles as they free up, so the sums' order, and the last bit of a BF16 output
        # (2^-8 relative), may differ between two calls.
        assert torch.equal(a, b) or rel_l2(cpu(a), cpu(b)) <= 2.0**-8


def test_cuda_graph_replay_and_side_stream():
    cache, block_table, seq_lens, k, v = paged_setup(2, [200, 129], 2, 128, 32, "mxfp4", "mxfp4", seed=9)
    q = torch.randn(2, 1, 8, 128, device="cuda", dtype=torch.bfloat16)
    _, _, _, qt, kt, vt = quantized_qkv(1, 64, 96, 4, 2, 128, "mxfp8", seed=10)
    cache.decode(q, block_table, seq_lens)  # the workspace, before the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # a non-default stream: the ops run on the current one
        side = cache.decode(q, block_table, seq_lens), mxattn.attention(qt, kt, vt)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = cache.decode(q, block_table, seq_lens)
        prefill = mxattn.attention(qt, kt, vt)
    q.copy_(torch.randn_like(q))
    graph.replay()
    torch.cuda.synchronize()
    ref, _ = paged_reference(q, k, v, [200, 129], "mxfp4", "mxfp4", causal=True)
    assert rel_l2(cpu(out), ref) <= EXACT_BAR
    assert torch.equal(prefill, side[1]) and not torch.equal(out, side[0])
