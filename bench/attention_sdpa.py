#!/usr/bin/env python3
"""PyTorch SDPA baselines for `mxattn bench attention`, on the same shapes, BF16, same GPU.

  python3 bench/attention_sdpa.py --json sdpa.json          # time SDPA (flash, cuDNN, efficient backends)
  python3 bench/attention_sdpa.py --table mxattn.json sdpa.json [--merge out.json]
                                                             # print mxattn next to SDPA, keep both as JSON

Timing: CUDA events around each call, warm-up first, median of many runs. Decode KV caches are
replicated so each run reads at least 4x the L2 size from memory.
"""
import argparse
import json
import statistics
import sys

DECODE = dict(batch=8, heads_q=32, heads_kv=8, head_dim=128, lens=[4096, 32768, 131072])
PREFILL = dict(tokens=16384, heads=16, head_dim=128, lens=[1024, 4096, 16384])


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


def run_sdpa(args):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    dev = torch.cuda.get_device_properties(0)
    l2 = getattr(dev, "L2_cache_size", 50 << 20)
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "decode": [], "prefill": []}
    d = DECODE
    for s in d["lens"] if not args.quick else d["lens"][:1]:
        kv_bytes = 2 * d["batch"] * d["heads_kv"] * s * d["head_dim"] * 2
        reps = max(1, -(-4 * l2 // kv_bytes))
        q = torch.randn(d["batch"], d["heads_q"], 1, d["head_dim"], device="cuda", dtype=torch.bfloat16)
        ks = [torch.randn(d["batch"], d["heads_kv"], s, d["head_dim"], device="cuda", dtype=torch.bfloat16) for _ in range(reps)]
        vs = [torch.randn_like(ks[0]) for _ in range(reps)]
        for name, be in backends().items():
            row = {"backend": name, "seq_kv": s, "kv_bytes": kv_bytes, "calls_per_timing": args.calls}
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
    p = PREFILL
    for s in [] if args.decode_only else p["lens"] if not args.quick else p["lens"][:1]:
        b = max(1, p["tokens"] // s)
        q, k, v = (torch.randn(b, p["heads"], s, p["head_dim"], device="cuda", dtype=torch.bfloat16) for _ in range(3))
        for causal in (False, True):
            flops = 4.0 * b * p["heads"] * s * s * p["head_dim"] * (0.5 if causal else 1.0)
            for name, be in backends().items():
                row = {"backend": name, "seq": s, "batch": b, "causal": causal}
                try:
                    with sdpa_kernel([be]):
                        fn = lambda i: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        fn(0)
                        row["ms"] = time_ms(fn, 2, 10)
                    row["tflops"] = flops / (row["ms"] * 1e-3) / 1e12
                except Exception as e:
                    row["error"] = str(e).splitlines()[0][:120]
                print("prefill", row, flush=True)
                out["prefill"].append(row)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


def table(args):
    mx = json.load(open(args.table[0]))
    sd = json.load(open(args.table[1]))
    print(f"\n{mx['device']}  copy bandwidth {mx['copy_bandwidth_gbps']:.0f} GB/s   torch {sd.get('torch', '?')}")
    print("\nDecode B=8 H_q=32 H_kv=8 D=128 (KV bytes/s; speedup = fastest SDPA backend on BF16 KV / mxattn)")
    print(f"{'format':<12}{'S_kv':>8}{'us':>9}{'GB/s':>7}{'%copy':>7}{'best SDPA':>16}{'SDPA us':>9}{'speedup':>9}")
    summary = {"decode": [], "prefill": []}
    for r in mx["decode"]:
        base = [x for x in sd["decode"] if x["seq_kv"] == r["seq_kv"] and "ms" in x]
        best = min(base, key=lambda x: x["ms"]) if base else None
        sp = best["ms"] / r["ms"] if best else float("nan")
        print(f"{r['format']:<12}{r['seq_kv']:>8}{r['ms']*1e3:>9.1f}{r['gbps']:>7.0f}{100*r['fraction_of_copy']:>6.1f}%"
              f"{(best['backend'] if best else '-'):>16}{(best['ms']*1e3 if best else float('nan')):>9.1f}{sp:>8.2f}x")
        summary["decode"].append(dict(r, sdpa_best_backend=best["backend"] if best else None,
                                      sdpa_best_ms=best["ms"] if best else None, speedup_vs_sdpa=sp))
    print("\nPrefill B*S=16k H=16 D=128 (TFLOPS; portable mma.sync kernel, not the fast path)")
    print(f"{'format':<12}{'S':>7}{'causal':>8}{'TFLOPS':>8}{'flash':>8}{'cudnn':>8}{'vs flash':>10}{'vs cudnn':>10}")
    for r in mx["prefill"]:
        def get(name):
            x = [y for y in sd["prefill"] if y["backend"] == name and y["seq"] == r["seq"] and y["causal"] == r["causal"] and "tflops" in y]
            return x[0]["tflops"] if x else float("nan")
        fl, cu = get("flash"), get("cudnn")
        print(f"{r['format']:<12}{r['seq']:>7}{('yes' if r['causal'] else 'no'):>8}{r['tflops']:>8.1f}{fl:>8.1f}{cu:>8.1f}"
              f"{r['tflops']/fl:>9.2f}x{r['tflops']/cu:>9.2f}x")
        summary["prefill"].append(dict(r, sdpa_flash_tflops=fl, sdpa_cudnn_tflops=cu))
    if args.merge:
        with open(args.merge, "w") as f:
            json.dump({"device": mx["device"], "copy_bandwidth_gbps": mx["copy_bandwidth_gbps"], "torch": sd.get("torch"),
                       "mxattn": mx, "sdpa": sd, "summary": summary}, f, indent=1)
        print(f"\nwrote {args.merge}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="time SDPA and write its results here")
    ap.add_argument("--quick", action="store_true", help="the first length only")
    ap.add_argument("--decode-only", action="store_true", help="no prefill baselines")
    ap.add_argument("--calls", type=int, default=8, help="decode calls per timing (mxattn bench attention --decode-calls)")
    ap.add_argument("--table", nargs=2, metavar=("MXATTN_JSON", "SDPA_JSON"))
    ap.add_argument("--merge", help="with --table: write both results and the ratios here")
    args = ap.parse_args()
    if args.table:
        table(args)
    elif args.json:
        run_sdpa(args)
    else:
        ap.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
