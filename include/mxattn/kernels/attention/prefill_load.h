// Global -> shared tile loads of the prefill kernel, dequantizing MX codes to BF16 on the way
// (DESIGN.md §3: once per tile, never inside the MMA loop).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/kernels/attention/prefill_traits.h"

namespace mxattn::kernels {

__device__ __forceinline__ void store16(__nv_bfloat16* dst, const uint32_t (&v)[8]) {
  uint4* d = reinterpret_cast<uint4*>(dst);
  d[0] = make_uint4(v[0], v[1], v[2], v[3]);
  d[1] = make_uint4(v[4], v[5], v[6], v[7]);
}

// Chunk of 16 elements starting at column c0 of an MX row with `cols` columns.
__device__ __forceinline__ void decode_mx_chunk(const MxRows& t, const ElementTable& tab, const uint8_t* codes,
                                                const uint8_t* scales, int c0, int cols, bool vector,
                                                uint32_t (&out)[8]) {
  const int bits = t.format.elem.bits, k = t.format.block;
  const int valid = cols - c0 < 16 ? cols - c0 : 16;
  if (valid <= 0) {
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = 0;
    return;
  }
  const int byte0 = c0 * bits / 8;  // c0 is a multiple of 16: whole bytes
  const int row_bytes = (cols * bits + 7) / 8;
  uint32_t w[4];
  load_codes16(bits, codes + byte0, vector && valid == 16, row_bytes - byte0, w);
  const float s0 = tab.scale[scales[c0 / k]];
  const float s1 = valid > 8 ? tab.scale[scales[(c0 + 8) / k]] : s0;
  decode16(bits, w, tab, s0, s1, valid, out);
}

// Q rows m0.. of sequence sp, head h: dense BF16/FP16 (converted to BF16) or MX.
template <int D>
__device__ void load_q_tile(PrefillShared<D>& ss, const PrefillParams& p, const SeqSpan& sp, int h, int m0, int tid) {
  using T = PrefillTraits<D>;
  constexpr int kChunksPerRow = D / T::kChunk;
  for (int c = tid; c < T::kBlockM * kChunksPerRow; c += T::kThreads) {
    const int r = c / kChunksPerRow, c0 = (c % kChunksPerRow) * T::kChunk, row = m0 + r, at = sp.q0 + row;
    uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row < sp.seq_q) {
      if (p.q_is_mx) {
        decode_mx_chunk(p.q_mx, ss.q_table, p.q_mx.row_codes(sp.b, at, h), p.q_mx.row_scales(sp.b, at, h), c0, D, true,
                        v);
      } else {
        const int64_t off = sp.b * p.q.stride[0] + int64_t(at) * p.q.stride[1] + h * p.q.stride[2] + c0;
        const uint4* src = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.q.data) + off);
        const uint4 x0 = src[0], x1 = src[1];
        const uint32_t raw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          if (p.q.fp16) {  // FP16 -> BF16 rounds (8 significant bits instead of 11)
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&raw[i]));
            v[i] = pack_bf16x2(f.x, f.y);
          } else {
            v[i] = raw[i];
          }
        }
      }
    }
    store16(&ss.q[r][c0], v);
  }
}

// K tile: keys j0 .. j0+kBlockN-1 of sequence sp, KV head hk, rows along D; keys past its S_kv are zero.
template <int D>
__device__ void load_k_tile(PrefillShared<D>& ss, const PrefillParams& p, const SeqSpan& sp, int hk, int j0, int tid) {
  using T = PrefillTraits<D>;
  constexpr int kChunksPerRow = D / T::kChunk;
  for (int c = tid; c < T::kBlockN * kChunksPerRow; c += T::kThreads) {
    const int r = c / kChunksPerRow, c0 = (c % kChunksPerRow) * T::kChunk, key = j0 + r;
    uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (key < sp.seq_kv)
      decode_mx_chunk(p.k, ss.k_table, p.k.row_codes(sp.b, sp.k0 + key, hk), p.k.row_scales(sp.b, sp.k0 + key, hk), c0,
                      D, true, v);
    store16(&ss.k[r][c0], v);
  }
}

// V tile, channel-major: channel d's keys j0 .. j0+kBlockN-1 of sequence sp (blocked along S_kv); keys past
// its S_kv are zero.
template <int D>
__device__ void load_v_tile(PrefillShared<D>& ss, const PrefillParams& p, const SeqSpan& sp, int hk, int j0, int tid) {
  using T = PrefillTraits<D>;
  constexpr int kChunksPerRow = T::kBlockN / T::kChunk;
  for (int c = tid; c < D * kChunksPerRow; c += T::kThreads) {
    const int d = c / kChunksPerRow, c0 = (c % kChunksPerRow) * T::kChunk;
    uint32_t v[8];
    decode_mx_chunk(p.v, ss.v_table, v_codes(p, sp, hk, d), v_scales(p, sp, hk, d), j0 + c0, sp.seq_kv, p.v_vector,
                    v);
    store16(&ss.vt[d][c0], v);
  }
}

}  // namespace mxattn::kernels
