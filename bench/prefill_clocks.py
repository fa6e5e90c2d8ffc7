#!/usr/bin/env python3
"""SM clock and board power while one prefill kernel runs back to back: cuDNN's FP8 attention, cuDNN's BF16
SDPA (PyTorch) and mxattn's Hopper kernel (the `mxattn` CLI), on the benchmark's shape (B*S = 16k tokens,
H = 16, D = 128).

  python3 bench/prefill_clocks.py --mxattn build/mxattn [--lens 1024,4096,16384] [--causal no,yes] [--rounds 2]

nvidia-smi samples the clock and the power every 50 ms while each kernel runs for a few seconds; a line per
kernel gives the medians of the steady part and the kernel's TFLOPS, and TFLOPS per GHz (the work a clock
cycle does, which the clock the power limit allows does not change). A GPU at its power limit lowers its clock:
two kernels that spend the same energy per FLOP then run at the same speed, whatever their cycles per tile.
Needs torch, nvidia-cudnn-frontend (bench/cudnn_fp8.py) and nvidia-smi.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TOKENS, HEADS, HEAD_DIM = 16384, 16, 128


def sample(tag, run, secs):
    """Runs run(secs) under nvidia-smi sampling; prints the steady part's medians."""
    log = f"/tmp/prefill_clocks_{os.getpid()}.csv"
    with open(log, "w") as out:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                                "--format=csv,noheader,nounits", "-lms", "50"], stdout=out)
        time.sleep(0.5)
        tflops = run(secs)
        smi.terminate()
        smi.wait()
    rows = [[float(x) for x in line.split(",")] for line in open(log) if line.strip()]
    os.remove(log)
    rows = rows[len(rows) // 4:len(rows) - max(1, len(rows) // 8)]  # the steady part: past the start, before the end
    clock = statistics.median(r[0] for r in rows)
    power = statistics.median(r[1] for r in rows)
    print(f"{tag:34s} {clock:6.0f} MHz {power:6.1f} W {max(r[2] for r in rows):3.0f} C {tflops:7.1f} TFLOPS "
          f"{tflops / clock * 1000:6.1f} TFLOPS/GHz  ({len(rows)} samples)", flush=True)
    time.sleep(2)  # let the board settle between kernels


def looped(call, flop, secs):
    """TFLOPS of call() run back to back for about secs seconds."""
    import torch
    call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    stop, n = time.time() + secs, 0
    start.record()
    while time.time() < stop:
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        n += 20
    end.record()
    torch.cuda.synchronize()
    return flop / (start.elapsed_time(end) / n * 1e-3) / 1e12


def mxattn_run(binary, fmt, seq, causal):
    """The CLI's benchmark of the Hopper kernel alone at one length and mask; runs chosen for ~4 s."""
    def run(secs):
        # Two rows (the length, then the same shape as --prefill-shapes), secs / 2 each; prefill times a
        # third of --runs. A call's time, roughly: 2.6 ms at 16k non-causal, linear in S.
        call_s = (0.0026 * seq / 16384 + 0.0002) / (2 if causal else 1)
        out = subprocess.run([binary, "bench", "attention", "--prefill-only", "--prefill-kernels", "hopper",
                              "--prefill-q", "mx", "--prefill-formats", fmt, "--prefill-lens", str(seq),
                              "--prefill-causal", "yes" if causal else "no", "--prefill-shapes", "16/16/128",
                              "--runs", str(int(3 * secs / 2 / call_s))], capture_output=True, text=True, check=True)
        rows = [line.split() for line in out.stdout.splitlines() if line.startswith(fmt + " ") and "hopper" in line]
        return statistics.median(float(r[-1]) for r in rows)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mxattn", required=True, help="the mxattn CLI")
    ap.add_argument("--formats", default="mxfp8")
    ap.add_argument("--lens", default="16384")
    ap.add_argument("--causal", default="no")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import cudnn_fp8
    for seq in [int(s) for s in a.lens.split(",")]:
        for causal in [c == "yes" for c in a.causal.split(",")]:
            b = TOKENS // seq
            q = torch.randn(b, HEADS, seq, HEAD_DIM, device="cuda", dtype=torch.bfloat16)
            k, v = torch.randn_like(q), torch.randn_like(q)
            flop = 4 * b * HEADS * seq * seq * HEAD_DIM / (2 if causal else 1)
            fp8 = cudnn_fp8.Fp8Attention(q, k, v, causal=causal)

            def bf16():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            where = f"S={seq} {'causal' if causal else 'non-causal'}"
            for _ in range(a.rounds):
                sample(f"cudnn fp8   {where}", lambda s: looped(fp8.run, flop, s), a.seconds)
                sample(f"cudnn bf16  {where}", lambda s: looped(bf16, flop, s), a.seconds)
                for fmt in a.formats.split(","):
                    sample(f"mxattn {fmt:5s}{where}", mxattn_run(a.mxattn, fmt, seq, causal), a.seconds)
            del fp8, q, k, v
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
