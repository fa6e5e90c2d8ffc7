// The sm_120a prefill kernel: the portable kernel's shape (one block a 64-row query tile, four warps of 16 rows,
// KV tiles of 64 keys, online softmax in registers) on the block-scaled mma.sync (ptx/mma_block_scale.h):
// Q, K and V go to the tensor cores as their MX codes, one element a byte, with their E8M0 scales; nothing is
// dequantized. Operand maps: sm120/fragment.h. S = Q K^T per 32 channels (one Q and one K scale each); O += P V
// per 32 keys, P as E4M3 times 2^8 with the scale 2^-8, V blocked along the keys (its scale per channel and
// 32 keys). Formats: Q, K and V of one minifloat element (E4M3, E5M2, E2M3, E3M2, E2M1) with E8M0 scales over
// blocks of 32 (launch.h says which arguments it takes).
#pragma once
#include <cuda_bf16.h>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/kernels/attention/prefill_tile.h"
#include "mxattn/kernels/attention/sm120/fragment.h"
#include "mxattn/ptx/cvt.h"
#include "mxattn/ptx/mma_block_scale.h"

namespace mxattn::kernels::sm120 {

namespace frag = mxattn::frag;

template <int D>
struct Traits {
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kBlockM = 16 * kWarps, kBlockN = 64;
  static constexpr int kRow = D + 16;            // Q / K row bytes, padded: rows 8 apart start 4 banks apart
  static constexpr int kVtRow = kBlockN + 16;    // V^T row bytes (one channel's keys)
  static constexpr int kKSteps = D / 32;         // S's k-steps (one scale each)
  static constexpr int kKeyTiles = kBlockN / 8;  // S's n-tiles
  static constexpr int kDimTiles = D / 8;        // O's n-tiles
};

template <int D>
struct Shared {
  using T = Traits<D>;
  alignas(16) uint8_t q[T::kBlockM][T::kRow];
  alignas(16) uint8_t k[T::kBlockN][T::kRow];
  alignas(16) uint8_t vt[D][T::kVtRow];
  uint8_t q_scale[T::kBlockM][T::kKSteps], k_scale[T::kBlockN][T::kKSteps], v_scale[D][T::kBlockN / 32];
};

// 16 codes (from load_codes16) as the 16 bytes the instruction reads, those at `valid` and past zero; `keys`:
// V's codes, put in P's slot order (sm120/fragment.h vt_column keeps each 16-key half of a 32 group in place).
template <int Bits>
__device__ __forceinline__ uint4 mma_bytes16(const uint32_t (&w)[4], int valid, bool keys) {
  uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int at = keys ? frag::sm120::vt_column(i) : i;  // i < 16: the column stays under 16
    const uint32_t byte = i < valid ? frag::sm120::mma_byte(Bits, code_at<Bits>(w, i)) : 0u;
    out[at / 4] |= byte << (8 * (at % 4));
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// 16 codes of a row from code c0 on (of `cols`) into 16 bytes of a tile, and at a 32-code block's start its
// scale byte (1 where the block is out of range). Out of range (`in_range` false, or past cols): zeros.
template <int Bits>
__device__ __forceinline__ void load_chunk(uint8_t* dst, uint8_t* scale_dst, const uint8_t* codes, const uint8_t* scales,
                                           int c0, int cols, bool in_range, bool vector, bool keys) {
  uint32_t w[4] = {0, 0, 0, 0};
  const int valid = in_range ? min(16, cols - c0) : 0;
  if (valid > 0) load_codes16(Bits, codes + c0 * Bits / 8, vector && valid == 16, (cols * Bits + 7) / 8 - c0 * Bits / 8, w);
  *reinterpret_cast<uint4*>(dst) = mma_bytes16<Bits>(w, valid, keys);
  if (c0 % 32 == 0) *scale_dst = valid > 0 ? scales[c0 / 32] : uint8_t(127);
}

template <int Bits, int D>
__device__ void load_q_tile(Shared<D>& ss, const PrefillParams& p, const SeqSpan& sp, int h, int m0, int tid) {
  using T = Traits<D>;
  for (int c = tid; c < T::kBlockM * (D / 16); c += T::kThreads) {
    const int r = c / (D / 16), c0 = c % (D / 16) * 16, row = m0 + r;
    const bool in = row < sp.seq_q;
    const int at = sp.q0 + (in ? row : 0);
    load_chunk<Bits>(&ss.q[r][c0], &ss.q_scale[r][c0 / 32], p.q_mx.row_codes(sp.b, at, h), p.q_mx.row_scales(sp.b, at, h),
                     c0, D, in, true, false);
  }
}

template <int Bits, int D>
__device__ void load_k_tile(Shared<D>& ss, const PrefillParams& p, const SeqSpan& sp, int hk, int j0, int tid) {
  using T = Traits<D>;
  for (int c = tid; c < T::kBlockN * (D / 16); c += T::kThreads) {
    const int r = c / (D / 16), c0 = c % (D / 16) * 16, key = j0 + r;
    const bool in = key < sp.seq_kv;
    const int at = sp.k0 + (in ? key : 0);
    load_chunk<Bits>(&ss.k[r][c0], &ss.k_scale[r][c0 / 32], p.k.row_codes(sp.b, at, hk), p.k.row_scales(sp.b, at, hk),
                     c0, D, in, true, false);
  }
}

// V^T: channel d's keys j0 .. j0 + 63 (blocked along S: a scale per 32 keys), in P's slot order.
template <int Bits, int D>
__device__ void load_v_tile(Shared<D>& ss, const PrefillParams& p, const SeqSpan& sp, int hk, int j0, int tid) {
  using T = Traits<D>;
  for (int c = tid; c < D * (T::kBlockN / 16); c += T::kThreads) {
    const int d = c / (T::kBlockN / 16), c0 = c % (T::kBlockN / 16) * 16;
    load_chunk<Bits>(&ss.vt[d][c0], &ss.v_scale[d][c0 / 32], v_codes(p, sp, hk, d), v_scales(p, sp, hk, d), j0 + c0,
                     sp.seq_kv, j0 + c0 < sp.seq_kv, p.v_vector, true);
  }
}

__device__ __forceinline__ uint32_t lds32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

template <int D, ptx::MmaElem E, int Bits>
__global__ void __launch_bounds__(Traits<D>::kThreads) prefill_kernel(const __grid_constant__ PrefillParams p) {
#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
  using T = Traits<D>;
  namespace f120 = frag::sm120;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  auto& ss = *reinterpret_cast<Shared<D>*>(smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.x * T::kBlockM, h = blockIdx.y, b = blockIdx.z, hk = h / p.group;
  const SeqSpan sp = seq_span(p, b);
  if (sp.bad) {  // offsets that cannot be right: the sequence's LSE is NaN (api/attention.h)
    for (int row = m0 + tid; p.lse && row < min(m0 + T::kBlockM, p.seq_q); row += T::kThreads) lse_at(p, b, h, row) = NAN;
    return;
  }
  if (m0 >= sp.seq_q) return;  // a packed batch's shorter sequence
  load_q_tile<Bits, D>(ss, p, sp, h, m0, tid);

  float o[T::kDimTiles][4];
#pragma unroll
  for (int i = 0; i < T::kDimTiles; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  OnlineSoftmax sm;
  const float scale_log2 = p.softmax_scale * kLog2e;
  const int kv_end = prefill_kv_end(p, sp, m0, T::kBlockM);
  const int row0 = m0 + warp * 16 + g;  // this thread's rows: row0 and row0 + 8
  const int a_row = f120::scale_a_row(lane), b_col = f120::scale_b_col(lane);  // the scales this lane supplies

  for (int j0 = 0; j0 < kv_end; j0 += T::kBlockN) {
    __syncthreads();  // the previous tile's K and V are no longer read
    load_k_tile<Bits, D>(ss, p, sp, hk, j0, tid);
    load_v_tile<Bits, D>(ss, p, sp, hk, j0, tid);
    __syncthreads();

    float s[T::kKeyTiles][4];
#pragma unroll
    for (int j = 0; j < T::kKeyTiles; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < T::kKSteps; ++ks) {
      uint32_t a[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const frag::RowCol at = f120::qk_a_at(lane, r, ks);
        a[r] = lds32(&ss.q[warp * 16 + at.row][at.col]);
      }
      const uint32_t sa = a_row >= 0 ? ss.q_scale[warp * 16 + a_row][ks] : 0u;
#pragma unroll
      for (int j = 0; j < T::kKeyTiles; ++j) {
        uint32_t kb[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const frag::RowCol at = f120::qk_b_at(lane, r, j, ks);
          kb[r] = lds32(&ss.k[at.row][at.col]);
        }
        const uint32_t sb = b_col >= 0 ? ss.k_scale[8 * j + b_col][ks] : 0u;
        ptx::mma_m16n8k32_mxf8f6f4<E, E>(s[j], a, kb, sa, sb);
      }
    }

    scale_and_mask(s, p, sp, j0, m0, row0, lane, scale_log2);
    float rescale[2];
    sm.update(s, rescale);
    rescale_rows(o, rescale);

    // O += P V: P (in [0, 1]) times 2^8 to E4M3 from the accumulators (f120::p_source), scale 2^-8.
#pragma unroll
    for (int kk = 0; kk < T::kBlockN / 32; ++kk) {
      uint32_t a[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const f120::Acc x0 = f120::p_source(r, 0, kk), x2 = f120::p_source(r, 2, kk);
        a[r] = ptx::cvt_rn_satfinite_e4m3x2_f32(s[x0.key_tile][x0.reg + 1] * f120::kPOffset,
                                                s[x0.key_tile][x0.reg] * f120::kPOffset) |
               ptx::cvt_rn_satfinite_e4m3x2_f32(s[x2.key_tile][x2.reg + 1] * f120::kPOffset,
                                                s[x2.key_tile][x2.reg] * f120::kPOffset)
                   << 16;
      }
#pragma unroll
      for (int i = 0; i < T::kDimTiles; ++i) {
        uint32_t vb[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const frag::RowCol at = f120::pv_b_at(lane, r, i, kk);
          vb[r] = lds32(&ss.vt[at.row][at.col]);
        }
        const uint32_t sb = b_col >= 0 ? ss.v_scale[8 * i + b_col][kk] : 0u;
        ptx::mma_m16n8k32_mxf8f6f4<ptx::MmaElem::E4M3, E>(o[i], a, vb, f120::kPScale, sb);
      }
    }
  }

  write_rows(p, sp, b, h, row0, t, o, sm, 1.0f);
#endif
}

}  // namespace mxattn::kernels::sm120
