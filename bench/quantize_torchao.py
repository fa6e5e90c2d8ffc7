"""mxattn's quantization against torchao's, on the same BF16 tensors, in the same run (the issue's
"what users run today"): torchao 0.18's `to_mx` (MXFP8 E4M3, MXFP6 E2M3, MXFP4; RCEIL scales, as mxattn's
default) and `nvfp4_quantize` (NVFP4 with a per-tensor scale), eager and under torch.compile, against
`mxattn.quantize` with the same format (row-major scales, as torchao writes them; blocks along the last
axis). Each time is the GPU time a call, back to back (CUDA events over --calls calls),
and is also given as % of a same-size device copy (input read + codes and scales written, as
`mxattn bench quantize` counts bytes).

Usage: python3 bench/quantize_torchao.py [--mib 1024] [--json PATH]
       (torchao 0.18.0 and a CUDA build of mxattn on PYTHONPATH)
"""
import argparse
import json

import torch

import mxattn
from python_overhead import gpu_ms  # (bench/ is the script's directory: on sys.path)


def copy_gbps(nbytes, calls):
    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    ms = gpu_ms(lambda: dst.copy_(src), calls=calls)
    return 2 * nbytes / (ms * 1e-3) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=float, default=1024, help="BF16 input size in MiB (default 1024)")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--json", help="also write the rows as JSON")
    args = ap.parse_args()

    import torchao
    from torchao.prototype.mx_formats.mx_tensor import ScaleCalculationMode, to_mx
    from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale

    torch.manual_seed(0)
    d = 128
    rows = int(args.mib * 2**20) // 2 // d
    x = torch.randn(rows, d, device="cuda", dtype=torch.bfloat16)
    in_bytes = x.numel() * 2
    copy = copy_gbps(in_bytes, args.calls)
    print(f"torchao {torchao.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"input BF16 [{rows}, {d}] ({args.mib:.0f} MiB); copy of that size {copy:.0f} GB/s")

    pts = per_tensor_amax_to_scale(x.abs().max().float())  # torchao's NVFP4 per-tensor scale
    s_enc = float(1.0 / pts)  # the same scale as mxattn's S_enc (codes = x * S_enc / s)
    cases = [
        # (name, mxattn format, code bits, torchao eager fn)
        ("mxfp8", "mxfp8", 8, lambda t: to_mx(t, torch.float8_e4m3fn, 32, ScaleCalculationMode.RCEIL)),
        ("mxfp6_e2m3", "mxfp6_e2m3", 6, lambda t: to_mx(t, "fp6_e2m3", 32, ScaleCalculationMode.RCEIL)),
        ("mxfp4", "mxfp4", 4, lambda t: to_mx(t, torch.float4_e2m1fn_x2, 32, ScaleCalculationMode.RCEIL)),
        ("nvfp4", "nvfp4", 4, lambda t: nvfp4_quantize(t, 16, pts)),
    ]
    results = []
    header = f"{'format':<11} {'mxattn ms':>9} {'% copy':>7} {'torchao compiled':>17} {'eager':>9}  mxattn speedup (compiled / eager)"
    print(header)
    for name, fmt, bits, eager in cases:
        block = 16 if fmt == "nvfp4" else 32
        out_bytes = x.numel() * bits // 8 + x.numel() // block
        total = in_bytes + out_bytes
        ts = s_enc if fmt == "nvfp4" else None
        t_mx = gpu_ms(lambda: mxattn.quantize(x, fmt, tensor_scale=ts), calls=args.calls)
        row = {"format": fmt, "mib": args.mib, "bytes": total, "mxattn_ms": t_mx,
               "mxattn_pct_of_copy": 100 * total / (t_mx * 1e-3) / 1e9 / copy}
        for mode, fn in (("compiled", torch.compile(eager)), ("eager", eager)):
            try:
                row[f"torchao_{mode}_ms"] = gpu_ms(lambda: fn(x), calls=args.calls)
            except Exception as e:  # report, do not hide: a missing backend (Triton) shows here
                row[f"torchao_{mode}_ms"] = None
                row[f"torchao_{mode}_error"] = f"{type(e).__name__}: {e}"[:200]
        comp, eag = row["torchao_compiled_ms"], row["torchao_eager_ms"]
        fmt_ms = lambda v: f"{v:.3f}" if v is not None else "failed"
        ratio = lambda v: f"{v / t_mx:.2f}x" if v is not None else "-"
        print(f"{fmt:<11} {t_mx:9.3f} {row['mxattn_pct_of_copy']:6.1f}% {fmt_ms(comp):>17} {fmt_ms(eag):>9}  "
              f"{ratio(comp)} / {ratio(eag)}")
        for mode in ("compiled", "eager"):
            if f"torchao_{mode}_error" in row:
                print(f"  torchao {mode}: {row[f'torchao_{mode}_error']}")
        results.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torchao": torchao.__version__,
                       "torch": torch.__version__, "copy_gbps": copy, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
