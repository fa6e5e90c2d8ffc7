// Which query tiles a block of the Hopper prefill kernel takes: one block per SM, each taking a tile at a
// time, so the next tile's Q lands while the block works on this one and one warpgroup's epilogue runs
// beside the other's main loop. Block i starts with tile i; then the producer draws the next tile from
// a counter in global memory (the pre-pass zeroes it), so a block that drew light causal tiles draws
// more: a fixed round-robin left blocks with up to 1.6x the mean work at S = 16k, causal.
//
// Order: query tiles fastest, then heads, then batch entries: the blocks running at one time share
// their KV head, whose tiles then come from L2. Causal: a head's tiles with the most keys first. In a
// packed batch the tiles run to the longest sequence's; a shorter one's tiles past its rows are empty.
#pragma once
#include "mxattn/kernels/attention/params.h"

namespace mxattn::kernels::hopper {

struct WorkTile {
  int b, h, m_tile;
  int n_tiles;  // KV tiles it reads: the keys up to its last row's causal limit (0 past its sequence's rows)
  SeqSpan sp;   // its sequence (params.h)
};

template <int BlockM, int BlockN>
struct TileScheduler {
  int m_tiles, heads, tiles;
  bool causal;
  int* counter;  // tiles drawn past the first gridDim.x

  __host__ __device__ TileScheduler(const PrefillParams& p, int* counter)
      : m_tiles((p.seq_q + BlockM - 1) / BlockM), heads(p.heads_q), tiles(m_tiles * p.heads_q * p.batch),
        causal(p.causal), counter(counter) {}

  template <bool kPacked>
  __device__ __forceinline__ WorkTile at(int t, const PrefillParams& p) const {
    const int m = t % m_tiles, bh = t / m_tiles, m_tile = causal ? m_tiles - 1 - m : m, b = bh / heads;
    const SeqSpan sp = seq_span<kPacked>(p, b);
    const int m0 = m_tile * BlockM;
    const int n_tiles = m0 < sp.seq_q ? (prefill_kv_end(p, sp, m0, BlockM) + BlockN - 1) / BlockN : 0;
    return {b, bh % heads, m_tile, n_tiles, sp};
  }
  __device__ __forceinline__ int next() const { return int(gridDim.x) + atomicAdd(counter, 1); }
};

}  // namespace mxattn::kernels::hopper
