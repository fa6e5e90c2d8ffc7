// Quantize kernels: FP32/FP16/BF16 -> packed codes + block scales, bit-identical to
// reference/quantize.cpp. Two shapes of work:
//   rows:    the block axis is contiguous (Q, K, a KV cache). A thread takes 16 consecutive elements
//            (two 16-byte loads of BF16) and stores their 2*bits code bytes; the `lanes` threads of
//            one block reduce its amax with shuffles.
//   columns: the block axis is strided (prefill V blocked along S). A thread takes a whole block,
//            neighbouring threads take neighbouring rows (= neighbouring addresses), and the block is
//            read twice (amax, then encode; the second read hits L1/L2).
// Both compute each block's scale with Format::block_scale and each code with Element::encode (or a
// route tested equal to it, codecs.h). Tiled scales: the kernels also write the zero padding.
#include <cuda_runtime.h>

#include <algorithm>

#include "mxattn/format/format.h"
#include "mxattn/kernels/codecs.h"
#include "mxattn/kernels/quantize_kernels.h"
#include "mxattn/kernels/tensor_io.h"

namespace mxattn::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 2;  // groups per thread whose loads are in flight together

struct BlockCode {
  uint32_t code;
  float mult;
  bool exact_only;  // a product may be NaN: Element::encode for every element
};

// The element comes from the codec, so that for the named elements its constants (max_value, emax,
// 1 / max_value) fold at compile time inside Format::block_scale.
template <DType T, typename Codec>
__device__ __forceinline__ BlockCode block_code(const QuantizeParams& p, const Codec& codec, uint32_t key,
                                                float s_enc) {
  const bool nonfinite = key >= Input<T>::kInf;
  const Format f{codec.element(), p.format.block, p.format.scale, p.format.rule, p.format.tensor_scale};
  const BlockScale s = f.block_scale(Input<T>::key_to_float(key), nonfinite, s_enc);
  return {s.code, s.mult, nonfinite || !is_finite_bits(s.mult) || !p.fast_codecs};
}

// Block b's scale of row r, and the tiled layout's zero columns after the row's last block.
__device__ __forceinline__ void store_scale(const QuantizeParams& p, uint32_t r, uint32_t b, uint32_t code) {
  const size_t cols = p.blocks;
  p.scales[scale_offset(p.layout, r, b, cols)] = uint8_t(code);
  if (p.layout == ScaleLayout::Tiled128x4 && b + 1 == p.blocks)
    for (size_t c = cols; c < tiled_cols(cols); ++c) p.scales[tiled_offset(r, c, cols)] = 0;
}

template <DType T, typename Codec>
__global__ void __launch_bounds__(kThreads) quantize_rows_kernel(const QuantizeParams p, const Codec codec) {
  constexpr int W = Input<T>::kWords;
  const float s_enc = p.format.tensor_scale ? *p.tensor_scale : 1.0f;
  const int bits = codec.bits();
  const int block = p.format.block;

  uint32_t w[kUnroll][W];
  uint32_t row[kUnroll], group[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const uint32_t item = (blockIdx.x * kUnroll + u) * kThreads + threadIdx.x;
    row[u] = 0xffffffffu, group[u] = 0;
    if (item < p.items) p.groups_padded.divmod(item, row[u], group[u]);
    const bool load = row[u] < p.rows && group[u] < p.groups;
    if (load) {
      load_group<T, true>(p.x, p.row.offset(row[u]), int64_t(group[u]) * kGroup, p.cols, 1, p.vec_load, w[u]);
    } else {
#pragma unroll
      for (int j = 0; j < W; ++j) w[u][j] = 0;
    }
  }

#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const uint32_t r = row[u], g = group[u];
    // Block scales. Threads past the end carry zeros through the shuffles: every lane takes part.
    BlockCode bc[2];
    if (block >= kGroup) {
      uint32_t key = abs_key<T>(w[u], 0, kGroup);
      for (uint32_t o = 1; o < p.lanes; o <<= 1) key = max(key, __shfl_xor_sync(0xffffffffu, key, o));
      bc[0] = bc[1] = block_code<T>(p, codec, key, s_enc);
    } else {  // block 8: two blocks per group
      bc[0] = block_code<T>(p, codec, abs_key<T>(w[u], 0, 8), s_enc);
      bc[1] = block_code<T>(p, codec, abs_key<T>(w[u], 8, 8), s_enc);
    }
    if (r >= p.rows_ext || g >= p.groups) continue;

    if (r < p.rows) {
      const int64_t c0 = int64_t(g) * kGroup;
      const int valid = int(std::min<int64_t>(kGroup, p.cols - c0));
      float v[kGroup];
#pragma unroll
      for (int i = 0; i < kGroup; ++i) v[i] = Input<T>::element(w[u], i) * bc[i / 8].mult;
      uint32_t words[4];
      encode_pack16(codec, v, valid, !(bc[0].exact_only || bc[1].exact_only), words);
      const int64_t byte0 = int64_t(g) * 2 * bits;
      store_bytes(p.codes + int64_t(r) * p.row_bytes + byte0, words, int(std::min<int64_t>(2 * bits, p.row_bytes - byte0)));
    }
    const bool pad_row = r >= p.rows;
    if (block >= kGroup) {
      if (g % p.lanes == 0) store_scale(p, r, g / p.lanes, pad_row ? 0u : bc[0].code);
    } else {
      store_scale(p, r, 2 * g, pad_row ? 0u : bc[0].code);
      if (2 * g + 1 < p.blocks) store_scale(p, r, 2 * g + 1, pad_row ? 0u : bc[1].code);
    }
  }
}

template <DType T, typename Codec>
__global__ void __launch_bounds__(kThreads) quantize_columns_kernel(const QuantizeParams p, const Codec codec) {
  constexpr int W = Input<T>::kWords;
  const uint32_t item = blockIdx.x * kThreads + threadIdx.x;
  if (item >= p.items) return;
  uint32_t b, r;
  p.rows_ext_div.divmod(item, b, r);
  if (r >= p.rows) {
    store_scale(p, r, b, 0);
    return;
  }
  const float s_enc = p.format.tensor_scale ? *p.tensor_scale : 1.0f;
  const int bits = codec.bits();
  const int64_t off = p.row.offset(r);
  const int64_t c0 = int64_t(b) * p.format.block;
  const int64_t end = std::min<int64_t>(p.cols, c0 + p.format.block);

  uint32_t key = 0;
  for (int64_t c = c0; c < end; c += kGroup) {
    uint32_t w[W];
    load_group<T, false>(p.x, off, c, end, p.col_stride, false, w);
    key = max(key, abs_key<T>(w, 0, kGroup));
  }
  const BlockCode bc = block_code<T>(p, codec, key, s_enc);

  uint8_t* out = p.codes + int64_t(r) * p.row_bytes;
  for (int64_t c = c0; c < end; c += kGroup) {
    uint32_t w[W];
    load_group<T, false>(p.x, off, c, end, p.col_stride, false, w);
    float v[kGroup];
#pragma unroll
    for (int i = 0; i < kGroup; ++i) v[i] = Input<T>::element(w, i) * bc.mult;
    const int valid = int(std::min<int64_t>(kGroup, end - c));
    uint32_t words[4];
    encode_pack16(codec, v, valid, !bc.exact_only, words);
    // Blocks are whole bytes (block * bits is a multiple of 8), so this thread owns these bytes.
    store_bytes(out + c * bits / 8, words, (valid * bits + 7) / 8);
  }
  store_scale(p, r, b, bc.code);
}

template <DType T, typename Codec>
cudaError_t launch(const QuantizeParams& p, const Codec& codec, cudaStream_t stream) {
  if (p.items == 0) return cudaSuccess;
  if (p.by_columns) {
    const uint32_t grid = (p.items + kThreads - 1) / kThreads;
    quantize_columns_kernel<T><<<grid, kThreads, 0, stream>>>(p, codec);
  } else {
    const uint32_t per_block = kThreads * kUnroll;
    const uint32_t grid = uint32_t((uint64_t(p.items) + per_block - 1) / per_block);
    quantize_rows_kernel<T><<<grid, kThreads, 0, stream>>>(p, codec);
  }
  return cudaGetLastError();
}

template <DType T>
cudaError_t launch_for_element(const QuantizeParams& p, cudaStream_t stream) {
  const Element e = p.format.elem;
  if (e == CodecE4M3::elem()) return launch<T>(p, CodecE4M3{}, stream);
  if (e == CodecE5M2::elem()) return launch<T>(p, CodecE5M2{}, stream);
  if (e == CodecE2M3::elem()) return launch<T>(p, CodecE2M3{}, stream);
  if (e == CodecE3M2::elem()) return launch<T>(p, CodecE3M2{}, stream);
  if (e == CodecE2M1::elem()) return launch<T>(p, CodecE2M1{}, stream);
  if (e == CodecInt8::elem()) return launch<T>(p, CodecInt8{}, stream);
  return launch<T>(p, CodecRuntime{e}, stream);
}

}  // namespace

cudaError_t launch_quantize(const QuantizeParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case DType::F32: return launch_for_element<DType::F32>(p, stream);
    case DType::F16: return launch_for_element<DType::F16>(p, stream);
    default: return launch_for_element<DType::BF16>(p, stream);
  }
}

}  // namespace mxattn::kernels
