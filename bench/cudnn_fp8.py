"""cuDNN FP8 attention (E4M3, per-tensor scales) through cudnn-frontend's Python graph API.

A baseline for mxattn's MX-scaled attention: `pygraph.sdpa_fp8` forward, inference (no stats), Q/K/V in
E4M3 with one FP32 descale each, the softmax output P rescaled by scale_s before its FP8 matmul with V, the
output in E4M3 scaled by scale_o (Hopper only writes FP8 output; BF16 output needs Blackwell and cuDNN 9.13),
and the amax of P and O written as the API requires.

Needs torch (imported first: its cuDNN is the one cudnn-frontend gets pointed at) and nvidia-cudnn-frontend
(import name `cudnn`, 1.16.0). Everything here imports lazily, so the module loads without either; `load()`
raises `Unavailable` with the reason when the package, the GPU or the cuDNN version does not fit.

  att = Fp8Attention(q, k, v, causal=True)   # q, k, v: [B, H, S, D] CUDA tensors (BF16), quantized here
  att.run()                                  # one forward on the current stream
  o = att.output()                           # float32 [B, H, S, D], dequantized
  o = sdpa_fp8(q, k, v, causal=False)        # the same with the output scale calibrated (two passes)

Scaling, per tensor (as TransformerEngine's delayed/current scaling and cudnn-frontend's own tests):
  x_fp8 = sat(x * 448 / amax(x)),  descale_x = amax(x) / 448           for Q, K, V
  S = Q_fp8 K_fp8^T * descale_q * descale_k * attn_scale;  P = softmax(S);  amax_s = max|P|
  P_fp8 = P * scale_s,  scale_s = 448 (P <= 1),  descale_s = 1 / 448
  O = P_fp8 V_fp8 * descale_s * descale_v;  amax_o = max|O|;  O_fp8 = O * scale_o
"""
import ctypes
import glob
import os
import sys

E4M3_MAX = 448.0
LOG_HINT = ("for logs rerun with CUDNN_FRONTEND_LOG_INFO=1 CUDNN_FRONTEND_LOG_FILE=stderr "
            "(frontend) and CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stderr (backend)")


class Unavailable(RuntimeError):
    """cuDNN FP8 attention cannot run here (no package, no GPU path, unsupported version or shape)."""


_state = {}      # "cudnn", "handle", "info" once loaded; "error" once failed
_graphs = {}     # one built graph per shape/stride/mask/output key
_reported = set()


def _loaded_libcudnn():
    """Path of the libcudnn.so.N this process has mapped (torch's), or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and os.path.basename(parts[-1]).startswith("libcudnn.so"):
                    return parts[-1]
    except OSError:
        pass
    return None


def _find_libcudnn():
    """libcudnn.so.N from an nvidia-cudnn-cuXX wheel on sys.path, or None."""
    import site
    import sysconfig
    roots = list(sys.path)
    try:
        roots += site.getsitepackages()
    except Exception:
        pass
    roots.append(sysconfig.get_path("purelib"))
    for root in roots:
        for sub in ("nvidia/cudnn/lib", "nvidia/cu13/lib", "nvidia/cudnn_jit/lib"):
            hits = sorted(glob.glob(os.path.join(root or ".", sub, "libcudnn.so.*[0-9]")))
            if hits:
                return hits[0]
    return None


def load():
    """Import torch and cudnn-frontend, point the frontend at torch's cuDNN, create a handle. Returns the
    `cudnn` module; raises Unavailable with the reason (the reason is kept, later calls fail fast)."""
    if "cudnn" in _state:
        return _state["cudnn"]
    if "error" in _state:
        raise Unavailable(_state["error"])
    try:
        return _load()
    except Unavailable as e:
        _state["error"] = str(e)
        raise


def _load():
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"torch is not importable ({e})")
    if not torch.cuda.is_available():
        raise Unavailable("no CUDA device")
    cap = torch.cuda.get_device_capability()
    if cap[0] < 9:
        raise Unavailable(f"cuDNN FP8 attention needs sm90 or newer, this GPU is sm{cap[0]}{cap[1]}")
    if not hasattr(torch, "float8_e4m3fn"):
        raise Unavailable(f"torch {torch.__version__} has no float8_e4m3fn")
    # Make torch load its cuDNN first (pip torch links libcudnn.so.9 from nvidia-cudnn-cuXX).
    torch_cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    lib = _loaded_libcudnn() or _find_libcudnn()
    fresh = "cudnn" not in sys.modules
    try:
        import cudnn
    except Exception as e:  # ImportError, or the frontend's own assert on several libcudnn.so.* files
        raise Unavailable(f"cannot import cudnn-frontend (pip package nvidia-cudnn-frontend==1.16.0, import name "
                          f"cudnn): {type(e).__name__}: {e}")
    if not hasattr(cudnn, "pygraph") or not hasattr(cudnn.pygraph, "sdpa_fp8"):
        raise Unavailable(f"module cudnn from {getattr(cudnn, '__file__', '?')} has no pygraph.sdpa_fp8 "
                          f"(not cudnn-frontend >= 1.x?)")
    # On import the frontend dlopens the first libcudnn.so.* it finds in the interpreter's purelib, else
    # "libcudnn.so.9" (which resolves to the copy torch already mapped). Point it at torch's copy explicitly
    # so one process never runs two cuDNN builds; before any cuDNN call, so no symbol is resolved yet.
    handle_note = "frontend's own dlopen"
    if fresh and lib:
        try:
            so = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            mod = sys.modules.get("cudnn._compiled_module") or getattr(cudnn, "_compiled_module", None)
            mod._set_dlhandle_cudnn(ctypes.cast(so._handle, ctypes.c_void_p).value)
            handle_note = lib
        except Exception as e:
            handle_note = f"frontend's own dlopen (re-pointing at {lib} failed: {type(e).__name__}: {e})"
    try:
        backend = int(cudnn.backend_version())
    except Exception as e:
        raise Unavailable(f"cudnn-frontend {getattr(cudnn, '__version__', '?')} found no usable cuDNN library "
                          f"({type(e).__name__}: {e}); torch's cuDNN: {torch_cudnn}, library {lib}")
    info = {"frontend": getattr(cudnn, "__version__", "?"), "backend": backend, "torch_cudnn": torch_cudnn,
            "libcudnn": handle_note, "sm": f"{cap[0]}{cap[1]}", "device": torch.cuda.get_device_name()}
    print(f"cudnn_fp8: cudnn-frontend {info['frontend']}, cuDNN {backend} (torch's {torch_cudnn}), "
          f"library {handle_note}, {info['device']} sm{info['sm']}", flush=True)
    if torch_cudnn is not None and backend != torch_cudnn:
        print(f"cudnn_fp8: WARNING: the frontend runs cuDNN {backend}, torch runs {torch_cudnn}", flush=True)
    if backend < 90100 or backend == 91000:
        raise Unavailable(f"cuDNN {backend} has no FP8 attention (needs 9.1 or newer, not 9.10.0)")
    try:
        handle = cudnn.create_handle()
    except Exception as e:
        raise Unavailable(f"cudnn.create_handle failed: {type(e).__name__}: {e}")
    _state.update(cudnn=cudnn, handle=handle, info=info)
    return cudnn


def info():
    """Versions and library path after load(); the reason after a failed load()."""
    return dict(_state["info"]) if "info" in _state else {"error": _state.get("error", "not loaded")}


def quantize_e4m3(x):
    """Per-tensor E4M3: (x_fp8, descale [1,1,1,1] fp32, amax [] fp32), all on x's device, no host sync.
    x_fp8 has x's shape and is contiguous; values saturate at +-448 (torch's cast would give NaN)."""
    import torch
    amax = x.detach().abs().amax().float().clamp_min(1e-30)
    scale = E4M3_MAX / amax
    xq = (x.detach().float().contiguous() * scale).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return xq, (1.0 / scale).reshape(1, 1, 1, 1).contiguous(), amax


def _scalar(value, like):
    import torch
    if isinstance(value, torch.Tensor):
        return value.detach().float().reshape(1, 1, 1, 1).to(like.device).contiguous()
    return torch.full((1, 1, 1, 1), float(value), dtype=torch.float32, device=like.device)


def _build(cudnn, handle, dims, strides, causal, attn_scale, out):
    """One graph: dims [B,H,S_q,S_kv,D]; strides of q, k, v, o (each 4 values, logical [B,H,S,D] order)."""
    b, h, s_q, s_kv, d = dims
    sq, sk, sv, so = strides
    fp8 = cudnn.data_type.FP8_E4M3
    f32 = cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=fp8, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    Q = g.tensor(name="Q", dim=[b, h, s_q, d], stride=list(sq), data_type=fp8)
    K = g.tensor(name="K", dim=[b, h, s_kv, d], stride=list(sk), data_type=fp8)
    V = g.tensor(name="V", dim=[b, h, s_kv, d], stride=list(sv), data_type=fp8)
    sc = {n: g.tensor(name=n, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32)
          for n in ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")}
    mask = dict(diagonal_alignment=cudnn.diagonal_alignment.TOP_LEFT, right_bound=0) if causal else {}
    O, stats, amax_s, amax_o = g.sdpa_fp8(q=Q, k=K, v=V, **sc, generate_stats=False, attn_scale=float(attn_scale),
                                          name="sdpa_fp8", **mask)
    assert stats is None
    O.set_output(True).set_dim([b, h, s_q, d]).set_stride(list(so)).set_data_type(
        cudnn.data_type.BFLOAT16 if out == "bf16" else fp8)
    for t in (amax_s, amax_o):
        t.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    plan = None
    try:
        plan = f"{g.get_execution_plan_count()} candidate plans, [0] {g.get_plan_name_at_index(0)}"
    except Exception:
        pass
    tensors = dict(Q=Q, K=K, V=V, O=O, amax_s=amax_s, amax_o=amax_o, **sc)
    return g, tensors, int(g.get_workspace_size()), plan


def _graph(dims, strides, causal, attn_scale, out):
    cudnn = load()
    key = (dims, strides, causal, float(attn_scale), out)
    if key not in _graphs:
        try:
            _graphs[key] = _build(cudnn, _state["handle"], dims, strides, causal, attn_scale, out)
        except Exception as e:
            msg = f"{type(e).__name__}: {e}".strip()
            first = msg not in _reported
            _reported.add(msg)
            if first:  # the full story once per distinct error
                print(f"cudnn_fp8: graph build failed for B,H,S_q,S_kv,D={dims} strides q,k,v,o={strides} "
                      f"causal={causal} attn_scale={attn_scale} out={out}\n  {msg}\n  {info()}\n  {LOG_HINT}",
                      file=sys.stderr, flush=True)
            raise Unavailable(f"graph not built: {msg.splitlines()[0][:200] if msg else type(e).__name__}")
        g, _, ws, plan = _graphs[key]
        print(f"cudnn_fp8: built B,H,S,D={dims[0]},{dims[1]},{dims[2]},{dims[4]} causal={causal} out={out}: "
              f"workspace {ws} B" + (f", {plan}" if plan else ""), flush=True)
    return _graphs[key]


class Fp8Attention:
    """cuDNN FP8 attention on one set of inputs: the graph (cached per shape), the quantized Q/K/V, the
    scale tensors, the output and amax buffers and the workspace, all kept alive here.

    q, k, v: [B, H, S, D] CUDA tensors (any float dtype; BF16 in the benchmarks), quantized per tensor.
    layout: 'bshd' (stored [B,S,H,D], cudnn-frontend's samples) or 'bhsd' (stored [B,H,S,D]).
    out: 'fp8' (E4M3 output, the only option on Hopper) or 'bf16' (Blackwell, cuDNN >= 9.13).
    scale_o: a float, or None for 448 / amax(V) with FP8 output (|O| <= max|V|: each row of P sums to 1) and
    1 with BF16 output (as cudnn-frontend's current-scaling sample). output() divides it out either way.
    """

    def __init__(self, q, k, v, causal=False, layout="bshd", out="fp8", attn_scale=None, scale_o=None):
        import torch
        load()
        if layout not in ("bshd", "bhsd"):
            raise ValueError(f"layout {layout!r}: 'bshd' or 'bhsd'")
        if out not in ("fp8", "bf16"):
            raise ValueError(f"out {out!r}: 'fp8' or 'bf16'")
        if q.dim() != 4 or k.dim() != 4 or v.dim() != 4 or not q.is_cuda:
            raise ValueError("q, k, v: 4-d CUDA tensors [B, H, S, D]")
        b, h, s_q, d = q.shape
        s_kv = k.shape[2]
        if tuple(k.shape) != (b, h, s_kv, d) or tuple(v.shape) != (b, h, s_kv, d):
            raise ValueError(f"shapes q {tuple(q.shape)} k {tuple(k.shape)} v {tuple(v.shape)}: same B, H, D "
                             f"(no GQA here), same S for k and v")
        self.causal, self.layout, self.out = causal, layout, out
        self.attn_scale = d ** -0.5 if attn_scale is None else float(attn_scale)

        def stored(x):  # quantize in the storage order, hand back the logical [B,H,S,D] view
            if layout == "bshd":
                xq, ds, amax = quantize_e4m3(x.transpose(1, 2))
                return xq.transpose(1, 2), ds, amax
            return quantize_e4m3(x)

        (self.q, dq, aq), (self.k, dk, ak), (self.v, dv, av) = stored(q), stored(k), stored(v)
        self.amax_in = (aq, ak, av)
        odt = torch.bfloat16 if out == "bf16" else torch.float8_e4m3fn
        if layout == "bshd":
            self.o = torch.empty(b, s_q, h, d, dtype=odt, device=q.device).transpose(1, 2)
        else:
            self.o = torch.empty(b, h, s_q, d, dtype=odt, device=q.device)
        dims = (b, h, s_q, s_kv, d)
        strides = tuple(tuple(int(x) for x in t.stride()) for t in (self.q, self.k, self.v, self.o))
        self.graph, self.tensors, ws, _ = _graph(dims, strides, causal, self.attn_scale, out)
        self.workspace = torch.empty(max(ws, 1), dtype=torch.uint8, device=q.device)
        self.buf = {"Q": self.q, "K": self.k, "V": self.v, "O": self.o,
                    "descale_q": dq, "descale_k": dk, "descale_v": dv,
                    "scale_s": _scalar(E4M3_MAX, q), "descale_s": _scalar(1.0 / E4M3_MAX, q),
                    "scale_o": _scalar(scale_o if scale_o is not None else 1.0 if out == "bf16" else E4M3_MAX / av, q),
                    "amax_s": torch.zeros(1, 1, 1, 1, dtype=torch.float32, device=q.device),
                    "amax_o": torch.zeros(1, 1, 1, 1, dtype=torch.float32, device=q.device)}
        self.pack = {self.tensors[n]: t for n, t in self.buf.items()}
        self._fast = None

    def set_scale_o(self, value):
        """New output scale (float or tensor); copied into the graph's scale_o buffer."""
        self.buf["scale_o"].copy_(_scalar(value, self.o))

    def run(self):
        """Enqueue one forward on torch's current stream."""
        import torch
        cudnn, handle = _state["cudnn"], _state["handle"]
        stream = torch.cuda.current_stream().cuda_stream
        if self._fast is None or self._fast[0] != stream:
            cudnn.set_stream(handle=handle, stream=stream)
            if self._fast is None:
                # First call through the documented entry point: graph.execute(variant_pack, workspace, handle)
                try:
                    self.graph.execute(self.pack, self.workspace, handle=handle)
                except Exception as e:
                    print(f"cudnn_fp8: execute failed: {type(e).__name__}: {e}\n  {info()}\n  {LOG_HINT}",
                          file=sys.stderr, flush=True)
                    raise
                # Then, to keep Python out of the timings, what execute() does minus rebuilding the uid->pointer
                # map on every call (cudnn/__init__.py: self._execute(uid_to_pointer, workspace_pointer, handle)).
                uid_ptr = {t.get_uid(): x.data_ptr() for t, x in self.pack.items()}
                ws_ptr = self.workspace.data_ptr()
                raw = getattr(self.graph, "_execute", None)
                fn = (lambda: raw(uid_ptr, ws_ptr, handle)) if raw is not None else \
                    (lambda: self.graph.execute(self.pack, self.workspace, handle=handle))
                self._fast = (stream, fn)
                return
            self._fast = (stream, self._fast[1])
        self._fast[1]()

    def output(self):
        """Dequantized output, float32 contiguous [B, H, S, D] (waits for the stream)."""
        return (self.o.float() / self.buf["scale_o"].reshape(())).contiguous()

    def amax(self):
        """(amax_s, amax_o) as cuDNN reported them for the last run (waits for the stream)."""
        return float(self.buf["amax_s"].item()), float(self.buf["amax_o"].item())


def sdpa_fp8(q, k, v, causal=False, layout="bshd", out="fp8", attn_scale=None, calibrate=True, details=None):
    """cuDNN FP8 attention of q, k, v ([B, H, S, D], BF16) with per-tensor E4M3 scales: float32 [B, H, S, D].

    With calibrate (FP8 output): a first pass with scale_o = 448 / amax(V) gives amax(O); the second pass runs
    with scale_o = 448 / amax(O), the best a per-tensor output scale can do ("current scaling", as
    cudnn-frontend's own FP8 tests set o_scale from the reference's amax). `details`, a dict, gets amax_s,
    amax_o, scale_o, scales and the amax check."""
    import torch
    att = Fp8Attention(q, k, v, causal=causal, layout=layout, out=out, attn_scale=attn_scale)
    att.run()
    d = {"layout": layout, "out": out, "calibrated": False,
         "amax_q_k_v": [float(a.item()) for a in att.amax_in], "scale_s": E4M3_MAX}
    amax_s, amax_o = att.amax()
    d.update(amax_s=amax_s, amax_o=amax_o, scale_o=float(att.buf["scale_o"].item()))
    if calibrate and out == "fp8":
        scale1 = d["scale_o"]
        seen = float(att.output().abs().max().item())  # from the FP8 output itself: within 1/16 of the truth
        # cudnn-frontend's graph reduces amax_o before scale_o; check the fused engine agrees.
        if seen > 0 and abs(amax_o - seen) <= 0.1 * seen:
            target, how = amax_o, "amax_o (unscaled, matches the output)"
        elif seen > 0 and abs(amax_o / scale1 - seen) <= 0.1 * seen:
            target, how = amax_o / scale1, "amax_o / scale_o (reported after scaling)"
        else:
            target, how = seen * 1.07, f"output max x 1.07 (amax_o {amax_o} matches neither way)"
            print(f"cudnn_fp8: WARNING: amax_o {amax_o} vs output max {seen} at scale_o {scale1}", file=sys.stderr)
        if target > 0:
            att.set_scale_o(E4M3_MAX / target)
            att.run()
            d.update(calibrated=True, amax_o_pass1=amax_o, output_max_pass1=seen, amax_o_used=target,
                     amax_o_source=how, scale_o=float(att.buf["scale_o"].item()))
            d["amax_s"], d["amax_o"] = att.amax()
    o = att.output()
    if not bool(torch.isfinite(o).all()):
        print(f"cudnn_fp8: WARNING: non-finite output ({d})", file=sys.stderr, flush=True)
        d["non_finite"] = True
    if details is not None:
        details.update(d)
    return o
