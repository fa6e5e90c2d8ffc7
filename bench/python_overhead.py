"""What the Python API costs over its kernels and over the C++ launchers (the package's targets: a quantize
call at most 5% over its kernels from 64 MiB up; PagedKVCache.decode at most 10 us over the C++ launch).

  quantize   BF16 -> MXFP8 (last axis) at 64 MiB, 256 MiB, 1 GiB: GPU time a call, back to back (CUDA
             events over 20 calls), of mxattn.quantize (outputs from PyTorch's caching allocator), of the
             C++ launcher alone on preallocated outputs (`_mxattn.ops.quantize`), and of the older
             mxattn.gpu.quantize (cudaMalloc a call and a synchronization for the tensor scale).
  decode     PagedKVCache.decode at the decode benchmark's shape (B = 8, H_q = 32, H_kv = 8, D = 128, page
             64; `mxattn bench attention`): host time a call (200 calls, no synchronization inside) of the
             Python method (allocating its output, and with out= given) against the C++ launcher alone with
             the same arguments, and the GPU time a call.

Usage: python3 bench/python_overhead.py [--json PATH]   (a CUDA build of the module on PYTHONPATH)
"""
import argparse
import json
import time

import torch

import mxattn
from mxattn import _ops


def gpu_ms(fn, calls=20, warmup=3):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def host_us(fn, calls=200, warmup=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def quantize_rows():
    rows = []
    for mib in (64, 256, 1024):
        x = torch.randn(mib * 2**20 // 2 // 4096, 4096, device="cuda", dtype=torch.bfloat16)
        code_shape, scale_bytes = _ops.geometry(tuple(x.shape), "mxfp8", 1, "rowmajor")
        codes = torch.empty(code_shape, dtype=torch.uint8, device="cuda")
        scales = torch.empty((scale_bytes,), dtype=torch.uint8, device="cuda")
        ts = torch.ones(1, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        shape, strides = list(x.shape), list(x.stride())

        def launcher():
            _ops._k.quantize(x.data_ptr(), "bf16", shape, strides, 1, "mxfp8", "rowmajor", codes.data_ptr(),
                             scales.data_ptr(), ts.data_ptr(), False, stream)

        kernel = gpu_ms(launcher)
        api = gpu_ms(lambda: mxattn.quantize(x, "mxfp8"))
        old = gpu_ms(lambda: mxattn.gpu.quantize(x, "mxfp8", stream=stream))
        rows.append(dict(mib=mib, kernel_ms=kernel, api_ms=api, gpu_module_ms=old, overhead=api / kernel - 1))
        print(f"quantize bf16->mxfp8 {mib:5d} MiB: launcher {kernel:.4f} ms, mxattn.quantize {api:.4f} ms "
              f"({100 * (api / kernel - 1):+.1f}%), mxattn.gpu.quantize {old:.4f} ms")
    return rows


def decode_rows():
    rows = []
    B, HQ, HKV, D, PAGE = 8, 32, 8, 128, 64
    for fmt in ("mxfp8", "mxfp4"):
        for seq in (4096, 32768):
            pages = seq // PAGE
            cache = mxattn.PagedKVCache(B * pages, PAGE, HKV, D, fmt)
            block_table = torch.arange(B * pages, dtype=torch.int32, device="cuda").reshape(B, pages)
            seq_lens = torch.full((B,), seq, dtype=torch.int32, device="cuda")
            q = torch.randn(B, 1, HQ, D, device="cuda", dtype=torch.bfloat16)
            ws = cache.workspace(B, seq, 1, HQ)
            out = torch.empty_like(q)
            stream = torch.cuda.current_stream().cuda_stream
            scale = D**-0.5

            def launcher():
                cache._launcher.decode(block_table.data_ptr(), pages, seq_lens.data_ptr(), B, seq, q.data_ptr(), "bf16",
                                       1, HQ, q.stride()[:3], True, scale, out.data_ptr(), "bf16", out.stride()[:3], 0,
                                       ws.data_ptr(), ws.numel(), stream)

            def api():
                cache.decode(q, block_table, seq_lens)

            def api_out():
                cache.decode(q, block_table, seq_lens, out=out)

            host_launcher, host_api, host_out = host_us(launcher), host_us(api), host_us(api_out)
            gpu_launcher, gpu_api = gpu_ms(launcher), gpu_ms(api)
            rows.append(dict(format=fmt, seq=seq, host_launcher_us=host_launcher, host_api_us=host_api,
                             overhead_us=host_api - host_launcher, host_api_out_us=host_out,
                             gpu_launcher_us=1e3 * gpu_launcher, gpu_api_us=1e3 * gpu_api))
            print(f"decode {fmt} S={seq:6d}: host a call: launcher {host_launcher:.1f} us, PagedKVCache.decode "
                  f"{host_api:.1f} us (+{host_api - host_launcher:.1f} us; with out= {host_out:.1f} us); GPU a call "
                  f"{1e3 * gpu_launcher:.1f} / {1e3 * gpu_api:.1f} us")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    result = dict(device=torch.cuda.get_device_name(), quantize=quantize_rows(), decode=decode_rows())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
