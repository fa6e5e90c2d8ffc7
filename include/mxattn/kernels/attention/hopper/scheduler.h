// Which query tiles a block of the Hopper prefill kernel takes: one block per SM, each taking a tile at a
// time, so the next tile's Q lands while the block works on this one and one warpgroup's epilogue runs
// beside the other's main loop. The producer draws each tile from a counter in global memory (zeroed
// before the fold), so a block that drew light causal tiles draws more (a fixed round-robin left blocks
// with up to 1.6x the mean work at S = 16k, causal), and blocks that start late, on SMs the fold kept
// longer, take what is left rather than early tiles.
//
// Order: query tiles fastest, then heads, then batch entries: the blocks running at one time share
// their KV head, whose tiles then come from L2. Causal: a head's tiles with the most keys first. A packed
// batch schedules each sequence's own tiles (tile_start, written by the fold).
#pragma once
#include "mxattn/kernels/attention/params.h"

namespace mxattn::kernels::hopper {

struct WorkTile {
  int b, h, m_tile;
  int n_tiles;  // KV tiles it reads: the keys up to its last row's causal limit
  SeqSpan sp;   // its sequence (params.h)
};

template <int BlockM, int BlockN>
struct TileScheduler {
  static constexpr int kBlockM = BlockM;
  int m_tiles, heads, tiles;  // tiles: a packed batch's come from tile_start once the fold has stored it
  bool causal;
  int* counter;  // tiles drawn
  const int* tile_start = nullptr;  // a packed batch's sequences' first tiles (fold_kernel.h), B + 1

  __host__ __device__ TileScheduler(const PrefillParams& p, int* counter)
      : m_tiles((p.seq_q + BlockM - 1) / BlockM), heads(p.heads_q), tiles(m_tiles * p.heads_q * p.batch),
        causal(p.causal), counter(counter) {}

  template <bool kPacked>
  __device__ __forceinline__ WorkTile at(int t, const PrefillParams& p) const {
    if constexpr (kPacked) {
      // Sequence b: the last with tile_start[b] <= t (a sequence without queries has no tiles).
      int lo = 0, hi = p.batch;
      while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        (tile_start[mid] <= t ? lo : hi) = mid;
      }
      const SeqSpan sp = seq_span<true>(p, lo);
      const int mt = sp.bad ? m_tiles : (sp.seq_q + BlockM - 1) / BlockM, local = t - tile_start[lo];
      const int m = local % mt, m_tile = causal ? mt - 1 - m : m;
      return {lo, local / mt, m_tile, (prefill_kv_end(p, sp, m_tile * BlockM, BlockM) + BlockN - 1) / BlockN, sp};
    } else {
      const int m = t % m_tiles, bh = t / m_tiles, m_tile = causal ? m_tiles - 1 - m : m, b = bh / heads;
      const SeqSpan sp = seq_span<false>(p, b);
      return {b, bh % heads, m_tile, (prefill_kv_end(p, sp, m_tile * BlockM, BlockM) + BlockN - 1) / BlockN, sp};
    }
  }
  __device__ __forceinline__ int next() const { return atomicAdd(counter, 1); }
};

}  // namespace mxattn::kernels::hopper
