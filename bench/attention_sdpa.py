#!/usr/bin/env python3
"""PyTorch SDPA baselines for `mxattn bench attention`, on the same shapes, BF16, same GPU; for prefill also
cuDNN's FP8 attention (E4M3 Q/K/V/O, per-tensor scales; bench/cudnn_fp8.py, cudnn-frontend's sdpa_fp8).

  python3 bench/attention_sdpa.py --json sdpa.json          # time SDPA (flash, cuDNN, efficient backends)
                                                             # and cuDNN FP8 on the prefill shapes
  python3 bench/attention_sdpa.py --json acc.json --fp8-accuracy --no-timing
                                                             # cuDNN FP8 and mxattn MX vs FP64 attention,
                                                             # N(0,1) and K outliers
  python3 bench/attention_sdpa.py --table mxattn.json sdpa.json [--merge out.json]
                                                             # print mxattn next to SDPA, keep both as JSON

Timing: CUDA events around each call, warm-up first, median of many runs. Decode KV caches are
replicated so each run reads at least 4x the L2 size from memory. cuDNN FP8 is timed on Q/K/V already
quantized (per tensor, amax/448), output in E4M3; without cudnn-frontend (pip nvidia-cudnn-frontend) or
on a GPU before sm90 its rows are skipped with the reason, the rest runs as before.
"""
import argparse
import json
import math
import os
import statistics
import sys

DECODE = dict(batch=8, heads_q=32, heads_kv=8, head_dim=128, lens=[4096, 32768, 131072], dims=[64, 256],
              serving_batch=32)


def serving_lens(batch):
    """The decode serving batch's lengths, as apps/commands.h serving_lens: a fixed integer hash over [1024, 65536),
    multiples of 16."""
    return [(1024 + (((i + 1) * 2654435761 & 0xFFFFFFFF) * 64512 >> 32)) // 16 * 16 for i in range(batch)]
PREFILL = dict(tokens=16384, heads=16, head_dim=128, lens=[1024, 4096, 16384])
# More prefill shapes H_q/H_kv/D (`mxattn bench attention --prefill-shapes`, the same default).
PREFILL_SHAPES = "16/16/64,16/16/256,32/4/128"
# --fp8-accuracy: one head group, BF16 inputs N(0,1); the second case multiplies a few K channels by 50.
ACCURACY = dict(batch=1, seq=2048, heads=8, head_dim=128, seed=1234, outlier_channels=4, outlier_scale=50.0,
                cases=["normal", "k_outliers"], causal=[False, True])


def time_ms(fn, warmup=5, runs=30, calls=1):
    """Median ms per call; each timing spans `calls` back-to-back calls, as `mxattn bench attention`."""
    import torch
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    times, n = [], warmup
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn(n)
            n += 1
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    return statistics.median(times)


def backends():
    from torch.nn.attention import SDPBackend
    return {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def fp8_module():
    """bench/cudnn_fp8.py (imports nothing heavy until used)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import cudnn_fp8
    return cudnn_fp8


def load_fp8(args, out):
    """The cudnn_fp8 module if cuDNN FP8 attention can run here, else None; out["cudnn_fp8"] says which."""
    if args.no_cudnn_fp8:
        out["cudnn_fp8"] = {"status": "skipped", "reason": "--no-cudnn-fp8"}
        return None
    try:
        m = fp8_module()
        m.load()
        out["cudnn_fp8"] = dict(status="ok", layout=args.fp8_layout, out=args.fp8_out, **m.info())
        return m
    except Exception as e:  # Unavailable, or anything unexpected from an untested install
        reason = str(e) if type(e).__name__ == "Unavailable" else f"{type(e).__name__}: {e}"
        print(f"cudnn_fp8: skipped: {reason}", flush=True)
        out["cudnn_fp8"] = {"status": "skipped", "reason": reason}
        return None


def mxattn_gpu():
    """mxattn's GPU bindings (python/ of this checkout, built with CUDA), or None."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        from mxattn import _mxattn
        return getattr(_mxattn, "gpu", None)
    except ImportError:
        return None


def mxattn_methods(gpu, q, k, v, causal):
    """mxattn's rows of the accuracy table on q, k, v [B, H, S, D] (BF16): MXFP8 (and MXFP4) quantized on the
    GPU (q, k along D, v along S), attention by the Hopper kernel and by the portable one, and the
    quantization alone (FP64 attention of the dequantized inputs). Each returns float32 [B, H, S, D]."""
    import torch

    def quantized(fmt):
        qs, ks, vs = (x.transpose(1, 2) for x in (q, k, v))  # [B, S, H, D] views
        return qs, ks, vs, (gpu.quantize(qs, fmt, block_axis=-1), gpu.quantize(ks, fmt, block_axis=-1),
                            gpu.quantize(vs, fmt, block_axis=1))

    def attention(fmt, kernel):
        _, _, _, (qq, kq, vq) = quantized(fmt)
        o, _ = gpu.attention_prefill(qq, kq, vq, fmt, fmt, fmt, causal=causal, kernel=kernel, framework="torch")
        return o.transpose(1, 2).float()

    def quantization_only(fmt):
        qs, ks, vs, ops = quantized(fmt)
        deq = [torch.from_dlpack(gpu.dequantize(c, sc, ts, list(x.shape), fmt, block_axis=ax, framework="torch"))
               for (c, sc, ts), x, ax in zip(ops, (qs, ks, vs), (-1, -1, 1))]
        return attention_fp64(*(x.transpose(1, 2) for x in deq), causal).float()

    return [("mxfp8_quant_fp64", lambda: quantization_only("mxfp8")),
            ("mxfp8_hopper", lambda: attention("mxfp8", "hopper")),
            ("mxfp8_hopper_exact", lambda: attention("mxfp8", "hopper-exact")),
            ("mxfp8_portable", lambda: attention("mxfp8", "portable")),
            ("mxfp4_hopper", lambda: attention("mxfp4", "hopper"))]


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float((a @ b) / (a.norm() * b.norm()))


def run_sdpa(args):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    dev = torch.cuda.get_device_properties(0)
    l2 = getattr(dev, "L2_cache_size", 50 << 20)
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "decode": [], "prefill": []}
    d = DECODE
    timing = not args.no_timing and not args.prefill_only
    for hd in [d["head_dim"]] + d["dims"] if timing else []:
        for s in d["lens"] if not args.quick else d["lens"][:1]:
            kv_bytes = 2 * d["batch"] * d["heads_kv"] * s * hd * 2
            reps = max(1, -(-4 * l2 // kv_bytes))
            q = torch.randn(d["batch"], d["heads_q"], 1, hd, device="cuda", dtype=torch.bfloat16)
            ks = [torch.randn(d["batch"], d["heads_kv"], s, hd, device="cuda", dtype=torch.bfloat16) for _ in range(reps)]
            vs = [torch.randn_like(ks[0]) for _ in range(reps)]
            for name, be in backends().items():
                row = {"backend": name, "workload": "uniform", "batch": d["batch"], "head_dim": hd, "seq_kv": s,
                       "kv_bytes": kv_bytes, "calls_per_timing": args.calls}
                try:
                    with sdpa_kernel([be]):
                        fn = lambda i: F.scaled_dot_product_attention(q, ks[i % reps], vs[i % reps], enable_gqa=True)
                        fn(0)
                        row["ms"] = time_ms(fn, calls=args.calls)
                    row["gbps"] = kv_bytes / (row["ms"] * 1e-3) / 1e9
                except Exception as e:  # a backend that does not take this shape
                    row["error"] = str(e).splitlines()[0][:120]
                print("decode ", row, flush=True)
                out["decode"].append(row)
            del ks, vs
            torch.cuda.empty_cache()
    if timing and d["serving_batch"] > 0 and not args.quick:
        out["decode"] += decode_serving(args, d)
    p = PREFILL
    lens = [] if args.decode_only or args.no_timing else p["lens"] if not args.quick else p["lens"][:1]
    fp8 = load_fp8(args, out) if lens else None
    shapes = [(p["heads"], p["heads"], p["head_dim"])] + [prefill_shape(x) for x in args.prefill_shapes.split(",") if x]
    for hq, hk, d in shapes:
        for s in lens:
            b = max(1, p["tokens"] // s)
            q = torch.randn(b, hq, s, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            shape = {"heads": hq, "heads_kv": hk, "head_dim": d}
            for causal in (False, True):
                flops = 4.0 * b * hq * s * s * d * (0.5 if causal else 1.0)
                for name, be in backends().items():
                    row = {"backend": name, "seq": s, "batch": b, "causal": causal, **shape}
                    try:
                        with sdpa_kernel([be]):
                            fn = lambda i: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=hk != hq)
                            fn(0)
                            row["ms"] = time_ms(fn, 2, 10)
                        row["tflops"] = flops / (row["ms"] * 1e-3) / 1e12
                    except Exception as e:
                        row["error"] = str(e).splitlines()[0][:120]
                    print("prefill", row, flush=True)
                    out["prefill"].append(row)
                if fp8 is not None:
                    # cuDNN FP8 here takes one head count: GQA's K and V repeated to H_q heads (the same FLOPs).
                    kk, vv = (x.repeat_interleave(hq // hk, dim=1) for x in (k, v)) if hk != hq else (k, v)
                    row = prefill_fp8(fp8, args, q, kk, vv, causal, flops)
                    out["prefill"].append(dict(row, **shape, kv_repeated=hk != hq))
            del q, k, v
            torch.cuda.empty_cache()
    if args.fp8_accuracy:
        out["fp8_accuracy"] = fp8_accuracy(args, out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")


def decode_serving(args, d):
    """SDPA on the serving batch (BF16 K, V of each sequence's length, D = 128): one call a sequence (each its
    own length), or one call over the batch padded to the longest with a mask of the keys past each length;
    every backend that takes either."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    lens, hd, rows = serving_lens(d["serving_batch"]), d["head_dim"], []
    b, smax = len(lens), max(lens)
    kv_bytes = 2 * d["heads_kv"] * sum(lens) * hd * 2
    q = torch.randn(b, d["heads_q"], 1, hd, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, d["heads_kv"], smax, hd, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    mask = (torch.arange(smax, device="cuda")[None, :] < torch.tensor(lens, device="cuda")[:, None])[:, None, None, :]
    seqs = [(q[i:i + 1], k[i:i + 1, :, :n], v[i:i + 1, :, :n]) for i, n in enumerate(lens)]
    strategies = {
        "per sequence": lambda i: [F.scaled_dot_product_attention(*x, enable_gqa=True) for x in seqs],
        "padded": lambda i: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True),
    }
    for name, be in backends().items():
        for strategy, fn in strategies.items():
            row = {"backend": name, "strategy": strategy, "workload": "serving", "batch": b, "head_dim": hd,
                   "seq_kv": 0, "lens": lens, "kv_bytes": kv_bytes, "calls_per_timing": args.calls}
            try:
                with sdpa_kernel([be]):
                    fn(0)
                    row["ms"] = time_ms(fn, calls=args.calls)
                row["gbps"] = kv_bytes / (row["ms"] * 1e-3) / 1e9
            except Exception as e:
                row["error"] = str(e).splitlines()[0][:120]
            print("decode ", {x: y for x, y in row.items() if x != "lens"}, flush=True)
            rows.append(row)
    del q, k, v, seqs
    torch.cuda.empty_cache()
    return rows


def row_shape(r):
    """A prefill row's (H_q, H_kv, D); rows from before the shapes were recorded are 16/16/128."""
    hq = r.get("heads", 16)
    return hq, r.get("heads_kv", hq), r.get("head_dim", 128)


def prefill_shape(text):
    """'H_q/H_kv/D' -> (H_q, H_kv, D)."""
    hq, hk, d = (int(x) for x in text.split("/"))
    if hq % hk or d not in (64, 128, 256):
        raise ValueError(f"prefill shape {text!r}: H_kv must divide H_q, D be 64, 128 or 256")
    return hq, hk, d


def prefill_fp8(fp8, args, q, k, v, causal, flops):
    """One cuDNN FP8 row: quantize (not timed), build the graph for this shape, check it against BF16 SDPA
    once, time graph execution like the BF16 rows."""
    import torch
    import torch.nn.functional as F
    b, h, s, d = q.shape
    row = {"backend": "cudnn_fp8", "seq": s, "batch": b, "causal": causal, "layout": args.fp8_layout,
           "out": args.fp8_out}
    try:
        att = fp8.Fp8Attention(q, k, v, causal=causal, layout=args.fp8_layout, out=args.fp8_out)
        att.run()
        torch.cuda.synchronize()
        # Sanity, once per shape: the dequantized FP8 output against BF16 SDPA on the same inputs.
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
        row["cos_vs_bf16_sdpa"] = cosine(att.output(), ref)
        row["amax_s"], row["amax_o"] = att.amax()
        del ref
        if not row["cos_vs_bf16_sdpa"] > 0.99:
            print(f"cudnn_fp8: WARNING: B={b} S={s} causal={causal}: cosine vs BF16 SDPA "
                  f"{row['cos_vs_bf16_sdpa']:.4f} (layout, mask or scales wrong?)", flush=True)
        row["ms"] = time_ms(lambda i: att.run(), 2, 10)
        row["tflops"] = flops / (row["ms"] * 1e-3) / 1e12
        del att
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    print("prefill", row, flush=True)
    return row


def accuracy_inputs(case, a=ACCURACY, device="cuda"):
    """The --fp8-accuracy inputs, drawn on the CPU from a fixed seed (the same on any GPU): BF16 q, k, v
    [B, H, S, D] ~ N(0, 1); case 'k_outliers' multiplies `outlier_channels` channels of K (the same in every
    head and position, picked by the seed) by `outlier_scale`. Returns (q, k, v, channels)."""
    import torch
    g = torch.Generator().manual_seed(a["seed"])
    shape = (a["batch"], a["heads"], a["seq"], a["head_dim"])
    q, k, v = (torch.randn(shape, generator=g, dtype=torch.float32) for _ in range(3))
    chans = []
    if case == "k_outliers":
        chans = sorted(torch.randperm(a["head_dim"], generator=g)[:a["outlier_channels"]].tolist())
        k[..., chans] *= a["outlier_scale"]
    elif case != "normal":
        raise ValueError(f"accuracy case {case!r}")
    return (*(x.to(device=device, dtype=torch.bfloat16) for x in (q, k, v)), chans)


def attention_fp64(q, k, v, causal):
    """softmax(q k^T / sqrt(D)) v in float64 on q's device, of the given (unquantized) inputs."""
    import torch
    qd, kd, vd = (x.double() for x in (q, k, v))
    sc = (qd @ kd.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if causal:
        s_q, s_kv = sc.shape[-2:]
        sc.masked_fill_(torch.ones(s_q, s_kv, dtype=torch.bool, device=sc.device).triu(1), float("-inf"))
    return torch.softmax(sc, dim=-1) @ vd


def error_metrics(o, ref):
    """cosine, rel-L2 (||o - ref|| / ||ref||) and max |o - ref| of an output against the FP64 reference."""
    o, ref = o.double().flatten(), ref.double().flatten()
    return {"cos": float((o @ ref) / (o.norm() * ref.norm())), "rel_l2": float((o - ref).norm() / ref.norm()),
            "max_abs": float((o - ref).abs().max())}


def fp8_accuracy(args, out):
    """cuDNN FP8 (per-tensor E4M3) and BF16 SDPA against FP64 attention of the same BF16 inputs."""
    import torch
    import torch.nn.functional as F
    a = ACCURACY
    fp8 = load_fp8(args, out) if "cudnn_fp8" not in out or out["cudnn_fp8"]["status"] == "ok" else None
    gpu = mxattn_gpu()
    res = {"config": dict(a), "reference": "float64 softmax(q k^T / sqrt(D)) v (torch, GPU) of the BF16 inputs",
           "rows": []}
    for case in a["cases"]:
        q, k, v, chans = accuracy_inputs(case)
        if chans:
            res.setdefault("outlier_channels", {})[case] = chans
        for causal in a["causal"]:
            ref = attention_fp64(q, k, v, causal)
            methods = [("bf16_sdpa", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal).float())]
            if fp8 is not None:
                det = {}
                methods.append(("cudnn_fp8", lambda: fp8.sdpa_fp8(q, k, v, causal=causal, layout=args.fp8_layout,
                                                                  out=args.fp8_out, details=det)))
            if gpu is not None:
                methods += mxattn_methods(gpu, q, k, v, causal)
            for name, fn in methods:
                row = {"case": case, "causal": causal, "method": name}
                try:
                    row.update(error_metrics(fn(), ref))
                    if name == "cudnn_fp8":
                        row["details"] = det
                except Exception as e:
                    row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
                print("accuracy", {x: y for x, y in row.items() if x != "details"}, flush=True)
                res["rows"].append(row)
            del ref
    if fp8 is None:
        res["cudnn_fp8"] = out.get("cudnn_fp8")
    if gpu is None:
        res["mxattn"] = "skipped: python/mxattn not built with CUDA"
    return res


def num(x, width, prec, suffix=""):
    """x right-aligned in width (suffix included), '-' when missing or not finite."""
    if x is None or not math.isfinite(x):
        return f"{'-':>{width}}"
    return f"{x:>{width - len(suffix)}.{prec}f}{suffix}"


def table(args):
    mx = json.load(open(args.table[0]))
    sd = json.load(open(args.table[1]))
    mx, sd = mx.get("mxattn", mx), sd.get("sdpa", sd)  # merged files (bench/results/*.json) work as inputs too
    print(f"\n{mx['device']}  copy bandwidth {mx['copy_bandwidth_gbps']:.0f} GB/s   torch {sd.get('torch', '?')}")
    print("\nDecode H_q=32 H_kv=8 q_len=1: B=8 of S_kv, or the serving batch (B=32, 1k-64k); KV bytes/s; speedup ="
          " fastest SDPA backend on BF16 KV / mxattn; limit = BF16 KV bytes / the format's")
    print(f"{'format (K:V)':<18}{'D':>4}{'S_kv':>8}{'us':>9}{'GB/s':>7}{'%copy':>7}{'best SDPA':>28}{'SDPA us':>9}"
          f"{'speedup':>9}{'limit':>7}")
    summary = {"decode": [], "prefill": []}
    for r in mx["decode"]:
        work, hd = r.get("workload", "uniform"), r.get("head_dim", 128)
        base = [x for x in sd.get("decode", []) if x.get("workload", "uniform") == work and x.get("head_dim", 128) == hd
                and x["seq_kv"] == r["seq_kv"] and "ms" in x]
        best = min(base, key=lambda x: x["ms"]) if base else None
        sp = best["ms"] / r["ms"] if best else float("nan")
        limit = best["kv_bytes"] / r["kv_bytes"] if best else float("nan")
        who = (best["backend"] + (f" ({best['strategy']})" if "strategy" in best else "")) if best else "-"
        seq = "1k-64k" if work == "serving" else str(r["seq_kv"])
        print(f"{r['format']:<18}{hd:>4}{seq:>8}{r['ms']*1e3:>9.1f}{r['gbps']:>7.0f}{100*r['fraction_of_copy']:>6.1f}%"
              f"{who:>28}{(best['ms']*1e3 if best else float('nan')):>9.1f}{sp:>8.2f}x{limit:>6.2f}x")
        summary["decode"].append(dict(r, sdpa_best_backend=who if best else None,
                                      sdpa_best_ms=best["ms"] if best else None, speedup_vs_sdpa=sp,
                                      speedup_limit=limit))
    fp8_state = sd.get("cudnn_fp8", {})
    print("\nPrefill B*S=16k, shape H_q/H_kv/D (TFLOPS; kernel: portable mma.sync, hopper wgmma FP8, "
          "hopper-exact wgmma with P V in BF16)")
    print("  FP8 = cuDNN FP8 attention (E4M3 Q/K/V/O, per-tensor scales), cudnn/flash = SDPA on BF16; "
          "vs X = mxattn TFLOPS / X TFLOPS")
    if fp8_state.get("status") == "skipped":
        print(f"  cuDNN FP8 skipped: {fp8_state.get('reason')}")
    elif fp8_state.get("status") == "ok":
        print(f"  cuDNN FP8: cudnn-frontend {fp8_state.get('frontend')}, cuDNN {fp8_state.get('backend')}, "
              f"layout {fp8_state.get('layout')}, output {fp8_state.get('out')}")
    print(f"{'format':<12}{'shape':>10}{'S':>7}{'causal':>8}{'kernel':>14}{'mxattn':>8}{'FP8':>8}{'cudnn':>8}{'flash':>8}"
          f"{'vs FP8':>9}{'vs cudnn':>10}{'vs flash':>10}")
    for r in mx["prefill"]:
        shape = row_shape(r)

        def get(name):
            x = [y for y in sd.get("prefill", []) if y["backend"] == name and y["seq"] == r["seq"]
                 and y["causal"] == r["causal"] and row_shape(y) == shape and "tflops" in y]
            return x[0]["tflops"] if x else float("nan")
        f8, fl, cu = get("cudnn_fp8"), get("flash"), get("cudnn")
        print(f"{r['format']:<12}{'/'.join(map(str, shape)):>10}{r['seq']:>7}{('yes' if r['causal'] else 'no'):>8}"
              f"{r.get('kernel', 'portable'):>14}"
              f"{num(r['tflops'], 8, 1)}"
              f"{num(f8, 8, 1)}{num(cu, 8, 1)}{num(fl, 8, 1)}"
              f"{num(r['tflops'] / f8, 8, 2, 'x')}{num(r['tflops'] / cu, 9, 2, 'x')}{num(r['tflops'] / fl, 9, 2, 'x')}")
        summary["prefill"].append(dict(r, sdpa_flash_tflops=fl, sdpa_cudnn_tflops=cu, cudnn_fp8_tflops=f8,
                                       vs_cudnn_fp8=r["tflops"] / f8))
    acc = sd.get("fp8_accuracy")
    if acc:
        c = acc["config"]
        print(f"\nAccuracy vs FP64 attention of the BF16 inputs (B={c['batch']} S={c['seq']} H={c['heads']} "
              f"D={c['head_dim']}; k_outliers: {c['outlier_channels']} K channels x{c['outlier_scale']:g}, "
              f"channels {acc.get('outlier_channels', {}).get('k_outliers', '?')})")
        print(f"{'case':<12}{'causal':>8}{'method':>20}{'cos':>12}{'rel-L2':>10}{'max abs':>10}")
        for r in acc["rows"]:
            if "error" in r:
                print(f"{r['case']:<12}{('yes' if r['causal'] else 'no'):>8}{r['method']:>20}  error: {r['error']}")
                continue
            print(f"{r['case']:<12}{('yes' if r['causal'] else 'no'):>8}{r['method']:>20}{r['cos']:>12.6f}"
                  f"{r['rel_l2']:>10.4f}{r['max_abs']:>10.4f}")
    if args.merge:
        with open(args.merge, "w") as f:
            json.dump({"device": mx["device"], "copy_bandwidth_gbps": mx["copy_bandwidth_gbps"], "torch": sd.get("torch"),
                       "mxattn": mx, "sdpa": sd, "summary": summary}, f, indent=1)
        print(f"\nwrote {args.merge}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="time SDPA (and cuDNN FP8 on the prefill shapes) and write the results here")
    ap.add_argument("--quick", action="store_true", help="the first length only")
    ap.add_argument("--prefill-shapes", default=PREFILL_SHAPES,
                    help="more prefill shapes H_q/H_kv/D, comma-separated (default %(default)s)")
    ap.add_argument("--decode-only", action="store_true", help="no prefill baselines")
    ap.add_argument("--prefill-only", action="store_true", help="no decode baselines")
    ap.add_argument("--no-timing", action="store_true", help="no decode/prefill timing (with --fp8-accuracy)")
    ap.add_argument("--no-cudnn-fp8", action="store_true", help="no cuDNN FP8 baseline")
    ap.add_argument("--fp8-layout", choices=["bshd", "bhsd"], default="bshd",
                    help="storage order of cuDNN FP8's Q/K/V/O (default bshd, as cudnn-frontend's samples)")
    ap.add_argument("--fp8-out", choices=["fp8", "bf16"], default="fp8",
                    help="cuDNN FP8 output type (bf16 needs Blackwell and cuDNN >= 9.13; Hopper writes FP8)")
    ap.add_argument("--fp8-accuracy", action="store_true",
                    help="cuDNN FP8 and BF16 SDPA vs FP64 attention, N(0,1) inputs and K with outlier channels")
    ap.add_argument("--calls", type=int, default=8, help="decode calls per timing (mxattn bench attention --decode-calls)")
    ap.add_argument("--table", nargs=2, metavar=("MXATTN_JSON", "SDPA_JSON"))
    ap.add_argument("--merge", help="with --table: write both results and the ratios here")
    args = ap.parse_args()
    if args.table:
        table(args)
    elif args.json or args.fp8_accuracy:
        run_sdpa(args)
    else:
        ap.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
