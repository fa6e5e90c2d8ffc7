// Tile sizes, register budgets and shared memory of the Hopper prefill kernel (wgmma, E4M3 operands).
#pragma once
#include <cstdint>

#include "mxattn/kernels/attention/hopper/fold.h"
#include "mxattn/kernels/attention/hopper/fragment.h"

namespace mxattn::kernels::hopper {

template <int HeadDim>
struct Traits {
  static constexpr int kHeadDim = HeadDim;
  // One producer warpgroup (loads, decodes and folds K and V into E4M3 tiles) and two consumer
  // warpgroups of 64 query rows each (wgmma + softmax). A block owns 128 query rows.
  static constexpr int kConsumers = 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kBlockM = 64 * kConsumers;
  // Keys per KV tile: S (64 x kBlockN) and O (64 x D) accumulators share a consumer's registers,
  // so D = 256 takes 64 keys (128 + 32 accumulators a thread), smaller D 128 keys.
  static constexpr int kBlockN = HeadDim == 256 ? 64 : 128;
  static constexpr int kStages = 2;
  // setmaxnreg budgets: 128 * kProducerRegs + 256 * kConsumerRegs <= 65536 registers of the SM.
  // The producer holds two tiles' block scale bytes (16 + 16) and an unrolled fold; consumers hold
  // S, O and P fragments (at 56 / 224 the producer spilled 100-360 bytes; at 80 / 208, 4-32).
  static constexpr int kProducerRegs = 80;
  static constexpr int kConsumerRegs = 208;
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "register file");
  static_assert(HeadDim == 64 || HeadDim == 128 || HeadDim == 256, "head_dim must be 64, 128 or 256");

  // Chunks of 16 elements a producer thread copies and folds per tile, of K and of V alike.
  static constexpr int kChunksPerThread = kBlockN * HeadDim / 16 / 128;

  using QTile = frag::KMajorTile<kBlockM, HeadDim>;   // Q' rows, contraction over D
  using KTile = frag::KMajorTile<kBlockN, HeadDim>;   // K' rows (keys), contraction over D
  using VTile = frag::KMajorTile<HeadDim, kBlockN>;   // V'^T rows (channels), contraction over keys
};

// Barriers between the producer and the consumers, per stage: K ready, V ready, stage free.
struct StageBarriers {
  uint64_t k_full, v_full, empty;
};

template <int HeadDim>
struct SharedStorage {
  using T = Traits<HeadDim>;
  alignas(1024) uint8_t q[T::QTile::kBytes];
  alignas(1024) uint8_t k[T::kStages][T::KTile::kBytes];
  alignas(1024) uint8_t vt[T::kStages][T::VTile::kBytes];
  // Raw codes as copied from global memory, one tile ahead of the fold: a 16-byte slot per chunk of
  // 16 elements (2*bits bytes used), two tiles deep.
  alignas(16) uint8_t raw_k[2][T::kBlockN * HeadDim];
  alignas(16) uint8_t raw_v[2][HeadDim * T::kBlockN];
  // Each producer thread's block scale bytes of the tile being folded (K chunks, then V chunks): loaded
  // into registers with the tile's copies, parked here when the next tile's loads take the registers.
  uint8_t scale_bytes[128][2 * T::kChunksPerThread];
  float k_scale[T::kStages][T::kBlockN];  // per key: 2^(reference exponent) of its folded row
  float q_scale[T::kBlockM];              // per query row, likewise
  float v_scale[HeadDim];                 // per channel: 2^(reference exponent) over the whole sequence
  int v_ref[HeadDim];                     // the channel's reference exponent (E8M0 byte)
  uint16_t q_value[256], k_value[256], v_value[256];  // code -> FP16 bits of the element value
  uint2 e2m1[kE2M1MaxShift - kE2M1MinShift + 1];       // fold.h, E2M1Codes
  StageBarriers bar[T::kStages];
};

}  // namespace mxattn::kernels::hopper
