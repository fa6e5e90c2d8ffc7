// Tile sizes and shared memory of the portable prefill kernel (mma.sync m16n8k16, BF16 operands).
#pragma once
#include <cuda_bf16.h>

#include "mxattn/kernels/attention/dequant.h"

namespace mxattn::kernels {

template <int HeadDim>
struct PrefillTraits {
  static constexpr int kHeadDim = HeadDim;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kBlockM = 16 * kWarps;  // one m16 MMA tile of query rows per warp
  static constexpr int kBlockN = 64;           // keys per KV tile
  // Rows padded by 16 bytes: successive rows start 4 banks apart, so the 8 row addresses of an
  // ldmatrix phase hit distinct banks.
  static constexpr int kPad = 8;
  static constexpr int kQkStride = kHeadDim + kPad;  // bf16 elements per Q/K row
  static constexpr int kVtStride = kBlockN + kPad;   // bf16 elements per V^T row (one channel)
  static constexpr int kKSteps = kHeadDim / 16;      // MMA k-steps of Q K^T
  static constexpr int kKeyTiles = kBlockN / 8;      // n-tiles of S
  static constexpr int kDimTiles = kHeadDim / 8;     // n-tiles of O
  static constexpr int kChunk = 16;                  // elements one thread decodes at a time
  static_assert(kHeadDim % 64 == 0, "head_dim must be 64, 128 or 256");
};

template <int HeadDim>
struct PrefillShared {
  using T = PrefillTraits<HeadDim>;
  __nv_bfloat16 q[T::kBlockM][T::kQkStride];
  __nv_bfloat16 k[T::kBlockN][T::kQkStride];
  __nv_bfloat16 vt[HeadDim][T::kVtStride];  // V tile channel-major: the [n][k] layout of P V's B operand
  ElementTable q_table, k_table, v_table;
};

}  // namespace mxattn::kernels
