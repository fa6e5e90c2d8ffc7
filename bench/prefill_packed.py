#!/usr/bin/env python3
"""A packed batch of prefill sequences of mixed lengths (serving's batched prefill) on the Hopper kernel:
the packed call (cu_seqlens) against one call per sequence and against the batch padded to the longest.
TFLOPS count each sequence's own work (4 S_q S_kv D H, halved when causal); MXFP8 Q, K, V. Each call
allocates its outputs (the binding's cudaMalloc), which the per-sequence calls pay once a sequence.

    PYTHONPATH=python python3 bench/prefill_packed.py     (a CUDA build of python/mxattn, torch)
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from mxattn import _mxattn  # noqa: E402

gpu = _mxattn.gpu
LENGTHS = [16384, 8192, 6144, 4096, 3072, 2048, 1024, 512]  # 40960 tokens
H, D, FMT = 16, 128, "mxfp8"


def timed(fn, runs=10):
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def quantized(x, axis):
    return gpu.quantize(x, FMT, block_axis=axis)


def main():
    torch.manual_seed(0)
    total = sum(LENGTHS)
    cu = [0]
    for n in LENGTHS:
        cu.append(cu[-1] + n)
    x = torch.randn(3, 1, total, H, D, device="cuda", dtype=torch.bfloat16)
    packed = [quantized(x[0], -1), quantized(x[1], -1), quantized(x[2], 1)]
    offsets = torch.tensor(cu, dtype=torch.int32, device="cuda")
    singles = [[quantized(x[i][:, a:b].contiguous(), ax) for i, ax in ((0, -1), (1, -1), (2, 1))]
               for a, b in zip(cu[:-1], cu[1:])]
    longest = max(LENGTHS)
    pad = torch.zeros(3, len(LENGTHS), longest, H, D, device="cuda", dtype=torch.bfloat16)
    for s, (a, b) in enumerate(zip(cu[:-1], cu[1:])):
        pad[:, s, :b - a] = x[:, 0, a:b]
    padded = [quantized(pad[0], -1), quantized(pad[1], -1), quantized(pad[2], 1)]
    print(f"lengths {LENGTHS}, H = {H}, D = {D}, {FMT}, hopper kernel; TFLOPS of each sequence's own work")
    for causal in (False, True):
        flops = sum(4 * n * n * D * H for n in LENGTHS) / (2 if causal else 1)
        runs = {
            "packed (cu_seqlens)": lambda: gpu.attention_prefill(*packed, causal=causal, kernel="hopper",
                                                                 cu_seqlens_q=offsets, cu_seqlens_kv=offsets,
                                                                 max_seqlen_q=longest, max_seqlen_kv=longest),
            "one call a sequence": lambda: [gpu.attention_prefill(*ops, causal=causal, kernel="hopper")
                                            for ops in singles],
            "padded to the longest": lambda: gpu.attention_prefill(*padded, causal=causal, kernel="hopper"),
        }
        for name, fn in runs.items():
            ms = timed(fn)
            print(f"  causal={causal!s:5} {name:22} {ms:8.3f} ms {flops / ms / 1e9:8.1f} TFLOPS")


if __name__ == "__main__":
    main()
