// Split-KV decode attention over the paged, block-scaled KV cache (decode_traits.h has the plan).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "mxattn/kernels/attention/decode_codec.h"
#include "mxattn/kernels/attention/decode_load.h"
#include "mxattn/kernels/attention/decode_merge.h"
#include "mxattn/kernels/attention/decode_softmax.h"
#include "mxattn/kernels/attention/fragment.h"
#include "mxattn/kernels/attention/paged_kv.h"
#include "mxattn/ptx/cluster.h"
#include "mxattn/ptx/griddep.h"
#include "mxattn/ptx/ldmatrix.h"
#include "mxattn/ptx/mma.h"
#include "mxattn/ptx/movmatrix.h"

namespace mxattn::kernels {

struct DecodeParams {
  PagedKv cache;
  const int32_t* seq_lens = nullptr;  // [batch], tokens in the cache, new queries' tokens included
  int batch = 1, q_len = 1, heads_q = 1, group = 1, rows = 1;  // rows = q_len * group
  const void* q = nullptr;  // [B, q_len, H_q, D]
  int64_t q_stride[3] = {0, 0, 0};
  bool q_fp16 = false;
  bool causal = false;      // query token i sees keys j <= seq_len - q_len + i
  float softmax_scale = 0;
  int splits = 1, split_keys = 128;  // split s covers keys [s * split_keys, (s+1) * split_keys)
  // The splits of a (b, hk, query tile) run as one thread block cluster (blockIdx.x its rank) and merge through
  // its shared memory; otherwise through part_o, part_lse and the arrival words.
  bool cluster_merge = false;
  float* part_o = nullptr;    // [B][H_kv][rows][splits][D], normalized
  float* part_lse = nullptr;  // [B][H_kv][rows][splits], log2 units
  DecodeOutput output;        // where the last block of each (b, hk, query tile) merges the splits
};

// Q row r of (b, hk) as a lane's B-fragment words of S^T: channels t*D/4 + 2w, 2w+1 (fragment.h
// qk_channel), or for E2M1 the pairs its decode gives: word 4i + j holds channels t*D/4 + 8i + j and
// t*D/4 + 8i + j + 4 (decode_codec.h decode_k). The MMA pairs K's and Q's words, so any pairing that
// both sides share gives the same dot products. BlockMajor: the lane's eight channels of group i are
// 32i + 8t .. + 7 (word t of each 32-channel block, as ldmatrix gives K's codes) instead of t*D/4 + 8i ..
template <int D, bool E2M1Pairs, bool BlockMajor = false>
__device__ __forceinline__ void load_q_words(const DecodeParams& p, int b, int hk, int r, int t,
                                             uint32_t (&w)[D / 8]) {
  if (r >= p.rows) {
#pragma unroll
    for (int i = 0; i < D / 8; ++i) w[i] = 0;
    return;
  }
  const int tok = r / p.group, h = hk * p.group + r % p.group;
  const int64_t off = b * p.q_stride[0] + int64_t(tok) * p.q_stride[1] + int64_t(h) * p.q_stride[2] +
                      (BlockMajor ? 8 * t : t * (D / 4));
  const uint4* src = reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.q) + off);
#pragma unroll
  for (int i = 0; i < D / 32; ++i) {
    const uint4 v = src[BlockMajor ? 4 * i : i];
    uint32_t x[4] = {v.x, v.y, v.z, v.w};  // channels (8i + 2j, 8i + 2j + 1) of the lane's range
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (p.q_fp16) {  // FP16 -> BF16 rounds
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&x[j]));
        x[j] = pack_bf16x2(f.x, f.y);
      }
    }
    if constexpr (E2M1Pairs) {  // (8i + j, 8i + j + 4)
      w[4 * i + 0] = ptx::prmt_b32(x[0], x[2], kZipWords01), w[4 * i + 1] = ptx::prmt_b32(x[0], x[2], kZipWords23);
      w[4 * i + 2] = ptx::prmt_b32(x[1], x[3], kZipWords01), w[4 * i + 3] = ptx::prmt_b32(x[1], x[3], kZipWords23);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) w[4 * i + j] = x[j];
    }
  }
}

// The same row for E2M1 keys with UE4M3 scales (FP16 MMAs): in FP16 times 2^f, f chosen so that the row's largest
// |q| lies in [2^14, 2^15) (0 for a row of zeros or with an Inf), word 4i + j holding channels t*D/4 + 8i +
// kE2m1F16Lo[j] and 2 more (e2m1x8_to_f16_scaled's order); returns f. BF16 values times a power of two are exact in
// FP16 over its normal range, and FP16 Q is rounded to BF16 first, as above. (All lanes call it: the row maximum
// takes shuffles among a row's lanes.)
template <int D, bool BlockMajor = false>
__device__ __forceinline__ int load_q_f16_words(const DecodeParams& p, int b, int hk, int r, int t, uint32_t (&w)[D / 8]) {
  load_q_words<D, false, BlockMajor>(p, b, hk, r, t, w);
  auto lo = [](uint32_t x) { return __uint_as_float(x << 16); };
  auto hi = [](uint32_t x) { return __uint_as_float(x & 0xFFFF0000u); };
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < D / 8; ++i) amax = fmaxf(amax, fmaxf(fabsf(lo(w[i])), fabsf(hi(w[i]))));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));  // the row's four lanes (t)
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  const int e = int(__float_as_uint(amax) >> 23);  // amax >= 0: the exponent field
  const int f = amax == 0.0f || e == 0xFF ? 0 : min(max(141 - e, -126), 64);
  const float scale = __uint_as_float(uint32_t(f + 127) << 23);
#pragma unroll
  for (int i = 0; i < D / 32; ++i) {
    const uint32_t* x = &w[4 * i];
    const uint32_t h[4] = {pack_f16x2(lo(x[0]) * scale, lo(x[1]) * scale), pack_f16x2(lo(x[2]) * scale, lo(x[3]) * scale),
                           pack_f16x2(hi(x[0]) * scale, hi(x[1]) * scale), pack_f16x2(hi(x[2]) * scale, hi(x[3]) * scale)};
#pragma unroll
    for (int j = 0; j < 4; ++j) w[4 * i + j] = h[j];
  }
  return f;
}

// Zeros, in a tile's V stage, the blocks with a NaN scale and (8-bit elements) the non-finite codes of
// keys first .. end - 1 of the tile; whether there were any (this lane's share). The block's codes go too:
// with the scale byte 0, E8M0's 2^-127 times code 0 is 0.
template <class VT, bool LdmatrixRows>
__device__ bool zero_nonfinite_v(uint8_t* codes, uint8_t* scales, int first, int end, const ElementTable& tab,
                                 int lane) {
  bool bad = false;
  end = min(end, 32);
  for (int i = lane; i < (end - first) * VT::kRowScales; i += 32) {  // a lane per scale byte
    const int key = first + i / VT::kRowScales, blk = i % VT::kRowScales;
    uint8_t& sc = scales[key * VT::kRowScales + blk];
    if (!isnan(tab.scale[sc])) continue;
    bad = true;
    sc = 0;
    for (int b = blk * VT::kBlock * VT::kBits / 8; b < (blk + 1) * VT::kBlock * VT::kBits / 8; ++b)
      codes[frag::stage_offset(VT::kRowBytes, key * VT::kRowBytes + b, LdmatrixRows)] = 0;
  }
  if constexpr (VT::kBits == 8) {
    for (int i = lane; i < (end - first) * VT::kRowBytes; i += 32) {  // a lane per code
      uint8_t& c = codes[frag::stage_offset(VT::kRowBytes, first * VT::kRowBytes + i, LdmatrixRows)];
      if (isfinite(tab.value[c])) continue;
      bad = true;
      c = 0;
    }
  }
  return bad;
}

// One block per SM: T::kWarps warps with 65536 / T::kThreads registers each (decode_traits.h). KF, VF:
// K's and V's CacheCodec.
template <int D, class KF, class VF>
__global__ void __launch_bounds__(DecodeTraits<D, KF, VF>::kThreads, 1)
    decode_kernel(const __grid_constant__ DecodeParams p) {
  using T = DecodeTraits<D, KF, VF>;
  using KT = typename T::K;
  using VT = typename T::V;
  constexpr int kStages = T::kStages;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  auto& ss = *reinterpret_cast<DecodeShared<T>*>(smem_raw);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int split = blockIdx.x, m0 = blockIdx.y * T::kRows, b = blockIdx.z / p.cache.heads_kv,
            hk = blockIdx.z % p.cache.heads_kv;
  const PagedKv& kv = p.cache;
  // Launched as a programmatic dependent: wait for the work ahead in the stream (which may write Q
  // or the cache) before reading anything, and let the next kernel's blocks launch as SMs free up.
  ptx::griddep_wait();
  ptx::griddep_launch_dependents();

  const int seq_len = p.seq_lens[b];
  const int k_begin = split * p.split_keys, k_end = min(seq_len, k_begin + p.split_keys);
  const float k_inv = kv.k.format.tensor_scale && kv.k.tensor_scale ? 1.0f / *kv.k.tensor_scale : 1.0f;
  const float scale_log2 = p.softmax_scale * kLog2e * k_inv;
  const int rows[2] = {m0 + 2 * t, m0 + 2 * t + 1};  // this thread's columns of S^T and O^T
  int key_end[2];  // exclusive visible-key bound of this thread's two rows
#pragma unroll
  for (int r = 0; r < 2; ++r)
    key_end[r] = p.causal ? min(seq_len, seq_len - p.q_len + min(rows[r], p.rows - 1) / p.group + 1) : seq_len;
  // Keys below this are visible to every row of the block (row m0 sees the fewest) and in the split.
  const int unmasked_end = min(k_end, p.causal ? seq_len - p.q_len + m0 / p.group + 1 : seq_len);

  float o[T::kDimTiles][4];  // O^T: m-tile i, channel slots g, g+8 (fragment.h pvt_channel), rows 2t, 2t+1
#pragma unroll
  for (int i = 0; i < T::kDimTiles; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  OnlineSoftmaxT sm;
  bool partial_bad = false;  // a non-finite V at a key only some rows see was zeroed (see the PV step)

  constexpr int k_row_bytes = KT::kRowBytes, v_row_bytes = VT::kRowBytes;     // PagedTensor::row_bytes(D)
  constexpr int k_row_scales = KT::kRowScales, v_row_scales = VT::kRowScales;  // PagedTensor::row_scales(D)
  const int32_t* table = kv.block_table + int64_t(b) * kv.max_pages_per_seq;
  auto row_of = [&](int key) { return kv.row(table[key >> kv.page_shift], hk, key & (kv.page_size - 1)); };
  // Pages of at least a tile hold a whole tile (tiles start at multiples of 32): one table read per tile.
  const bool tile_in_page = kv.page_size >= T::kTileKeys;
  // Stage layout (per warp): the tile's K code rows and V code rows as in memory, swizzled in
  // 16-byte chunks (fragment.h stage_offset), then its K scale rows [key][row_scales] and V's.
  auto k_code_rows = [&](int s) { return &ss.stage[warp][s][0]; };
  auto v_code_rows = [&](int s) { return &ss.stage[warp][s][KT::kCodeBytes]; };
  auto k_scale_rows = [&](int s) { return &ss.stage[warp][s][T::kCodeStageBytes]; };
  auto v_scale_rows = [&](int s) { return &ss.stage[warp][s][T::kCodeStageBytes + KT::kScaleBytes]; };
  // A lane's copies of the tile's code rows, their destinations computed once (decode_load.h StageCopies).
  // (Rows read by ldmatrix are swizzled for it, fragment.h stage_offset: V's where its scales fold into P, and K's
  // then too (its fragment reads are as fast either way) or where its scales apply after the MMA.)
  constexpr bool kLdm = T::kVFold, kLdmK = T::kVFold || T::kKAfter;
  const StageCopies<k_row_bytes, kLdmK> k_copies(lane);
  const StageCopies<v_row_bytes, kLdm> v_copies(lane);

  // The split's tiles (32 keys each, tile i at key k_begin + 32i) are claimed by the warps as they
  // go: the first kStages in a fixed order (warp w: w, w + W, ...), the rest from ss.next_tile. A
  // tile is claimed one step before its copies are issued, so that its block-table entry (one load
  // per tile: pages hold whole tiles) has a tile's work to arrive.
  const int n_tiles = (k_end - k_begin + T::kTileKeys - 1) / T::kTileKeys;  // <= 0 past the sequence
  auto key_of = [&](int tile) { return k_begin + tile * T::kTileKeys; };
  // (Bounded by the table's row, not the sequence length, so that the first tiles' entries are
  // read alongside seq_lens rather than after it.)
  auto page_of = [&](int tile) {
    const int entry = key_of(tile) >> kv.page_shift;
    return tile_in_page && entry < kv.max_pages_per_seq ? table[entry] : 0;
  };
  auto claim = [&] {
    int tile = 0;
    if (lane == 0) tile = atomicAdd(&ss.next_tile, 1);
    return __shfl_sync(0xffffffffu, tile, 0);
  };

  // Issue the copies of a tile into stage s, as one cp.async group, by the whole warp: code rows and
  // scale rows. Slots past the sequence get code and scale bytes 0 (value 0, never NaN).
  auto fetch = [&](int tile, int32_t page, int s) {
    const int tile0 = key_of(tile), valid_keys = min(T::kTileKeys, k_end - tile0);
    if (tile_in_page) {  // warp-uniform: a base plus immediate offsets
      const int64_t row0 = kv.row(page, hk, tile0 & (kv.page_size - 1));
      // The tile's K and V code rows are contiguous in the page: 512 bytes per copy instruction,
      // chunk c of the tile by lane c % 32. (Each lane copying its own fragment bytes reads rows a
      // quarter or an eighth at a time: 16-19% slower for 8-bit and 6-bit codes, bench/decode_notes.md v5.)
      // (The lane's byte offset is added once, so that each copy's address is a base plus an
      // immediate: 32-bit offsets per copy cost two 64-bit adds each.)
      const uint8_t* kt = kv.k.codes + row0 * k_row_bytes + 16 * lane;
      const uint8_t* vt = kv.v.codes + row0 * v_row_bytes + 16 * lane;
      // The same copies with and without per-row predicates: a whole tile (all but a split's last)
      // needs no bounds checks.
      // (K's and V's copies in one loop where their rows are as wide.)
      auto issue = [&](auto whole) {
        if constexpr (k_row_bytes == v_row_bytes && kLdm == kLdmK) {
          k_copies.issue(k_code_rows(s), kt, whole, valid_keys, lane, v_code_rows(s), vt);
        } else {
          k_copies.issue(k_code_rows(s), kt, whole, valid_keys, lane);
          v_copies.issue(v_code_rows(s), vt, whole, valid_keys, lane);
        }
      };
      if (valid_keys == T::kTileKeys) {
        issue(std::true_type{});
      } else {
        issue(std::false_type{});
      }
      // The tile's scale rows are contiguous: 16-byte chunks, zero-filled past the last valid key.
      constexpr int kScaleChunks = (KT::kScaleBytes > VT::kScaleBytes ? KT::kScaleBytes : VT::kScaleBytes) / 16;
#pragma unroll
      for (int c = lane; c < kScaleChunks; c += 32) {
        if (c < KT::kScaleBytes / 16) {
          const int n = min(16, max(0, valid_keys * k_row_scales - 16 * c));
          ptx::cp_async_cg_16_prefix(k_scale_rows(s) + 16 * c, kv.k.scales + row0 * k_row_scales + 16 * c, n);
        }
        if (c < VT::kScaleBytes / 16) {
          const int n = min(16, max(0, valid_keys * v_row_scales - 16 * c));
          ptx::cp_async_cg_16_prefix(v_scale_rows(s) + 16 * c, kv.v.scales + row0 * v_row_scales + 16 * c, n);
        }
      }
    } else {  // small pages: a block-table read per key
      if constexpr (k_row_bytes == v_row_bytes && kLdm == kLdmK) {
        k_copies.issue_rows(k_code_rows(s), kv.k.codes, tile0, k_end, row_of, lane, v_code_rows(s), kv.v.codes);
      } else {
        k_copies.issue_rows(k_code_rows(s), kv.k.codes, tile0, k_end, row_of, lane);
        v_copies.issue_rows(v_code_rows(s), kv.v.codes, tile0, k_end, row_of, lane);
      }
      // Scale rows: lane i copies key tile0 + i's.
      static_assert(T::kTileKeys == 32, "a scale row per lane");
      const bool valid = lane < valid_keys;
      const int64_t row = valid ? row_of(tile0 + lane) : 0;
      copy_scale_row<k_row_scales>(k_scale_rows(s) + lane * k_row_scales, kv.k.scales, row, valid);
      copy_scale_row<v_row_scales>(v_scale_rows(s) + lane * v_row_scales, kv.v.scales, row, valid);
    }
    ptx::cp_async_commit_group();
  };
  // This lane's codes of K key tile j (row 8j + g) and V slot (kk, r) (row 16kk + 8(r/2) + 2t + r%2):
  // fragment.h decode_k_row, decode_v_key, with the offsets for rows 0..7 computed once.
  const StageRange<KT::kBytes, k_row_bytes, kLdmK> k_range(g * k_row_bytes + t * KT::kBytes);
  const StageRange<VT::kBytes, v_row_bytes, kLdm> v_range[2] = {
      StageRange<VT::kBytes, v_row_bytes, kLdm>(2 * t * v_row_bytes + g * VT::kBytes),
      StageRange<VT::kBytes, v_row_bytes, kLdm>((2 * t + 1) * v_row_bytes + g * VT::kBytes)};
  auto k_raw_of = [&](int s, int j, uint32_t (&w)[KT::kWords]) { load_stage_range(k_code_rows(s), k_range, 8 * j, w); };
  auto v_raw_of = [&](int s, int kk, int r, uint32_t (&w)[VT::kWords]) {
    load_stage_range(v_code_rows(s), v_range[r % 2], 16 * kk + 8 * (r / 2), w);
  };
  // This lane's scale bytes of K key tile j / V slot (kk, r), from the stage's scale rows.
  auto k_scales_of = [&](int s, int j) {
    return staged_scales<KT::kScales>(k_scale_rows(s) + (8 * j + g) * k_row_scales + t * KT::kChannels / KT::kBlock);
  };
  auto v_scales_of = [&](int s, int kk, int r) {
    return staged_scales<VT::kScales>(v_scale_rows(s) + frag::decode_v_key(kk, r, t) * v_row_scales +
                                      g * VT::kChannels / VT::kBlock);
  };

  // Prologue: the warp's first kStages - 1 tiles in flight (an empty group past the split keeps
  // the wait counts uniform), and the next one claimed.
  int queue[kStages - 1];  // the tiles in flight, in order: queue[0] is the next to use
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    queue[i] = warp + i * T::kWarps;
    if (queue[i] < n_tiles) {
      fetch(queue[i], page_of(queue[i]), i);
    } else {
      ptx::cp_async_commit_group();
    }
  }
  int claimed = warp + (kStages - 1) * T::kWarps;
  int32_t claimed_page = page_of(claimed);
  if (tid == 0) ss.next_tile = kStages * T::kWarps;
  // The tables and Q are set up while the first tiles are in flight. (The tables depend on the
  // formats alone, but built before griddepcontrol.wait they cost the 6-bit kernels an address add
  // per table lookup: 5% at 32k keys, bench/decode_notes.md v7.)
  build_element_table(ss.k_table, kv.k.format, tid, T::kThreads);
  build_element_table(ss.v_table, kv.v.format, tid, T::kThreads);
  // E2M1 keys with UE4M3 scales, or E8M0 scales applied after the MMA (T::kKAfter), go through FP16 MMAs
  // (decode_codec.h): Q in FP16 times 2^q_f, its rows' factors undone with the softmax scale after the MMA (c_row:
  // this thread's rows 2t, 2t+1; 2^6 undoes the codes' 2^-6).
  constexpr bool kKF16 = KT::kCodec == Codec::E2M1Ue4m3 || T::kKAfter;
  uint32_t qw[D / 8];  // B fragments of S^T: query row g
  float c_row[2];
  if constexpr (kKF16) {
    const int q_f = load_q_f16_words<D, T::kKAfter>(p, b, hk, m0 + g, t, qw);
#pragma unroll
    for (int c = 0; c < 2; ++c) c_row[c] = ldexpf(scale_log2, 6 - __shfl_sync(0xffffffffu, q_f, 4 * (2 * t + c)));
  } else {
    load_q_words<D, k_e2m1_bf16(KT::kCodec)>(p, b, hk, m0 + g, t, qw);
  }
  // E2M1 values with UE4M3 scales go through FP16 MMAs too, O then held in units of 2^-9 (O^T += V^T P^T below).
  constexpr bool kVF16 = VT::kCodec == Codec::E2M1Ue4m3;
  constexpr float v_unit = kVF16 ? 1.0f / 512.0f : 1.0f;
  // E8M0 values' scales folded into P (T::kVFold, decode_traits.h): per block b of the channels, a running reference
  // v_ref[b] (the largest scale byte this warp has seen, at least 15), and P^T of key k for block b is P * 2^15 (FP16,
  // as for kVF16) times 2^(e_kb - v_ref[b]) (at most 1); O's block b columns are then in units of 2^(v_ref[b] - 136)
  // (with the codes' 2^-6). Blocks with a NaN scale at keys every row sees: bits of v_nan.
  constexpr int kFoldBlocks = T::kVFold ? T::kVBlocks : 1;
  int* const v_ref = ss.v_ref[warp];  // (shared memory: read each tile, written where a reference rises)
  uint32_t v_nan = 0;
  // This lane's ldmatrix row of V blocks 0, 1 (matrix j = lane / 8: key 8 (j % 2) + lane % 8, block j / 2); blocks 2q,
  // 2q + 1 at v_ldm ^ 32q (the swizzle XORs the chunk index, which holds 2q apart from the lane's bits).
  int v_ldm = 0;
  // K's (T::kKAfter): block 0 of key lane % 16 (keys 0..7, 8..15: the two matrices), block b at k_ldm ^ 16b.
  constexpr int kKBlocks = D / 32;
  const int k_ldm = T::kKAfter ? frag::stage_offset(k_row_bytes, lane % 16 * k_row_bytes, kLdmK) : 0;
  if constexpr (T::kVFold) {
    if (lane < kFoldBlocks) v_ref[lane] = 15;
    v_ldm = frag::stage_offset(v_row_bytes, (8 * (lane / 8 % 2) + lane % 8) * v_row_bytes + 16 * (lane / 16), kLdm);
  }
  auto v_scale_words = [&](int s, int key, uint32_t (&w)[(kFoldBlocks + 3) / 4]) {
    scale_words<kFoldBlocks>(v_scale_rows(s) + key * v_row_scales, w);
  };
  __syncthreads();  // tables, next_tile

  int stage = 0;
  // Claims only grow, so a warp's tiles come in order and its first tile past the split ends it.
  while (queue[0] < n_tiles) {
    const int tile0 = key_of(queue[0]);
    ptx::cp_async_wait_group<kStages - 2>();  // this lane's copies of this tile have landed
    // Every lane's copies too (the scale rows are shared), and every lane is done with the stage
    // that the next fetch refills (the one read in the previous iteration).
    __syncwarp();
    if (claimed < n_tiles) {
      fetch(claimed, claimed_page, stage == 0 ? kStages - 1 : stage - 1);
    } else {
      ptx::cp_async_commit_group();
    }
#pragma unroll
    for (int i = 0; i + 1 < kStages - 1; ++i) queue[i] = queue[i + 1];
    queue[kStages - 2] = claimed;
    claimed = claim();
    claimed_page = page_of(claimed);
    // Keys only some rows see (causal with several query tokens: [unmasked_end, k_end), in a split's last
    // tile): a row that does not see one has P = 0 there, but 0 x NaN is NaN on the tensor cores. Their V's
    // non-finite blocks and codes become zeros in the stage; the rows that see them get their NaN after
    // the loop.
    if (tile0 + T::kTileKeys > unmasked_end && unmasked_end < k_end) {  // warp-uniform
      partial_bad |= zero_nonfinite_v<VT, kLdm>(v_code_rows(stage), v_scale_rows(stage), max(unmasked_end - tile0, 0),
                                          k_end - tile0, ss.v_table, lane);
      __syncwarp();
    }
    if constexpr (T::kVFold) {
      // The tile's largest scale byte per block over its 32 keys (lane = key) raises the block's reference, and its
      // O columns are rescaled to it. A NaN scale (0xFF) left here is at a key every row sees (the others were zeroed
      // above): the block's channels become NaN after the loop, and its codes and scale 0 in the stage.
      uint32_t w[(kFoldBlocks + 3) / 4];
      v_scale_words(stage, lane, w);
      bool nan = false;
#pragma unroll
      for (int i = 0; i < (kFoldBlocks + 3) / 4; ++i) nan |= ((~w[i] - 0x01010101u) & w[i] & 0x80808080u) != 0;
      if (__any_sync(0xffffffffu, nan)) {
        uint32_t mine = 0;
        uint8_t* row = v_scale_rows(stage) + lane * v_row_scales;
#pragma unroll
        for (int blk = 0; blk < kFoldBlocks; ++blk) {
          if (row[blk] != 0xFF) continue;
          mine |= 1u << blk;
          row[blk] = 0;
          *reinterpret_cast<uint4*>(v_code_rows(stage) + frag::stage_offset(v_row_bytes, lane * v_row_bytes + 16 * blk, kLdm)) =
              make_uint4(0, 0, 0, 0);
        }
        v_nan |= __reduce_or_sync(0xffffffffu, mine);
        v_scale_words(stage, lane, w);
        __syncwarp();
      }
      int m[kFoldBlocks], ref[kFoldBlocks];
      bool raise = false;
#pragma unroll
      for (int blk = 0; blk < kFoldBlocks; ++blk) {
        m[blk] = int(__reduce_max_sync(0xffffffffu, (w[blk / 4] >> (8 * (blk % 4))) & 0xFFu));
        ref[blk] = v_ref[blk];
        raise |= m[blk] > ref[blk];
      }
      if (raise) {  // warp-uniform, and rare once the references settle
        __syncwarp();  // every lane has read v_ref before lane 0 writes it
#pragma unroll
        for (int blk = 0; blk < kFoldBlocks; ++blk) {
          if (m[blk] <= ref[blk]) continue;
          const float f = __uint_as_float(uint32_t(max(127 + ref[blk] - m[blk], 0)) << 23);  // 2^(old - new), or 0
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
#pragma unroll
            for (int q = 0; q < 4; ++q) o[2 * blk + hh][q] *= f;
          if (lane == 0) v_ref[blk] = m[blk];  // <= 254
        }
        __syncwarp();
      }
    }

    // S^T = K Q^T, one 16-key m-tile at a time: keys g and g+8 of it are this lane's key groups 2mt, 2mt+1.
    float s[T::kPvSteps][4];
    if constexpr (T::kKAfter) {
      // E8M0 scales after the MMA: the two k-steps of each block into its own accumulator, then S^T = sum over blocks
      // of the accumulator times the key's scale (FP32, the table's: 2^-127 and NaN as they are).
#pragma unroll
      for (int mt = 0; mt < T::kPvSteps; ++mt) {
        uint32_t sc[2][(kKBlocks + 3) / 4];
#pragma unroll
        for (int h = 0; h < 2; ++h) scale_words<kKBlocks>(k_scale_rows(stage) + (16 * mt + 8 * h + g) * k_row_scales, sc[h]);
        float x[4] = {};
#pragma unroll
        for (int blk = 0; blk < kKBlocks; ++blk) {
          uint32_t kw[2];  // word t of the block of keys 16mt + g, 16mt + 8 + g
          ptx::ldmatrix_x2_b16(kw, k_code_rows(stage) + (k_ldm ^ 16 * blk) + 16 * mt * k_row_bytes);
          uint32_t pr[2][4];  // channel pairs (0, 2), (4, 6), (1, 3), (5, 7) of the word: two k-steps' A fragments
#pragma unroll
          for (int h = 0; h < 2; ++h) e2m1x8_to_f16(kw[h], pr[h]);
          float acc[4] = {};
#pragma unroll
          for (int jj = 0; jj < 2; ++jj) {
            const int ks = 2 * blk + jj;
            const uint32_t a[4] = {pr[0][2 * jj], pr[1][2 * jj], pr[0][2 * jj + 1], pr[1][2 * jj + 1]};
            const uint32_t bq[2] = {qw[2 * ks], qw[2 * ks + 1]};
            ptx::mma_m16n8k16_row_col_f32_f16(acc, a, bq, acc);
          }
#pragma unroll
          for (int r = 0; r < 4; ++r) x[r] = fmaf(acc[r], ss.k_table.scale[(sc[r / 2][blk / 4] >> (8 * (blk % 4))) & 0xFFu], x[r]);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) s[mt][r] = x[r] * c_row[r % 2];
      }
    } else if constexpr (kKF16) {  // FP16 MMAs, a code word (eight channels) of each key at a time
#pragma unroll
      for (int mt = 0; mt < T::kPvSteps; ++mt) {
        float acc[T::kKChains][4] = {};
        constexpr int kParts = T::kKParts, kN = KT::kChannels / kParts, kW = KT::kWords / kParts;
        constexpr int kSteps = T::kKSteps / kParts, kF = kN >= KT::kBlock ? kN / KT::kBlock : 1;
        uint32_t raw[2][KT::kWords], sc[2];  // keys g, g+8
#pragma unroll
        for (int h = 0; h < 2; ++h) k_raw_of(stage, 2 * mt + h, raw[h]), sc[h] = k_scales_of(stage, 2 * mt + h);
#pragma unroll
        for (int part = 0; part < kParts; ++part) {
          uint32_t factor[2][kF];  // the part's UE4M3 scales, one per block of each key
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int f = 0; f < kF; ++f)
              factor[h][f] = ue4m3_f16x2_factor(scale_byte<KT::kChannels, KT::kBlock>(sc[h], part * kN + f * KT::kBlock));
#pragma unroll
          for (int w = 0; w < kN / 8; ++w) {
            uint32_t pr[2][4];  // the word's four pairs: two k-steps' A fragments
#pragma unroll
            for (int h = 0; h < 2; ++h)
              e2m1x8_to_f16_scaled(raw[h][kW * part + w], factor[h][kN >= KT::kBlock ? 8 * w / KT::kBlock : 0], pr[h]);
#pragma unroll
            for (int jj = 0; jj < 2; ++jj) {
              const int ks = kSteps * part + 2 * w + jj;
              const uint32_t a[4] = {pr[0][2 * jj], pr[1][2 * jj], pr[0][2 * jj + 1], pr[1][2 * jj + 1]};
              const uint32_t bq[2] = {qw[2 * ks], qw[2 * ks + 1]};
              float(&c)[4] = acc[ks % T::kKChains];
              ptx::mma_m16n8k16_row_col_f32_f16(c, a, bq, c);
            }
          }
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          float x = 0.0f;
#pragma unroll
          for (int ch = 0; ch < T::kKChains; ++ch) x += acc[ch][r];
          s[mt][r] = x * c_row[r % 2];
        }
      }
    } else {
#pragma unroll
      for (int mt = 0; mt < T::kPvSteps; ++mt) {
        float acc[T::kKChains][4] = {};
        // The lane's channels in T::kKParts parts, each decoded just before its MMAs (as V's below).
        constexpr int kParts = T::kKParts, kN = KT::kChannels / kParts, kW = KT::kWords / kParts;
        constexpr int kSteps = T::kKSteps / kParts;
        static_assert(kParts == 1 || KT::kBytes % (4 * kParts) == 0, "a part is whole code words");
#pragma unroll
        for (int part = 0; part < kParts; ++part) {
          uint32_t kb[2][kN / 2];  // keys g, g+8: channel pairs (t*D/4 + kN part + 2w, 2w+1)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            uint32_t raw[KT::kWords];
            k_raw_of(stage, 2 * mt + h, raw);
            decode_k<KT::kCodec, KT::kBits, KT::kBlock, kN>(*reinterpret_cast<const uint32_t(*)[kW]>(&raw[kW * part]),
                                                            k_scales_of(stage, 2 * mt + h) >> (8 * (part * kN / KT::kBlock)),
                                                            ss.k_table, kb[h]);
          }
#pragma unroll
          for (int j = 0; j < kSteps; ++j) {
            const int ks = kSteps * part + j;
            const uint32_t a[4] = {kb[0][2 * j], kb[1][2 * j], kb[0][2 * j + 1], kb[1][2 * j + 1]};
            const uint32_t bq[2] = {qw[2 * ks], qw[2 * ks + 1]};
            float(&c)[4] = acc[ks % T::kKChains];
            ptx::mma_m16n8k16_row_col_f32_bf16(c, a, bq, c);
          }
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          float x = 0.0f;
#pragma unroll
          for (int ch = 0; ch < T::kKChains; ++ch) x += acc[ch][r];
          s[mt][r] = x * scale_log2;
        }
      }
    }
    if (tile0 + T::kTileKeys > unmasked_end) {  // warp-uniform: only a split's or a causal row's last tiles
#pragma unroll
      for (int mt = 0; mt < T::kPvSteps; ++mt)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int key = tile0 + 16 * mt + g + 8 * (r / 2);
          if (!(key < key_end[r % 2] && key < k_end)) s[mt][r] = -INFINITY;
        }
    }
    float rescale[2];
    sm.update(s, rescale);
    // Once the running maxima settle, most tiles leave them unchanged: skip the rescale then.
    if (__any_sync(0xffffffffu, rescale[0] != 1.0f || rescale[1] != 1.0f)) {
#pragma unroll
      for (int i = 0; i < T::kDimTiles; ++i) {
        o[i][0] *= rescale[0], o[i][1] *= rescale[1];
        o[i][2] *= rescale[0], o[i][3] *= rescale[1];
      }
    }

    // O^T += V^T P^T. P^T's B fragment (keys 2t+h, 8+2t+h of row g) is S^T's (keys g, g+8 of rows
    // 2t, 2t+1) transposed, one 8x8 half at a time.
    if constexpr (T::kVFold) {
      // E2M1 values with E8M0 scales: FP16 MMAs per block of channels, P^T (P * 2^15, as for kVF16) for block b times
      // its keys' factors (v_f of lanes 16kk + 2t, 16kk + 2t + 8), the codes converted without a multiply. v_f: the
      // factors 2^(e - v_ref) of keys lane and lane ^ 1 as FP16 pairs (at an even lane: keys lane, lane + 1, P^T's two
      // keys in a register); computed here rather than with the references, so as not to hold them through S.
      uint32_t v_f[kFoldBlocks];
      {
        uint32_t w[(kFoldBlocks + 3) / 4];
        v_scale_words(stage, lane, w);
#pragma unroll
        for (int blk = 0; blk < kFoldBlocks; ++blk) {
          const int e = int((w[blk / 4] >> (8 * (blk % 4))) & 0xFFu);
          const float f = __uint_as_float(uint32_t(max(e - v_ref[blk] + 127, 0)) << 23);  // below 2^-126: 0
          v_f[blk] = pack_f16x2(f, __shfl_xor_sync(0xffffffffu, f, 1));
        }
      }
      // (At head dim 256 the 16-key halves run as a loop, P picked by selects: fully unrolled, the eight blocks' code
      // outgrew the instruction cache, bench/decode_notes.md.)
      static_assert(T::kPvSteps == 2, "two 16-key halves a tile");
      constexpr int kUnrollKk = kFoldBlocks == 8 ? 1 : 2;
#pragma unroll kUnrollKk
      for (int kk = 0; kk < T::kPvSteps; ++kk) {
        auto p = [&](int r) { return kk == 0 ? s[0][r] : s[1][r]; };
        const uint32_t pt[2] = {ptx::movmatrix_m8n8_trans_b16(pack_f16x2(p(0) * 32768.0f, p(1) * 32768.0f)),
                                ptx::movmatrix_m8n8_trans_b16(pack_f16x2(p(2) * 32768.0f, p(3) * 32768.0f))};
#pragma unroll
        for (int q = 0; q < kFoldBlocks / 2; ++q) {
          uint32_t x[4];  // keys 16kk + 0..7 and 8..15 of block 2q, then of block 2q + 1
          ptx::ldmatrix_x4_trans_b16(x, v_code_rows(stage) + (v_ldm ^ 32 * q) + 16 * kk * v_row_bytes);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int blk = 2 * q + h;
            uint32_t bp[2];
#pragma unroll
            for (int k = 0; k < 2; ++k) bp[k] = f16x2_mul(pt[k], __shfl_sync(0xffffffffu, v_f[blk], 16 * kk + 2 * t + 8 * k));
            uint32_t lo[4], hi[4];  // keys (2t, 2t+1) and (2t+8, 2t+9) at channels 0, 2, 1, 3 of the lane's four
            e2m1_key_pair_to_f16(x[2 * h], lo);
            e2m1_key_pair_to_f16(x[2 * h + 1], hi);
            const uint32_t a0[4] = {lo[0], lo[2], hi[0], hi[2]}, a1[4] = {lo[1], lo[3], hi[1], hi[3]};
            ptx::mma_m16n8k16_row_col_f32_f16(o[2 * blk], a0, bp, o[2 * blk]);
            ptx::mma_m16n8k16_row_col_f32_f16(o[2 * blk + 1], a1, bp, o[2 * blk + 1]);
          }
        }
      }
    } else if constexpr (kVF16) {
      // E2M1 values with UE4M3 scales: FP16 MMAs, P in FP16 times 2^15 (O in units of 2^-9, v_unit). (E8M0 values
      // in FP16 would need a reference per channel block over the tile's keys: measured, its shuffles and votes on
      // each tile's path cost more than the route saved, bench/decode_notes.md.)
#pragma unroll
      for (int kk = 0; kk < T::kPvSteps; ++kk) {
        const uint32_t bp[2] = {ptx::movmatrix_m8n8_trans_b16(pack_f16x2(s[kk][0] * 32768.0f, s[kk][1] * 32768.0f)),
                                ptx::movmatrix_m8n8_trans_b16(pack_f16x2(s[kk][2] * 32768.0f, s[kk][3] * 32768.0f))};
        uint32_t raw[4][VT::kWords];
#pragma unroll
        for (int r = 0; r < 4; ++r) v_raw_of(stage, kk, r, raw[r]);
        constexpr int kParts = T::kVParts, kN = VT::kChannels / kParts, kW = VT::kWords / kParts;
        constexpr int kTiles = T::kDimTiles / kParts;
#pragma unroll
        for (int part = 0; part < kParts; ++part) {
          auto codes = [&](int r) -> const uint32_t(&)[kW] { return *reinterpret_cast<const uint32_t(*)[kW]>(&raw[r][kW * part]); };
          auto scales = [&](int r) { return v_scales_of(stage, kk, r) >> (8 * (part * kN / VT::kBlock)); };
          uint32_t vb[2][kN];  // keys (2t, 2t+1) and (2t+8, 2t+9) at channel g*D/8 + kN part + i
          decode_v_pair_e2m1_f16<VT::kBlock, kN>(codes(0), scales(0), codes(1), scales(1), vb[0]);
          decode_v_pair_e2m1_f16<VT::kBlock, kN>(codes(2), scales(2), codes(3), scales(3), vb[1]);
#pragma unroll
          for (int j = 0; j < kTiles; ++j) {
            const uint32_t av[4] = {vb[0][2 * j], vb[0][2 * j + 1], vb[1][2 * j], vb[1][2 * j + 1]};
            float(&oi)[4] = o[kTiles * part + j];
            ptx::mma_m16n8k16_row_col_f32_f16(oi, av, bp, oi);
          }
        }
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < T::kPvSteps; ++kk) {
        const uint32_t bp[2] = {ptx::movmatrix_m8n8_trans_b16(pack_bf16x2(s[kk][0], s[kk][1])),
                                ptx::movmatrix_m8n8_trans_b16(pack_bf16x2(s[kk][2], s[kk][3]))};
        uint32_t raw[4][VT::kWords];
#pragma unroll
        for (int r = 0; r < 4; ++r) v_raw_of(stage, kk, r, raw[r]);
        // The lane's channels in T::kVParts parts, each decoded just before its MMAs (fewer live registers).
        constexpr int kParts = T::kVParts, kN = VT::kChannels / kParts, kW = VT::kWords / kParts;
        constexpr int kTiles = T::kDimTiles / kParts;
        static_assert(kParts == 1 || VT::kBytes % (4 * kParts) == 0, "a part is whole code words");
#pragma unroll
        for (int part = 0; part < kParts; ++part) {
          auto codes = [&](int r) -> const uint32_t(&)[kW] { return *reinterpret_cast<const uint32_t(*)[kW]>(&raw[r][kW * part]); };
          auto scales = [&](int r) { return v_scales_of(stage, kk, r) >> (8 * (part * kN / VT::kBlock)); };
          uint32_t vb[2][kN];  // keys (2t, 2t+1) and (2t+8, 2t+9) at channel g*D/8 + kN part + i
          decode_v_pair<VT::kCodec, VT::kBits, VT::kBlock, kN>(codes(0), scales(0), codes(1), scales(1), ss.v_table, vb[0]);
          decode_v_pair<VT::kCodec, VT::kBits, VT::kBlock, kN>(codes(2), scales(2), codes(3), scales(3), ss.v_table, vb[1]);
#pragma unroll
          for (int j = 0; j < kTiles; ++j) {
            const uint32_t av[4] = {vb[0][2 * j], vb[0][2 * j + 1], vb[1][2 * j], vb[1][2 * j + 1]};
            float(&oi)[4] = o[kTiles * part + j];
            ptx::mma_m16n8k16_row_col_f32_bf16(oi, av, bp, oi);
          }
        }
      }
    }
    stage = stage + 1 == kStages ? 0 : stage + 1;
  }
  ptx::cp_async_wait_group<0>();
  if (__any_sync(0xffffffffu, partial_bad)) {
    // A non-finite V among the keys only some rows see (zeroed in the stage): NaN in the channels of the rows
    // that see it, read again from the cache (at most q_len - 1 keys; never on finite caches).
    // Bit 2i + h of nan_of[c]: channel slot (i, g + 8h) of row 2t + c (o[i][2h + c]) must be NaN.
    static_assert(2 * T::kDimTiles <= 32, "a bit per channel slot");
    uint32_t nan_of[2] = {0, 0};
    for (int key = unmasked_end; key < k_end; ++key) {
      const int64_t row = row_of(key);
#pragma unroll 1
      for (int slot = 0; slot < 2 * T::kDimTiles; ++slot) {
        const int d = T::o_channel(slot / 2, g + 8 * (slot % 2));
        const float x = element_at<VT::kBits>(kv.v.codes + row * v_row_bytes, d, ss.v_table) *
                        ss.v_table.scale[kv.v.scales[row * v_row_scales + d / VT::kBlock]];
        if (isfinite(x)) continue;
#pragma unroll
        for (int c = 0; c < 2; ++c)
          if (key < key_end[c]) nan_of[c] |= 1u << slot;
      }
    }
#pragma unroll
    for (int i = 0; i < T::kDimTiles; ++i)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (nan_of[q % 2] >> (2 * i + q / 2) & 1) o[i][q] = NAN;
  }

  if constexpr (T::kVFold) {
    // A NaN scale at a key every row saw: its block's channels are NaN (P > 0 or not: 0 x NaN is NaN).
#pragma unroll
    for (int i = 0; i < T::kDimTiles; ++i)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (v_nan >> (i / 2) & 1) o[i][q] = NAN;
  }

  // Combine the warps: per-warp partials (decode_traits.h combine_at), then one normalized partial per row.
  sm.finish();
  __syncthreads();  // every warp is done with its stages: the union becomes the combine buffer
  auto& cb = ss.combine;
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    if (g == 0) cb.row_max[warp][2 * t + c] = sm.row_max[c], cb.row_sum[warp][2 * t + c] = sm.row_sum[c];
#pragma unroll
    for (int i = 0; i < T::kDimTiles; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        cb.o[warp][2 * t + c][T::combine_at(frag::pvt_channel(D, i, g + 8 * h))] =
            T::kVFold ? o[i][2 * h + c] * __uint_as_float(uint32_t(v_ref[i / 2] - 9) << 23)  // 2^(v_ref - 136)
            : kVF16   ? o[i][2 * h + c] * v_unit
                      : o[i][2 * h + c];
  }
  __syncthreads();
  // Per row, a warp finds the block's max and each warp's weight (exp2 of its max's offset, over the
  // row's sum), and writes the row's log-sum-exp; then every thread weighs the warps' outputs.
  const int64_t part_row0 = (int64_t(b) * kv.heads_kv + hk) * p.rows;
  static_assert(T::kWarps <= 32, "a lane per warp");
  for (int r = warp; r < T::kRows; r += T::kWarps) {
    const float mw = lane < T::kWarps ? cb.row_max[lane][r] : -INFINITY;
    float m = mw;
#pragma unroll
    for (int mask = 16; mask > 0; mask /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, mask));
    const float f = mw == -INFINITY ? 0.0f : exp2f(mw - m);  // m is finite where mw is
    float l = lane < T::kWarps ? f * cb.row_sum[lane][r] : 0.0f;
#pragma unroll
    for (int mask = 16; mask > 0; mask /= 2) l += __shfl_xor_sync(0xffffffffu, l, mask);
    __syncwarp();  // every lane has read its row_sum entry before it is overwritten
    // (l == 0: the row saw no key of the split. A NaN l, a NaN score's, stays NaN in the weights and the
    // log-sum-exp, as in the reference.)
    if (lane < T::kWarps) cb.row_sum[lane][r] = l == 0.0f ? 0.0f : f / l;
    const float lse = l == 0.0f ? -INFINITY : m + log2f(l);
    if (lane == 0 && p.cluster_merge) cb.part_lse[r] = lse;
    else if (lane == 0 && m0 + r < p.rows) p.part_lse[(part_row0 + m0 + r) * p.splits + split] = lse;
  }
  __syncthreads();
  for (int idx = tid; idx < T::kRows * D; idx += T::kThreads) {
    const int r = idx / D, d = idx % D;
    if (m0 + r >= p.rows) continue;
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < T::kWarps; ++w) acc += cb.row_sum[w][r] * cb.o[w][r][T::combine_at(T::combine_pos(d))];
    if (p.cluster_merge) cb.part_o[r][d] = acc;
    else p.part_o[((part_row0 + m0 + r) * p.splits + split) * D + d] = acc;
  }

  if (p.cluster_merge) {
    // The cluster's first block merges every split's partial from its block's shared memory (no round trips
    // through the workspace and its arrival word: 1.1-1.6 us a call, bench/decode_notes.md); the others keep
    // theirs until it has read them.
    ptx::cluster_sync();
    if (ptx::cluster_rank() == 0)
      merge_rows<D, T::kThreads>(
          p.output, p.splits, m0, p.rows, b, hk, kv.heads_kv, p.group, p.q_len, &cb.row_max[0][0],
          [&](int r, int s) { return ptx::ld_cluster_f32(&cb.part_lse[r], s); },
          [&](int r, int s, int d) { return ptx::ld_cluster_f32x2(&cb.part_o[r][d], s); });
    ptx::cluster_sync();
    return;
  }

  // The last block of this (b, hk, query tile) to get here merges the splits (decode_merge.h).
  __threadfence();  // this block's partials are visible to every SM before it is counted
  __syncthreads();
  if (tid == 0) {
    const int64_t group = (int64_t(b) * kv.heads_kv + hk) * gridDim.y + blockIdx.y;
    ss.is_last = arrive(p.output.arrivals + group, p.output.epoch) == uint32_t(p.splits);
  }
  __syncthreads();
  if (!ss.is_last) return;
  __threadfence();
  merge_splits<D, T::kThreads>(p.output, p.part_o, p.part_lse, p.splits, part_row0, m0, p.rows, b, hk, kv.heads_kv,
                               p.group, p.q_len, &cb.row_max[0][0]);
}

}  // namespace mxattn::kernels
