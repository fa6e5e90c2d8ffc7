// RoadBlock's model (seeds/003, Fig. 2, equations 2-13) of warp-tiled tensor-core tiles and the
// block-scale metadata each thread must hold for a custom MX format (d element bits, w scale bits,
// block size k).
//
// A warp of NT threads holds NR = 8 32-bit registers per operand per thread; elements are packed
// along K into those registers. The register tile is split as evenly as powers of two allow:
//
//   NT   tile_cap  l_g   tileM x tileN x tileK (registers)   NVFP4 metadata/thread
//    4      32      5      8   x   4   x   4                  48 bits
//    8      64      6      8   x   8   x   8                  64 bits
//   16     128      7     16   x   8   x   8                  48 bits
//   32     256      8     16   x  16   x  16                  64 bits  (the paper's example)
//
// tileK counts 32-bit registers; tileK * 32 / d elements, so the number of scale blocks along K,
// and the metadata, may be fractional (a block longer than the tile: its scale is reused over
// several K steps) or not a whole number of elements (d = 6). The equations are kept exact, as
// rationals in doubles; registers() rounds up to what a thread would actually allocate.
#pragma once
#include <bit>
#include <cstdint>

namespace mxattn::explore {

inline constexpr int kRoadblockRegsPerOperand = 8;                 // NR
inline constexpr int kRoadblockThreadsPerWarp[] = {4, 8, 16, 32};  // the NT the paper sweeps
inline constexpr int kRegisterBits = 32;

struct RoadblockTiles {
  int nt = 0;                           // threads per warp
  int tile_cap = 0;                     // (2)  NT * NR registers
  int lg = 0;                           // (3)  log2(tile_cap)
  int tile_m = 0;                       // (4)  2^(lg - floor(lg/2))
  int tile_n = 0;                       // (10) 2^floor(lg/2): tileM for even lg (NT = 8, 32), tileM/2 for odd
  int tile_k = 0;                       // (5)  tile_cap / max(tileM, tileN), in 32-bit registers
  double tile_k_elems = 0;              // (6) tileK * 32 / d
  double blocks_k = 0;                  // (7) tileK_elems / k
  double scale_bits_k = 0;              // (8) blocks_k * w
  double a_metadata_bits = 0;           // (9) tileM * scale_bits_k
  double b_metadata_bits = 0;           // (11) tileN * scale_bits_k
  double total_metadata_bits = 0;       // (12)
  double per_thread_metadata_bits = 0;  // (13) total / NT

  // 32-bit registers per thread for the scales (the paper's f8, f9 for NVFP4 at NT = 32).
  constexpr int registers() const {
    const double r = per_thread_metadata_bits / kRegisterBits;
    const int whole = int(r);
    return whole + (r > double(whole) ? 1 : 0);
  }
};

// Equations 2-13 for NT threads (a power of two), d element bits, w scale bits, block size k.
constexpr RoadblockTiles roadblock_tiles(int nt, int d, int w, int k, int nr = kRoadblockRegsPerOperand) {
  RoadblockTiles t;
  t.nt = nt;
  t.tile_cap = nt * nr;
  t.lg = std::bit_width(unsigned(t.tile_cap)) - 1;
  t.tile_m = 1 << (t.lg - t.lg / 2);
  t.tile_n = 1 << (t.lg / 2);
  t.tile_k = t.tile_cap / (t.tile_m > t.tile_n ? t.tile_m : t.tile_n);
  t.tile_k_elems = double(t.tile_k) * kRegisterBits / d;
  t.blocks_k = t.tile_k_elems / k;
  t.scale_bits_k = t.blocks_k * w;
  t.a_metadata_bits = t.tile_m * t.scale_bits_k;
  t.b_metadata_bits = t.tile_n * t.scale_bits_k;
  t.total_metadata_bits = t.a_metadata_bits + t.b_metadata_bits;
  t.per_thread_metadata_bits = t.total_metadata_bits / nt;
  return t;
}

// The paper's closed form of (13): 512 w / (d k) where tileN = tileM (NT = 8, 32; even l_g),
// 384 w / (d k) where tileN = tileM / 2 (NT = 4, 16). Holds for NR = 8 only.
constexpr double roadblock_per_thread_closed_form(int nt, int d, int w, int k) {
  const bool square = (std::bit_width(unsigned(nt * kRoadblockRegsPerOperand)) - 1) % 2 == 0;
  return (square ? 512.0 : 384.0) * w / (double(d) * k);
}

}  // namespace mxattn::explore
