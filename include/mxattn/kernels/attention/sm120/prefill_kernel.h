// The sm_120a prefill kernel: the portable kernel's shape (one block a 64-row query tile, four warps of 16 rows,
// KV tiles of 64 keys, online softmax in registers) on the block-scaled mma.sync (ptx/mma_block_scale.h):
// Q, K and V go to the tensor cores as their codes with block scales, never dequantized; operand maps:
// sm120/fragment.h. What runs for a format (Config):
//   S = Q K^T  Bytes: kind::mxf8f6f4, one element a byte, E8M0 scales per 32 channels (E4M3, E5M2, E2M3, E3M2);
//              Mxf4 / Nvf4: kind::mxf4nvf4 m16n8k64 on the packed E2M1 codes, UE8M0 per 32 (MXFP4) or UE4M3
//              per 16 (NVFP4, whose FP32 tensor scales join the softmax scale).
//   O += P V   kind::mxf8f6f4 per 32 keys, P as E4M3 times 2^8 with the scale 2^-8, and V (blocked along the
//              keys) as Bytes: its element a byte with its E8M0 scale per channel and 32 keys; or Folded
//              (NVFP4, whose UE4M3 scales per 16 keys no block-scaled P V takes): each 32 keys of a channel
//              get one UE8M0 scale R and their elements become E4M3 codes of value x 2^(127 - R), the Hopper
//              kernel's fold (hopper/fold.h): one rounding to E4M3, of E2M1 x the UE4M3 significand (up to 6
//              significant bits) and, in a block far under its neighbour, of values among E4M3's subnormals.
#pragma once
#include <type_traits>

#include "mxattn/kernels/attention/dequant.h"
#include "mxattn/kernels/attention/hopper/fold.h"
#include "mxattn/kernels/attention/params.h"
#include "mxattn/kernels/attention/prefill_tile.h"
#include "mxattn/kernels/attention/sm120/fragment.h"
#include "mxattn/kernels/attention/sm120/mma.h"
#include "mxattn/ptx/cvt.h"

namespace mxattn::kernels::sm120 {

namespace frag = mxattn::frag;

enum class Qk { Bytes, Mxf4, Nvf4 };
enum class Pv { Bytes, Folded };

// E: the element of Q, K and V (Bits wide).
template <ptx::MmaElem E, int Bits, Qk QK, Pv PV>
struct Config {
  static constexpr ptx::MmaElem kElem = E;
  static constexpr ptx::MmaElem kVElem = PV == Pv::Folded ? ptx::MmaElem::E4M3 : E;  // V's as P V reads it
  static constexpr int kBits = Bits;
  static constexpr Qk kQk = QK;
  static constexpr Pv kPv = PV;
  static constexpr bool kPacked = QK != Qk::Bytes;            // Q and K tiles packed as in memory
  static constexpr int kQkBlock = QK == Qk::Nvf4 ? 16 : 32;   // channels a Q / K scale
  static constexpr uint8_t kScaleOne = QK == Qk::Nvf4 ? 0x38 : 127;  // UE4M3 / UE8M0 1.0
};

template <int D>
struct Traits {
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kBlockM = 16 * kWarps, kBlockN = 64;
  static constexpr int kRow = D + 16;            // Q / K row bytes, padded: rows 8 apart start 4 banks apart
  static constexpr int kVtRow = kBlockN + 16;    // V^T row bytes (one channel's keys)
  static constexpr int kKeyTiles = kBlockN / 8;  // S's n-tiles
  static constexpr int kDimTiles = D / 8;        // O's n-tiles
};

// V^T as the instruction reads it: one element a byte, its UE8M0 scale per channel and 32 keys; Folded also
// keeps the code -> FP16 table of the fold (hopper/fold.h build_value_table).
template <int D>
struct VBytes {
  alignas(16) uint8_t t[D][Traits<D>::kVtRow];
  uint8_t scale[D][Traits<D>::kBlockN / 32];
};
template <int D>
struct VFolded : VBytes<D> {
  uint16_t value[256];
};

template <int D, class C>
struct Shared {
  using T = Traits<D>;
  alignas(16) uint8_t q[T::kBlockM][T::kRow];
  alignas(16) uint8_t k[T::kBlockN][T::kRow];
  alignas(4) uint8_t q_scale[T::kBlockM][D / C::kQkBlock];  // a row's scales of a k64 step: one 32-bit word (4X)
  alignas(4) uint8_t k_scale[T::kBlockN][D / C::kQkBlock];
  std::conditional_t<C::kPv == Pv::Bytes, VBytes<D>, VFolded<D>> v;
};

// 16 codes (from load_codes16) as the instruction reads them, those at `valid` and past zero: 16 bytes (one
// element a byte; `keys`: V's, in P's slot order, sm120/fragment.h vt_column keeping each 16-key half of a 32
// group in place), or kPacked 8 bytes as in memory.
template <int Bits, bool kPacked>
__device__ __forceinline__ uint4 mma_codes16(const uint32_t (&w)[4], int valid, bool keys) {
  uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const uint32_t code = i < valid ? code_at<Bits>(w, i) : 0u;
    if constexpr (kPacked) {
      out[i / 8] |= code << (4 * (i % 8));
    } else {
      const int at = keys ? frag::sm120::vt_column(i) : i;  // i < 16: the column stays under 16
      out[at / 4] |= uint32_t(frag::sm120::mma_byte(Bits, code)) << (8 * (at % 4));
    }
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// 16 codes of a row from code c0 on (of `cols`) into a tile (16 bytes, or kPacked 8), and at a block's start
// its scale byte (1 where the block is out of range). Out of range (`in_range` false, or past cols): zeros.
template <int Bits, bool kPacked>
__device__ __forceinline__ void load_chunk(uint8_t* dst, uint8_t* scale_dst, const uint8_t* codes, const uint8_t* scales,
                                           int c0, int cols, int block, uint8_t scale_one, bool in_range, bool vector,
                                           bool keys) {
  uint32_t w[4] = {0, 0, 0, 0};
  const int valid = in_range ? min(16, cols - c0) : 0;
  if (valid > 0) load_codes16(Bits, codes + c0 * Bits / 8, vector && valid == 16, (cols * Bits + 7) / 8 - c0 * Bits / 8, w);
  const uint4 x = mma_codes16<Bits, kPacked>(w, valid, keys);
  if constexpr (kPacked) *reinterpret_cast<uint2*>(dst) = make_uint2(x.x, x.y);
  else *reinterpret_cast<uint4*>(dst) = x;
  if (c0 % block == 0) *scale_dst = valid > 0 ? scales[c0 / block] : scale_one;
}

// Q rows m0 .. (head h) and K keys j0 .. (KV head hk): rows along D.
template <class C, int D>
__device__ void load_qk_tile(uint8_t (*tile)[Traits<D>::kRow], uint8_t (*scale)[D / C::kQkBlock], const MxRows& t,
                             const SeqSpan& sp, int row_base, int rows, int first, int n, int head, int tid) {
  using T = Traits<D>;
  for (int c = tid; c < rows * (D / 16); c += T::kThreads) {
    const int r = c / (D / 16), c0 = c % (D / 16) * 16, i = first + r;
    const bool in = i < n;
    const int at = row_base + (in ? i : 0);
    load_chunk<C::kBits, C::kPacked>(&tile[r][C::kPacked ? c0 / 2 : c0], &scale[r][c0 / C::kQkBlock],
                                     t.row_codes(sp.b, at, head), t.row_scales(sp.b, at, head), c0, D, C::kQkBlock,
                                     C::kScaleOne, in, true, false);
  }
}

// 16 bytes (keys in order) into V^T's row at its 16-key chunk, each in P's slot order (vt_column: the chunk's keys
// stay in it).
__device__ __forceinline__ void store_keys16(uint8_t* dst, uint4 x) {
  const uint32_t in[4] = {x.x, x.y, x.z, x.w};
  uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int at = frag::sm120::vt_column(i);
    out[at / 4] |= (in[i / 4] >> (8 * (i % 4)) & 0xFFu) << (8 * (at % 4));
  }
  *reinterpret_cast<uint4*>(dst) = make_uint4(out[0], out[1], out[2], out[3]);
}

// NVFP4's V folded (Pv::Folded): keys j .. j + 15 of channel d (c0, the chunk in the tile). Both chunks of a
// 32-key group find the group's R from its two UE4M3 scales (the larger finite exponent less the headroom; keys
// past the sequence have none), and the first writes it as the group's UE8M0 scale. Codes past the sequence fold
// to 0; a NaN scale makes its keys E4M3 NaN (fold_codes).
template <int D>
__device__ __forceinline__ void fold_v_chunk(VFolded<D>& v, const uint8_t* codes, const uint8_t* scales, int d, int c0,
                                             int j, int seq_kv, bool vector, int headroom) {
  using Codes = hopper::Ue4m3Codes<4>;
  const int valid = max(0, min(16, seq_kv - j));
  uint32_t w[4] = {0, 0, 0, 0};
  if (valid > 0) load_codes16(4, codes + j / 2, vector && valid == 16, (seq_kv + 1) / 2 - j / 2, w);
#pragma unroll
  for (int i = 0; i < 2; ++i)  // codes past the sequence: 0 (the odd key's byte holds the next one's)
    w[i] &= valid >= 8 * (i + 1) ? 0xFFFFFFFFu : (valid <= 8 * i ? 0u : (1u << (4 * (valid - 8 * i))) - 1u);
  const int g = j / 32 * 2;  // the group's first 16-key block
  int e_max = 0;
#pragma unroll
  for (int b = 0; b < 2; ++b)
    if (32 * (g / 2) + 16 * b < seq_kv)
      e_max = max(e_max, hopper::row_max_exponent<Codes>(hopper::scale_order_key<Codes>(scales[g + b])));
  const int ref = e_max > 0 ? e_max - headroom : 127;  // no finite nonzero scale: every code folds to 0 (or NaN)
  const hopper::BlockScaleParts sc =
      valid > 0 ? hopper::block_scale_parts<Codes>(scales[j / 16]) : hopper::BlockScaleParts{0, 0};
  store_keys16(&v.t[d][c0], hopper::fold_codes(Codes{}, w, sc, ref, hopper::FoldTables{v.value, nullptr}, valid));
  if (c0 % 32 == 0) v.scale[d][c0 / 32] = uint8_t(ref);
}

// V^T: channel d's keys j0 .. j0 + 63 (blocked along S).
template <class C, int D>
__device__ void load_v_tile(Shared<D, C>& ss, const PrefillParams& p, const SeqSpan& sp, int hk, int j0, int tid) {
  using T = Traits<D>;
  const int headroom = C::kPv == Pv::Folded ? hopper::fold_headroom(p.v.format) : 0;
  for (int c = tid; c < D * (T::kBlockN / 16); c += T::kThreads) {
    const int d = c / (T::kBlockN / 16), c0 = c % (T::kBlockN / 16) * 16;
    if constexpr (C::kPv == Pv::Bytes) {
      load_chunk<C::kBits, false>(&ss.v.t[d][c0], &ss.v.scale[d][c0 / 32], v_codes(p, sp, hk, d), v_scales(p, sp, hk, d),
                                  j0 + c0, sp.seq_kv, 32, 127, j0 + c0 < sp.seq_kv, p.v_vector, true);
    } else {
      fold_v_chunk(ss.v, v_codes(p, sp, hk, d), v_scales(p, sp, hk, d), d, c0, j0 + c0, sp.seq_kv, p.v_vector, headroom);
    }
  }
}

__device__ __forceinline__ uint32_t lds32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// S (16 rows x 64 keys of this warp) = Q K^T over the tiles.
template <class Mma, class C, int D>
__device__ __forceinline__ void mma_qk(const Shared<D, C>& ss, int warp, int lane, float (&s)[Traits<D>::kKeyTiles][4]) {
  using T = Traits<D>;
  namespace f120 = frag::sm120;
  const int a_row = f120::scale_a_row(lane), b_col = f120::scale_b_col(lane);  // the scales this lane supplies
  constexpr int kStep = C::kPacked ? 64 : 32;  // channels a k-step
#pragma unroll
  for (int ks = 0; ks < D / kStep; ++ks) {
    uint32_t a[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const frag::RowCol at = C::kPacked ? f120::qk4_a_at(lane, r, ks) : f120::qk_a_at(lane, r, ks);
      a[r] = lds32(&ss.q[warp * 16 + at.row][at.col]);
    }
    // A lane's scale word: the k-step's scale bytes of its row (1X one, 2X two, 4X four).
    auto word = [&](const uint8_t* row) {
      if constexpr (C::kQk == Qk::Nvf4) return lds32(row + 4 * ks);
      else if constexpr (C::kQk == Qk::Mxf4) return uint32_t(row[2 * ks]) | uint32_t(row[2 * ks + 1]) << 8;
      else return uint32_t(row[ks]);
    };
    const uint32_t sa = a_row >= 0 ? word(ss.q_scale[warp * 16 + a_row]) : 0u;
#pragma unroll
    for (int j = 0; j < T::kKeyTiles; ++j) {
      uint32_t kb[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const frag::RowCol at = C::kPacked ? f120::qk4_b_at(lane, r, j, ks) : f120::qk_b_at(lane, r, j, ks);
        kb[r] = lds32(&ss.k[at.row][at.col]);
      }
      const uint32_t sb = b_col >= 0 ? word(ss.k_scale[8 * j + b_col]) : 0u;
      if constexpr (C::kQk == Qk::Nvf4) Mma::nvf4_ue4m3(s[j], a, kb, sa, sb);
      else if constexpr (C::kQk == Qk::Mxf4) Mma::mxf4_ue8m0(s[j], a, kb, sa, sb);
      else Mma::template mxf8f6f4<C::kElem, C::kElem>(s[j], a, kb, sa, sb);
    }
  }
}

// O += P V: P (in [0, 1], S's accumulators) times 2^8 to E4M3 (f120::p_source) with the scale 2^-8, and V^T's bytes
// with their scales.
template <class Mma, class C, int D>
__device__ __forceinline__ void mma_pv(const Shared<D, C>& ss, int lane, const float (&s)[Traits<D>::kKeyTiles][4],
                                       float (&o)[Traits<D>::kDimTiles][4]) {
  using T = Traits<D>;
  namespace f120 = frag::sm120;
  const int b_col = f120::scale_b_col(lane);
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
        vb[r] = lds32(&ss.v.t[at.row][at.col]);
      }
      const uint32_t sb = b_col >= 0 ? ss.v.scale[8 * i + b_col][kk] : 0u;
      Mma::template mxf8f6f4<ptx::MmaElem::E4M3, C::kVElem>(o[i], a, vb, f120::kPScale, sb);
    }
  }
}

// One block's query tile (blockIdx: tile, head, batch).
template <int D, class C, class Mma>
__device__ __forceinline__ void prefill_block(const PrefillParams& p) {
  using T = Traits<D>;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  auto& ss = *reinterpret_cast<Shared<D, C>*>(smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.x * T::kBlockM, h = blockIdx.y, b = blockIdx.z, hk = h / p.group;
  const SeqSpan sp = seq_span(p, b);
  if (sp.bad) {  // offsets that cannot be right: the sequence's LSE is NaN (api/attention.h)
    for (int row = m0 + tid; p.lse && row < min(m0 + T::kBlockM, p.seq_q); row += T::kThreads) lse_at(p, b, h, row) = NAN;
    return;
  }
  if (m0 >= sp.seq_q) return;  // a packed batch's shorter sequence
  if constexpr (C::kPv == Pv::Folded) hopper::build_value_table(ss.v.value, p.v.format, tid, T::kThreads);
  load_qk_tile<C, D>(ss.q, ss.q_scale, p.q_mx, sp, sp.q0, T::kBlockM, m0, sp.seq_q, h, tid);

  float o[T::kDimTiles][4];
#pragma unroll
  for (int i = 0; i < T::kDimTiles; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  OnlineSoftmax sm;
  // NVFP4's FP32 tensor scales (1 for the E8M0 formats): Q's and K's join the softmax scale, V's the output.
  const float scale_log2 = p.softmax_scale * kLog2e * p.q_mx.inv_tensor_scale() * p.k.inv_tensor_scale();
  const int kv_end = prefill_kv_end(p, sp, m0, T::kBlockM);
  const int row0 = m0 + warp * 16 + g;  // this thread's rows: row0 and row0 + 8

  for (int j0 = 0; j0 < kv_end; j0 += T::kBlockN) {
    __syncthreads();  // the previous tile's K and V are no longer read (and the first: Q and V's table written)
    load_qk_tile<C, D>(ss.k, ss.k_scale, p.k, sp, sp.k0, T::kBlockN, j0, sp.seq_kv, hk, tid);
    load_v_tile<C, D>(ss, p, sp, hk, j0, tid);
    __syncthreads();

    float s[T::kKeyTiles][4];
#pragma unroll
    for (int j = 0; j < T::kKeyTiles; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    mma_qk<Mma, C, D>(ss, warp, lane, s);
    scale_and_mask(s, p, sp, j0, m0, row0, lane, scale_log2);
    float rescale[2];
    sm.update(s, rescale);
    rescale_rows(o, rescale);
    mma_pv<Mma, C, D>(ss, lane, s, o);
  }
  write_rows(p, sp, b, h, row0, t, o, sm, p.v.inv_tensor_scale());
}

// Mma: NativeMma (sm_120a code only; elsewhere the kernel is empty and the launcher never picks it) or
// EmulatedMma (any GPU: the same kernel with the instructions emulated, for tests).
template <int D, class C, class Mma = NativeMma>
__global__ void __launch_bounds__(Traits<D>::kThreads) prefill_kernel(const __grid_constant__ PrefillParams p) {
#if defined(__CUDA_ARCH__)
#if defined(__CUDA_ARCH_FEAT_SM120_ALL)
  constexpr bool kNative = true;
#else
  constexpr bool kNative = false;
#endif
  if constexpr (Mma::kEmulated || kNative) prefill_block<D, C, Mma>(p);
#endif
}

}  // namespace mxattn::kernels::sm120
