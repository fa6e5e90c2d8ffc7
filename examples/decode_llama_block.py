"""A Llama-style attention block generating tokens with an MX-quantized KV cache, beside the same block with
a BF16 cache (plain PyTorch, SDPA).

The block: RMSNorm, Q/K/V projections (random weights, hidden 4096, 32 query heads and 8 KV heads of 128:
GQA 4), rotary embeddings, attention, the output projection and the residual. A batch of sequences takes a
prompt (prefill: SDPA on BF16 for the reference; mxattn.attention over the quantized prompt for the MX
cache, whose K and V go into an mxattn.PagedKVCache), then decodes one token a step for each sequence. Both
caches see the same inputs at every step (the hidden states of a given token stream), so each step's
cosine between the two outputs measures what the quantized cache changes, without compounding.

Prints, per cache format: decode tokens a second (the whole block, eager PyTorch around the kernels), the
cache's memory a sequence, and the agreement with the BF16 cache (cosine of the block's output: mean and worst
step; of the attention output alone: worst step).

Usage: python3 examples/decode_llama_block.py [--batch 8] [--prompt 2048] [--steps 64] [--formats ...]
Runs in well under a minute on an H200.
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F

import mxattn

HIDDEN, HEADS_Q, HEADS_KV, HEAD_DIM = 4096, 32, 8, 128


class Block(torch.nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        w = lambda o, i: torch.nn.Parameter(torch.randn(o, i, generator=g) / math.sqrt(i))  # noqa: E731
        self.wq = w(HEADS_Q * HEAD_DIM, HIDDEN)
        self.wk, self.wv = w(HEADS_KV * HEAD_DIM, HIDDEN), w(HEADS_KV * HEAD_DIM, HIDDEN)
        self.wo = w(HIDDEN, HEADS_Q * HEAD_DIM)
        self.norm = torch.nn.Parameter(torch.ones(HIDDEN))

    def qkv(self, x, positions):
        """x [B, T, hidden] -> q [B, T, H_q, D], k, v [B, T, H_kv, D], rotary embeddings applied."""
        h = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * self.norm
        b, t, _ = x.shape
        q = (h @ self.wq.t()).view(b, t, HEADS_Q, HEAD_DIM)
        k = (h @ self.wk.t()).view(b, t, HEADS_KV, HEAD_DIM)
        v = (h @ self.wv.t()).view(b, t, HEADS_KV, HEAD_DIM)
        return rope(q, positions), rope(k, positions), v

    def out(self, x, attn):
        return x + attn.reshape(*attn.shape[:2], -1) @ self.wo.t()


def rope(x, positions, base=500000.0):
    half = HEAD_DIM // 2
    freq = base ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angle = positions[:, :, None].float() * freq  # [B, T, half]
    cos, sin = angle.cos()[:, :, None], angle.sin()[:, :, None]
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).to(x.dtype)


def run_bf16(block, prompt, tokens):
    """The reference: a dense BF16 cache [B, S, H_kv, D] and SDPA (GQA by enable_gqa)."""
    b, p, _ = prompt.shape
    total = p + tokens.shape[1]
    kc = torch.empty(b, total, HEADS_KV, HEAD_DIM, device=prompt.device, dtype=prompt.dtype)
    vc = torch.empty_like(kc)
    pos = torch.arange(p, device=prompt.device).expand(b, p)
    q, k, v = block.qkv(prompt, pos)
    kc[:, :p], vc[:, :p] = k, v
    attn = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                          enable_gqa=True).transpose(1, 2)
    block.out(prompt, attn)

    def step(i):
        x = tokens[:, i:i + 1]
        q, k, v = block.qkv(x, torch.full((b, 1), p + i, device=x.device))
        kc[:, p + i], vc[:, p + i] = k[:, 0], v[:, 0]
        attn = F.scaled_dot_product_attention(q.transpose(1, 2), kc[:, :p + i + 1].transpose(1, 2),
                                              vc[:, :p + i + 1].transpose(1, 2), enable_gqa=True).transpose(1, 2)
        return block.out(x, attn), attn

    return decode_loop(step, tokens.shape[1]), 2 * kc[0].numel() * kc.element_size()


def run_mx(block, prompt, tokens, k_format, v_format, page_size=64):
    b, p, _ = prompt.shape
    total = p + tokens.shape[1]
    pages = -(-total // page_size)
    cache = mxattn.PagedKVCache(b * pages, page_size, HEADS_KV, HEAD_DIM, k_format, v_format)
    block_table = torch.arange(b * pages, dtype=torch.int32, device=prompt.device).view(b, pages)
    seq_lens = torch.zeros(b, dtype=torch.int32, device=prompt.device)
    pos = torch.arange(p, device=prompt.device).expand(b, p)
    q, k, v = block.qkv(prompt, pos)
    # Prefill over the quantized prompt (Q stays BF16; K and V in the cache's formats), then the prompt's K and V
    # into the pages.
    attn = mxattn.attention(q, k, v, causal=True, formats=(None, k_format, v_format))
    block.out(prompt, attn)
    cache.append(k, v, block_table, seq_lens)
    seq_lens += p

    def step(i):
        x = tokens[:, i:i + 1]
        q, k, v = block.qkv(x, torch.full((b, 1), p + i, device=x.device))
        cache.append(k, v, block_table, seq_lens)
        seq_lens.add_(1)
        attn = cache.decode(q, block_table, seq_lens, max_seq_len=total)
        return block.out(x, attn), attn

    arrays = (cache.k_codes, cache.k_scales, cache.v_codes, cache.v_scales)
    per_seq = sum(t[:pages].numel() * t.element_size() for t in arrays)
    return decode_loop(step, tokens.shape[1]), per_seq * total // (pages * page_size)


def decode_loop(step, steps):
    """Runs the decode steps; returns the block's outputs, the attention outputs and the seconds a step."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    results = [step(i) for i in range(steps)]
    torch.cuda.synchronize()
    return [r[0] for r in results], [r[1] for r in results], (time.perf_counter() - t0) / steps


def cosines(a, b):
    return [F.cosine_similarity(x.float().flatten(), y.float().flatten(), dim=0).item() for x, y in zip(a, b)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--formats", default="mxfp8,mxfp8:mxfp4,mxfp6_e2m3,mxfp4,nvfp4",
                    help="KV cache formats, comma-separated; K's:V's for two")
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    block = Block().to(dev, torch.bfloat16)
    prompt = torch.randn(args.batch, args.prompt, HIDDEN, device=dev, dtype=torch.bfloat16)
    tokens = torch.randn(args.batch, args.steps, HIDDEN, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        run_bf16(block, prompt, tokens)  # warm-up
        (ref, ref_attn, sec), ref_bytes = run_bf16(block, prompt, tokens)
        print(f"{torch.cuda.get_device_name()}: B = {args.batch}, prompt {args.prompt}, {args.steps} decode steps, "
              f"H_q {HEADS_Q} / H_kv {HEADS_KV}, D {HEAD_DIM}")
        print(f"{'cache':<14} {'tokens/s':>9} {'KV MiB/seq':>11} {'x BF16':>7} {'cos mean':>9} {'cos worst':>9} "
              f"{'attn cos worst':>15}")
        print(f"{'bf16 (SDPA)':<14} {args.batch / sec:>9.0f} {ref_bytes / 2**20:>11.1f} {1.0:>7.2f} {1.0:>9.6f} "
              f"{1.0:>9.6f} {1.0:>15.6f}")
        for spec in args.formats.split(","):
            kf, vf = (spec.split(":") + [spec])[:2]
            run_mx(block, prompt, tokens, kf, vf)  # warm-up
            (outs, attn, sec), nbytes = run_mx(block, prompt, tokens, kf, vf)
            c, ca = cosines(outs, ref), cosines(attn, ref_attn)
            print(f"{spec:<14} {args.batch / sec:>9.0f} {nbytes / 2**20:>11.1f} {ref_bytes / nbytes:>7.2f} "
                  f"{sum(c) / len(c):>9.6f} {min(c):>9.6f} {min(ca):>15.6f}")


if __name__ == "__main__":
    main()
