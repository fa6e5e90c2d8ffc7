// Tile sizes, register budgets and shared memory of the Hopper prefill kernel (wgmma, E4M3 operands; in
// the exact mode P and V'^T in BF16).
#pragma once
#include <cstdint>

#include "mxattn/kernels/attention/hopper/fold.h"
#include "mxattn/kernels/attention/hopper/fragment.h"

namespace mxattn::kernels::hopper {

// Exact: the exact mode (api/attention.h PrefillKernel::HopperExact): P V'^T on BF16 operands, P rounded
// to BF16's 8 significant bits instead of E4M3's 4, V' exact in BF16 for every format (NVFP4 too).
template <int HeadDim, bool Exact>
struct Traits {
  static constexpr int kHeadDim = HeadDim;
  static constexpr bool kExact = Exact;
  // One producer warpgroup (one thread of it copies the folded Q, K and V tiles, fold_kernel.h, into
  // shared memory) and two consumer warpgroups of 64 query rows each (wgmma + softmax). A query tile is
  // 128 rows; a block (one per SM) takes query tiles in turn (scheduler.h).
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kBlockM = 64 * kConsumers;
  // Keys per KV tile, and where O's KV tiles add up (accumulate.h). A consumer's 240 registers hold S
  // (64 x kBlockN), P (E4M3) and O. D = 128 holds O twice, the wgmma's share of a tile and the FP32 sum
  // (ORegisters): 128 keys (S 64 + 2 x 64 + P 16 a thread). D = 64 and 256 hold O once and sum it in
  // shared memory (OShared), which moves a group of channels there a tile, each group every kOSumKeys:
  // D = 64 256 keys (128 + 32 + 32), D = 256 64 keys (32 + 128 + 8). Without an LSE, 4 more for P's row
  // sums (mainloop.h mma_pv). More keys a tile spread the per-tile costs (maxima shuffles, turns,
  // barrier waits) wider. (H200, 16k keys: D = 128 at 192 keys summing on in the accumulator, which is
  // wrong on long rows (accumulate.h), was 10% faster; D = 64 at 192 keys with O twice 4% slower, 10%
  // at 1k.)
  // The exact mode's P takes twice the registers (BF16) and its wgmma accumulate in FP32 (accumulate.h
  // OPlain: O once): D = 64 at 192 keys (S 96 + O 32 + P 48; 256 keys spilled 184 bytes). (H200, D = 64,
  // same call: 192 keys against 128 +14% at 16k, +9% at 4k, -4% at 1k. D = 128 at 192 keys: its stages no
  // longer fit three deep, and with two it was 0.72x.)
  static constexpr int kBlockN = HeadDim == 256 ? 64 : HeadDim == 128 ? 128 : Exact ? 192 : 256;
  static constexpr bool kOShared = !Exact && HeadDim != 128;
  static constexpr int kOSumKeys = 512;
  static constexpr int kOSumGroups = kOSumKeys / kBlockN;
  // Q buffers: the next query tile lands while the consumers work on this one; at D = 256 O's sum takes
  // the second buffer's shared memory.
  static constexpr int kQBuffers = HeadDim == 256 && kOShared ? 1 : 2;
  // Three stages: in its turn a warpgroup waits for tile n+1's K, whose stage the other warpgroup
  // released only as its wgmma of tile n-1 completed (WgTurns, mainloop.h).
  static constexpr int kStages = 3;
  // setmaxnreg budgets. The block starts with kLaunchRegs a thread (__launch_bounds__(kThreads, 1):
  // the register file split evenly, in steps of 8), and setmaxnreg only moves registers between its
  // warps: a consumer's setmaxnreg.inc waits until the producer's .dec has freed enough, forever if the
  // budgets ask for more than the block holds. The producer issues two bulk copies a tile; consumers
  // hold S, O, and P while the previous tile's P V'^T runs.
  static constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= kThreads * kLaunchRegs,
                "setmaxnreg budgets exceed the block's registers: the consumers would wait forever");
  static_assert(HeadDim == 64 || HeadDim == 128 || HeadDim == 256, "head_dim must be 64, 128 or 256");

  // Bytes of a P and V'^T element: E4M3, or BF16 in the exact mode (a k16 step of BF16 is 32 bytes of a
  // row, as a k32 step of E4M3: the tiles, swizzles and descriptors are the same in bytes).
  static constexpr int kPvBytes = Exact ? 2 : 1;

  using QTile = frag::KMajorTile<kBlockM, HeadDim>;              // Q' rows, contraction over D
  using KTile = frag::KMajorTile<kBlockN, HeadDim>;              // K' rows (keys), contraction over D
  using VTile = frag::KMajorTile<HeadDim, kBlockN * kPvBytes>;   // V'^T rows (channels), contraction over keys
  // A row of ones (and 7 of zeros) beside V'^T: P times it is the row sum of P, on the tensor cores.
  using OnesTile = frag::KMajorTile<8, kBlockN * kPvBytes>;
  // Where O's accumulator takes each tile's share afresh (accumulate.h ORegisters: D = 128), the ones tile's
  // rows follow V'^T's in every stage and one wgmma of N = D + 8 makes O's share and P's row sums
  // (mainloop.h mma_pv); elsewhere a wgmma of N = 8 beside each of P V'^T's, over one ones tile.
  static constexpr bool kSumsInPv = !Exact && !kOShared;
  static constexpr int kVStageBytes = VTile::kBytes + (kSumsInPv ? OnesTile::kBytes : 0);
};

// Named barriers (0 is __syncthreads), one of each per consumer warpgroup (the id plus its index): its
// turn on the tensor cores (mainloop.h WgTurns); its O stage written, and free again (store.h).
enum class NamedBarrier : uint32_t { Turn = 4, OStageFull = 6, OStageFree = 8 };
__device__ __forceinline__ uint32_t barrier_id(NamedBarrier b, int wg) { return uint32_t(b) + uint32_t(wg); }

// Barriers between the producer and the consumers, per stage: K ready, V ready, stage free.
struct StageBarriers {
  uint64_t k_full, v_full, empty;
};
// Per Q buffer: the query tile (with its factors) ready, the buffer free.
struct QBarriers {
  uint64_t full, empty;
};

// A place in the ring of stages: the stage, and the parity of the phase its barriers are in there
// (flips each time round the ring). Counted along, not divided out of the tile index per use.
template <int kStages>
struct RingPos {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    const bool wrap = stage == kStages - 1;  // selects, not a branch
    stage = wrap ? 0 : stage + 1;
    phase ^= wrap;
  }
};

// O's sum in shared memory (accumulate.h OShared): per consumer warpgroup, per thread, its D / 2 values in
// BF16, 16 bytes (8 values) at a time, thread after thread (a warp's 16-byte accesses are contiguous).
template <typename T, bool kOShared = T::kOShared>
struct OSharedStorage {
  __device__ uint4* of_thread(int, int) { return nullptr; }
};
template <typename T>
struct OSharedStorage<T, true> {
  alignas(16) uint4 sum[T::kConsumers][T::kHeadDim / 16][128];
  __device__ uint4* of_thread(int wg, int thread) { return &sum[wg][0][thread]; }
};

// The ones tile (Traits::OnesTile) where it is not part of the stages.
template <typename T, bool kOwn = !T::kSumsInPv>
struct OnesStorage {
  __device__ uint8_t* tile() { return nullptr; }
};
template <typename T>
struct OnesStorage<T, true> {
  alignas(1024) uint8_t ones[T::OnesTile::kBytes];
  __device__ uint8_t* tile() { return ones; }
};

// O's stage (epilogue.h, store.h): per consumer warpgroup, its 64 rows of O in the output's 16-bit type,
// as 64-channel panels of 64 rows x 128 bytes, 128-byte swizzled (the tensor map's box; stmatrix's rows of
// 16 bytes then land in 8 different bank groups).
template <int HeadDim, int Consumers, bool kStaged>
struct OStageStorage {};
template <int HeadDim, int Consumers>
struct OStageStorage<HeadDim, Consumers, true> {
  using Tile = frag::KMajorTile<64, 2 * HeadDim>;
  alignas(1024) uint8_t o[Consumers][Tile::kBytes];
};

// Q terms: 1 for MX Q (its folded E4M3 tile); 2 for dense BF16/FP16 Q, held as two E4M3 tiles whose sum
// is the row (fold_kernel.h), so S = Q'_hi K'^T + Q'_lo K'^T. kOStaged: whether O's stage is part of it.
template <int HeadDim, bool Exact, int QTerms, bool kOStaged>
struct SharedStorageOf {
  using T = Traits<HeadDim, Exact>;
  static constexpr int kQBuffers = T::kQBuffers;
  alignas(1024) uint8_t q[kQBuffers][QTerms * T::QTile::kBytes];
  alignas(1024) uint8_t k[T::kStages][T::KTile::kBytes];
  alignas(1024) uint8_t vt[T::kStages][T::kVStageBytes];  // V'^T (and, kSumsInPv, the ones tile after it)
  alignas(16) float q_scale[kQBuffers][T::kBlockM];  // per query row: 2^(reference exponent) of its folded row
  alignas(16) float v_factor[kQBuffers][HeadDim];    // V's channel factors of the query tile's KV head
  alignas(16) int v_nan_key[kQBuffers][HeadDim];     // and each channel's first key in a NaN block
  alignas(16) float k_factor[T::kStages][4];         // the aligned group of 4 K' tile factors holding the stage's
  int q_tile[kQBuffers];                             // the scheduler's index of the tile in the buffer
  StageBarriers bar[T::kStages];
  QBarriers q_bar[kQBuffers];
  OSharedStorage<T> o_sum;
  OnesStorage<T> ones;
  OStageStorage<HeadDim, T::kConsumers, kOStaged> o_stage;
};

// O leaves through its stage at D = 128 where it fits beside the tiles (not the exact mode's dense Q); elsewhere
// each consumer thread stores its part of O itself (epilogue.h). (H200, MXFP8 / MXFP4 16/16/128, against the
// stores from registers, 4 rounds in one call: 1k +5%, causal 1k +6-9%, 4k +3%, 16k equal; bench/prefill_notes.md
// v33. At D = 64, with the same loop's instruction count, 5-17% slower in three builds; at D = 256 O's sums take
// the room.)
template <int HeadDim, bool Exact, int QTerms>
inline constexpr bool kOStaged =
    HeadDim == 128 && sizeof(SharedStorageOf<HeadDim, Exact, QTerms, true>) + 1024 <= 227 * 1024;
template <int HeadDim, bool Exact, int QTerms>
using SharedStorage = SharedStorageOf<HeadDim, Exact, QTerms, kOStaged<HeadDim, Exact, QTerms>>;

}  // namespace mxattn::kernels::hopper
