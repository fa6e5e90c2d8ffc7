"""The GPU bindings (mxattn._mxattn.gpu) on torch CUDA tensors, against the CPU reference bindings.

Run on a GPU machine by scripts/device_check.sh (PYTHONPATH=python); skipped elsewhere.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
_mxattn = pytest.importorskip("mxattn._mxattn")
gpu = getattr(_mxattn, "gpu", None)
pytestmark = pytest.mark.skipif(gpu is None or not torch.cuda.is_available(), reason="no CUDA build or no GPU")

FORMATS = ["mxfp8", "mxfp4", "nvfp4", "mxfp6_e3m2/floor", "e2m3/k16/ue4m3/ts"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def reference(x, fmt, axis, layout, tensor_scale=None):
    return _mxattn.quantize(np.ascontiguousarray(x.float().cpu().numpy()), fmt, block_axis=axis, layout=layout,
                            tensor_scale=tensor_scale)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["rowmajor", "tiled"])
def test_quantize_and_dequantize_match_cpu(fmt, dtype, layout):
    torch.manual_seed(0)
    x = torch.randn(3, 70, 2, 48, device="cuda", dtype=dtype) * 4
    views = [(x, -1), (x, 1), (x.transpose(1, 3), 1)]  # K-like, prefill V along S, a strided view
    for v, axis in views:
        codes, scales, ts = gpu.quantize(v, fmt, block_axis=axis, layout=layout)
        ref = reference(v, fmt, axis, layout)
        got_codes = torch.from_dlpack(codes).cpu().numpy()
        assert got_codes.shape[-1] == ref.row_bytes
        np.testing.assert_array_equal(got_codes.reshape(-1), np.asarray(ref.codes).reshape(-1))
        np.testing.assert_array_equal(torch.from_dlpack(scales).cpu().numpy(), np.asarray(ref.scales))
        assert torch.from_dlpack(ts).cpu().numpy()[0] == np.float32(ref.tensor_scale)
        y = gpu.dequantize(codes, scales, ts, list(v.shape), fmt, block_axis=axis, layout=layout, dtype="f32")
        np.testing.assert_array_equal(torch.from_dlpack(y).cpu().numpy(), np.asarray(_mxattn.dequantize(ref)))


def test_into_torch_buffers_without_copies():
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    g = gpu.quantized_geometry(list(x.shape), "nvfp4", -1, "tiled")
    codes = torch.full((g["code_bytes"],), 0xAB, dtype=torch.uint8, device="cuda")
    scales = torch.full((g["scale_bytes"],), 0xAB, dtype=torch.uint8, device="cuda")
    ts = torch.full((1,), 1000.0, device="cuda")
    gpu.quantize_into(x, codes, scales, ts, "nvfp4", -1, "tiled", tensor_scale_given=True,
                      stream=torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    ref = reference(x, "nvfp4", -1, "tiled", tensor_scale=1000.0)
    np.testing.assert_array_equal(codes.cpu().numpy(), np.asarray(ref.codes).reshape(-1))
    np.testing.assert_array_equal(scales.cpu().numpy(), np.asarray(ref.scales))
    out = torch.full_like(x, float("nan"))
    gpu.dequantize_into(codes, scales, ts, out, "nvfp4", -1, "tiled")
    want = torch.from_numpy(np.asarray(_mxattn.dequantize(ref))).to(torch.bfloat16)
    assert torch.equal(out.cpu(), want)


def test_scale_layout_round_trip_and_amax():
    s = torch.randint(1, 255, (130, 9), dtype=torch.uint8, device="cuda")
    tiled = gpu.convert_scale_layout(s, 130, 9, "rowmajor", "tiled")
    np.testing.assert_array_equal(torch.from_dlpack(tiled).cpu().numpy(), np.asarray(_mxattn.to_tiled(s.cpu().numpy())))
    back = gpu.convert_scale_layout(tiled, 130, 9, "tiled", "rowmajor")
    assert torch.equal(torch.from_dlpack(back).cpu(), s.cpu().reshape(-1))
    x = torch.randn(1000, device="cuda")
    assert torch.from_dlpack(gpu.tensor_amax(x)).item() == x.abs().max().item()


def test_bad_arguments_name_the_argument():
    x = torch.randn(4, 32, device="cuda")
    with pytest.raises(ValueError, match="block_axis"):
        gpu.quantize(x, "mxfp8", block_axis=5)
    with pytest.raises(ValueError, match="format"):
        gpu.quantize(x, "mxfp9")
    with pytest.raises(ValueError, match="layout"):
        gpu.quantize(x, "mxfp8", layout="diagonal")


def hopper_gpu():
    return torch.cuda.get_device_capability() == (9, 0)


# The kernels' error bars against FP64 attention of the dequantized inputs, as tests/gpu/attention_test.cu's
# error_bar: the portable kernel keeps BF16 operands (5e-3); the Hopper kernel rounds P to E4M3 (3.5e-2),
# its exact mode to BF16 (5e-3).
ERROR_BAR = {"portable": 5e-3, "hopper": 3.5e-2, "hopper-exact": 5e-3}
KERNELS = ["portable", "hopper", "hopper-exact"]


def prefill_reference(q, k, v, fmt, causal, dense_q=False):
    """FP64 attention (the CPU reference binding) of q, k, v [B, S, H, D] after the GPU quantizer."""
    def deq(x, axis):
        c, s, t = gpu.quantize(x, fmt, block_axis=axis)
        return (c, s, t), torch.from_dlpack(gpu.dequantize(c, s, t, list(x.shape), fmt, block_axis=axis))
    qq, qd = (q, q.float()) if dense_q else deq(q, -1)
    (kq, kd), (vq, vd) = deq(k, -1), deq(v, 1)
    out, lse = _mxattn.attention_fp64(*(x.double().cpu().numpy() for x in (qd, kd, vd)), causal=causal)
    return qq, kq, vq, np.asarray(out), np.asarray(lse)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_prefill_matches_fp64(kernel, fmt, causal):
    if kernel != "portable" and not hopper_gpu():
        pytest.skip("the Hopper kernel needs an sm_90 GPU")
    torch.manual_seed(1)
    q = torch.randn(2, 77, 4, 128, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(2, 130, 2, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    qq, kq, vq, ref, ref_lse = prefill_reference(q, k, v, fmt, causal)
    out, lse = gpu.attention_prefill(qq, kq, vq, fmt, fmt, fmt, causal=causal, kernel=kernel)
    out, lse = out.double().cpu().numpy(), lse.double().cpu().numpy()
    assert out.shape == ref.shape and lse.shape == ref_lse.shape
    rel_l2 = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    assert rel_l2 <= ERROR_BAR[kernel], rel_l2
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("fmt", ["mxfp6_e3m2", "nvfp4"])
def test_attention_prefill_block_scaled_emulated(fmt):
    """The sm_120a kernel with its block-scaled instructions emulated runs here (any GPU this build has code for):
    P in E4M3 (the FP8 bar); NVFP4's V folded to E4M3 as well (the Hopper kernel's NVFP4 bar, 7e-2)."""
    if not hopper_gpu() and torch.cuda.get_device_capability() != (12, 0):
        pytest.skip("this build has GPU code for sm_90a and sm_120a")
    torch.manual_seed(4)
    q = torch.randn(1, 90, 2, 64, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(1, 150, 1, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    qq, kq, vq, ref, ref_lse = prefill_reference(q, k, v, fmt, True)
    out, lse = gpu.attention_prefill(qq, kq, vq, fmt, fmt, fmt, causal=True, kernel="block-scaled-emulated")
    rel_l2 = np.linalg.norm(out.double().cpu().numpy() - ref) / np.linalg.norm(ref)
    assert rel_l2 <= (7e-2 if fmt == "nvfp4" else 3.5e-2), rel_l2
    np.testing.assert_allclose(lse.double().cpu().numpy(), ref_lse, rtol=1e-3, atol=1e-3)
    _, kq8, vq8, _, _ = prefill_reference(q, k, v, "mxfp8", False)  # dense Q: the portable kernel's
    with pytest.raises(ValueError, match="BlockScaledEmulated does not take these arguments: q: needs MX Q"):
        gpu.attention_prefill(q, kq8, vq8, kernel="block-scaled-emulated")


def test_attention_prefill_dense_q_and_bad_arguments():
    torch.manual_seed(2)
    q = torch.randn(1, 40, 2, 64, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(1, 50, 1, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    _, kq, vq, ref, _ = prefill_reference(q, k, v, "mxfp8", False, dense_q=True)
    for kernel in KERNELS if hopper_gpu() else ["portable"]:
        out, _ = gpu.attention_prefill(q, kq, vq, kernel=kernel, out_dtype="f16")
        assert out.dtype == torch.float16
        assert np.linalg.norm(out.double().cpu().numpy() - ref) / np.linalg.norm(ref) <= ERROR_BAR[kernel], kernel
    with pytest.raises(ValueError, match="kernel"):
        gpu.attention_prefill(q, kq, vq, kernel="fastest")
    with pytest.raises(TypeError, match="k, v"):
        gpu.attention_prefill(q, kq[0], vq)
    kq_short = (kq[0][:, :49], kq[1], kq[2])
    with pytest.raises(ValueError, match="v: codes shape"):
        gpu.attention_prefill(q, kq_short, vq)


@pytest.mark.parametrize("kernel", KERNELS)
def test_attention_prefill_packed_batch(kernel):
    """A packed batch (cu_seqlens_q, cu_seqlens_kv, seqused_kv): each sequence against FP64 attention of its
    own slice of the dequantized packed tensors; V's padding zero, each sequence's keys from a 32 multiple."""
    if kernel != "portable" and not hopper_gpu():
        pytest.skip("the Hopper kernel needs an sm_90 GPU")
    torch.manual_seed(3)
    len_q, len_kv, H, Hk, D = [70, 1, 130], [90, 40, 0], 4, 2, 128
    cu_q = [0] + [int(x) for x in np.cumsum(len_q)]
    cu_kv = [0] + [int(x) for x in np.cumsum([(n + 31) // 32 * 32 + 32 for n in len_kv])]
    q = torch.randn(1, int(cu_q[-1]), H, D, device="cuda", dtype=torch.bfloat16)
    k = torch.zeros(1, int(cu_kv[-1]), Hk, D, device="cuda", dtype=torch.bfloat16)
    v = torch.zeros_like(k)
    for b, n in enumerate(len_kv):
        k[:, cu_kv[b]:cu_kv[b] + n] = torch.randn(1, n, Hk, D, device="cuda")
        v[:, cu_kv[b]:cu_kv[b] + n] = torch.randn(1, n, Hk, D, device="cuda")
    ops, deq = [], []
    for x, axis in ((q, -1), (k, -1), (v, 1)):
        c, s, t = gpu.quantize(x, "mxfp8", block_axis=axis)
        ops.append((c, s, t))
        deq.append(torch.from_dlpack(gpu.dequantize(c, s, t, list(x.shape), "mxfp8", block_axis=axis)).double().cpu())
    dev = lambda a: torch.tensor(a, dtype=torch.int32, device="cuda")  # noqa: E731
    out, lse = gpu.attention_prefill(*ops, causal=True, kernel=kernel, cu_seqlens_q=dev(cu_q),
                                     cu_seqlens_kv=dev(cu_kv), seqused_kv=dev(len_kv))
    out, lse = out.double().cpu().numpy(), lse.double().cpu().numpy()
    assert out.shape == (1, cu_q[-1], H, D) and lse.shape == (3, H, max(len_q))
    got, want = [], []
    for b in range(3):
        rows = slice(cu_q[b], cu_q[b + 1])
        if len_kv[b] == 0:  # no keys: zero output, LSE -inf
            ref, ref_lse = np.zeros((1, len_q[b], H, D)), np.full((1, H, len_q[b]), -np.inf)
        else:
            keys = slice(cu_kv[b], cu_kv[b] + len_kv[b])
            ref, ref_lse = (np.asarray(r) for r in _mxattn.attention_fp64(
                deq[0][:, rows].numpy(), deq[1][:, keys].numpy(), deq[2][:, keys].numpy(), causal=True))
        got.append(out[:, rows]), want.append(ref)
        np.testing.assert_allclose(lse[b:b + 1, :, :len_q[b]], ref_lse, rtol=1e-3, atol=1e-3)
        assert np.isnan(lse[b, :, len_q[b]:]).all()
    got, want = np.concatenate(got, axis=1), np.concatenate(want, axis=1)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) <= ERROR_BAR[kernel]
    with pytest.raises(ValueError, match="cu_seqlens_kv"):
        gpu.attention_prefill(*ops, kernel=kernel, cu_seqlens_q=dev(cu_q), cu_seqlens_kv=dev(cu_kv[:2]))
