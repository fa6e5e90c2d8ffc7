// GPU quantize / dequantize / scale-layout kernels against the CPU reference, byte for byte.
// Outputs are poisoned (0xAB) before each launch, so a byte the kernel forgot shows up.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>

#include "gpu_test_util.h"
#include "mxattn/api/quantize.h"
#include "mxattn/reference/quantize.h"
#include "shapes.h"

namespace mxattn::test {
namespace {

const char* const kFormats[] = {
    "mxfp8", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4",
    "mxfp8/floor", "mxfp8_e5m2/floor", "mxfp6_e2m3/floor", "mxfp6_e3m2/floor", "mxfp4/floor", "mxint8/floor",
    "e3m2/k16/ue8m0", "int4/k32/ue8m0/floor", "e2m3/k16/ue4m3/ts", "e2m1/k8/ue4m3", "e2m1/k8/ue4m3/floor",
    "e4m3/k64/ue8m0", "e5m2/k128/ue4m3", "int8/k128/ue4m3/floor", "e3m3/k32/ue8m0", "e2m2/k16/ue8m0/floor",
    "int3/k8/ue8m0", "int2/k16/ue4m3", "e4m3/k16/ue4m3", "e5m2/k32/ue4m3/ts", "e2m1/k128/ue8m0",
    "e4m2/k64/ue8m0", "e1m2/k16/ue8m0", "e3m4/k32/ue8m0/floor",
};
const DType kDTypes[] = {DType::F32, DType::F16, DType::BF16};
const ScaleLayout kLayouts[] = {ScaleLayout::RowMajor, ScaleLayout::Tiled128x4};

Format format_of(const char* name) {
  std::string why;
  auto f = parse_format(name, &why);
  EXPECT_TRUE(f.has_value()) << name << ": " << why;
  return f.value_or(kMxfp8E4M3);
}

const char* layout_name(ScaleLayout l) { return l == ScaleLayout::RowMajor ? "rowmajor" : "tiled"; }

struct Problem {
  QuantizeCase c;
  std::vector<int64_t> strides;
  HostTensor host;  // the whole buffer the view lives in
};

Problem make_problem(const QuantizeCase& c, DType dtype, Pattern pattern, uint64_t seed) {
  Problem p{c, c.strides, {}};
  if (p.strides.empty()) p.strides = contiguous_strides(c.shape);
  const size_t n = size_t(c.offset) + span_elements(c.shape, p.strides);
  p.host = make_tensor(make_values(n, pattern, seed), dtype);
  return p;
}

// Quantizes on the GPU and compares codes, scales and the tensor scale with reference::quantize.
// Returns false (with gtest failures recorded) on a mismatch.
// codes_offset / scales_offset: the outputs start that many bytes into their buffers (unaligned
// outputs); the bytes before them must stay untouched.
bool check_quantize(const Problem& p, const Format& f, const char* fname, ScaleLayout layout, bool fast,
                    std::optional<float> given_scale = std::nullopt, size_t codes_offset = 0,
                    size_t scales_offset = 0, RowsKernel rows_kernel = RowsKernel::Auto) {
  const DType dtype = p.host.dtype;
  const std::string what = std::string(fname) + " " + dtype_name(dtype) + " " + layout_name(layout) + " case " +
                           p.c.name + (fast ? "" : " exact-codecs") + (given_scale ? " given-scale" : "") +
                           (codes_offset || scales_offset ? " offsets " + std::to_string(codes_offset) + "," +
                                                                std::to_string(scales_offset)
                                                          : "") +
                           (rows_kernel == RowsKernel::Staged ? " staged" : "");
  const QuantizedTensor want = quantize(p.host.values.data() + p.c.offset, p.c.shape, p.strides, p.c.block_axis, f,
                                        layout, given_scale);
  QuantizedGeometry geo;
  const Status gs = quantized_geometry(p.c.shape, p.c.block_axis, f, layout, &geo);
  EXPECT_TRUE(gs.ok) << gs.message;
  EXPECT_EQ(geo.code_bytes, want.codes.size()) << what;
  EXPECT_EQ(geo.scale_bytes, want.scales.size()) << what;
  EXPECT_EQ(geo.stored_shape, want.shape) << what;

  DeviceBuffer<uint8_t> x(p.host.bytes.size()), codes(geo.code_bytes + codes_offset),
      scales(geo.scale_bytes + scales_offset);
  DeviceBuffer<float> ts(1);
  x.upload(p.host.bytes);
  codes.fill_bytes(kPoison);
  scales.fill_bytes(kPoison);
  ts.fill_bytes(kPoison);
  QuantizeOptions opt;
  opt.fast_codecs = fast;
  opt.rows_kernel = rows_kernel;
  if (given_scale) {
    opt.tensor_scale = TensorScale::Given;
    cudaMemcpy(ts.data(), &*given_scale, sizeof(float), cudaMemcpyHostToDevice);
  }
  const Status st = quantize(x.data() + p.c.offset * dtype_bytes(dtype), dtype, p.c.shape, p.strides, p.c.block_axis, f,
                             layout, {codes.data() + codes_offset, scales.data() + scales_offset, ts.data()}, nullptr,
                             opt);
  EXPECT_TRUE(st.ok) << what << ": " << st.message;
  const cudaError_t e = cudaDeviceSynchronize();
  EXPECT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
  if (!st.ok || e != cudaSuccess) return false;

  bool ok = true;
  auto got_codes = codes.download(), got_scales = scales.download();
  for (size_t i = 0; i < codes_offset; ++i)
    if (got_codes[i] != kPoison) {
      ADD_FAILURE() << what << ": wrote code byte " << i << " before the output";
      ok = false;
    }
  for (size_t i = 0; i < scales_offset; ++i)
    if (got_scales[i] != kPoison) {
      ADD_FAILURE() << what << ": wrote scale byte " << i << " before the output";
      ok = false;
    }
  got_codes.erase(got_codes.begin(), got_codes.begin() + codes_offset);
  got_scales.erase(got_scales.begin(), got_scales.begin() + scales_offset);
  if (first_mismatch(got_codes, want.codes) >= 0) {
    ADD_FAILURE() << what << ": codes: " << describe_mismatches(got_codes, want.codes);
    ok = false;
  }
  if (first_mismatch(got_scales, want.scales) >= 0) {
    ADD_FAILURE() << what << ": scales: " << describe_mismatches(got_scales, want.scales);
    ok = false;
  }
  if (f.tensor_scale) {
    const float got = ts.download()[0];
    if (float_bits(got) != float_bits(want.tensor_scale)) {
      ADD_FAILURE() << what << ": tensor scale " << got << " want " << want.tensor_scale;
      ok = false;
    }
  }
  return ok;
}

TEST(GpuQuantize, EveryFormatDtypeLayoutAndShapeMatchesReference) {
  int failures = 0, runs = 0;
  uint64_t seed = 1;
  for (const char* fname : kFormats) {
    const Format f = format_of(fname);
    for (DType dtype : kDTypes)
      for (const auto& c : quantize_cases())
        for (ScaleLayout layout : kLayouts) {
          const Problem p = make_problem(c, dtype, Pattern::Mixed, seed++);
          ++runs;
          if (!check_quantize(p, f, fname, layout, true) && ++failures > 20) FAIL() << "too many failures";
        }
  }
  std::printf("  %d quantize runs compared\n", runs);
}

TEST(GpuQuantize, ExactCodecRouteMatchesReference) {
  uint64_t seed = 1000;
  for (const char* fname : {"mxfp8", "mxfp8_e5m2", "mxfp4", "nvfp4", "mxfp4/floor"}) {
    const Format f = format_of(fname);
    for (DType dtype : kDTypes)
      for (const auto& c : quantize_cases())
        check_quantize(make_problem(c, dtype, Pattern::Mixed, seed++), f, fname, ScaleLayout::Tiled128x4, false);
  }
}

TEST(GpuQuantize, NormalGridAndTinyInputs) {
  uint64_t seed = 5000;
  const QuantizeCase big{"big", {67, 512}, 1};
  const QuantizeCase big_v{"big_v", {3, 200, 2, 64}, 1};
  for (Pattern pattern : {Pattern::Normal, Pattern::Grid, Pattern::Tiny})
    for (const char* fname : kFormats) {
      const Format f = format_of(fname);
      for (DType dtype : kDTypes)
        for (const auto* c : {&big, &big_v})
          check_quantize(make_problem(*c, dtype, pattern, seed++), f, fname, ScaleLayout::Tiled128x4, true);
    }
}

TEST(GpuQuantize, GivenTensorScale) {
  uint64_t seed = 9000;
  for (const char* fname : {"nvfp4", "e2m3/k16/ue4m3/ts"})
    for (float s : {1.0f, 1000.0f, 3.0e38f, 1e-30f})
      for (DType dtype : kDTypes)
        for (const auto& c : quantize_cases())
          check_quantize(make_problem(c, dtype, Pattern::Mixed, seed++), format_of(fname), fname,
                         ScaleLayout::RowMajor, true, s);
}

// The rows kernel's pair routes (E2M1, E2M3, E3M2 and NVFP4 on contiguous 16-byte aligned BF16 and FP16
// rows; 32 elements per thread, packed bf16x2 arithmetic) on chunk tails, one row, tiled row and column padding,
// a strided view, and blocks built on the edges of its arithmetic (values in the comments below).
std::vector<float> fp4_edge_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  // Multiples of the block scale X: the E2M1 grid, its midpoints (ties), and neighbours of both.
  const float grid[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f};
  std::vector<float> v(n);
  for (size_t b0 = 0; b0 < n; b0 += 32) {
    const int kind = int((b0 / 32) % 7);
    const int e = pick(rng) % 262 - 136;  // block exponent: from below the bf16 subnormals to 2^125
    for (size_t i = b0; i < std::min(n, b0 + 32); ++i) {
      const size_t j = i - b0;
      const int r = pick(rng);
      float x;
      switch (kind) {
        case 0:  // block max 6 * 2^e (E8M0 RCEIL X = 2^e): every grid value and tie, exact and +-1 ulp
        case 1:  // block max 4 * 2^e: FLOOR's X = 2^e; RCEIL's X doubles
          x = j == 0 ? (kind == 0 ? 6.0f : 4.0f) : grid[r % 15] * (r % 3 == 0 ? 1.0f : r % 3 == 1 ? 1.0078125f : 0.99609375f);
          x = std::ldexp((r & (1 << 10)) ? -x : x, e);
          break;
        case 2:  // one element 2^e, the rest 2^(e - 20..83): products below 2^-126, in the E2M1 zero range
          x = j == 5 ? std::ldexp(1.0f, e) : std::ldexp(normal(rng), e - 20 - r % 64);
          break;
        case 3:  // bf16 subnormals only (k * 2^-133): the largest scales, taken by Element::encode
          x = std::ldexp(float(r % 255 - 127), -133);
          break;
        case 4:  // +-0, with the sign kept in the code
          x = r % 2 ? -0.0f : 0.0f;
          break;
        case 5:  // a NaN or an Inf in an otherwise normal block
          x = j == 7 ? (r % 3 == 0 ? NAN : r % 3 == 1 ? INFINITY : -INFINITY) : normal(rng);
          break;
        default:  // normal values of any magnitude
          x = std::ldexp(normal(rng), e);
          break;
      }
      v[i] = x;
    }
  }
  return v;
}

TEST(GpuQuantize, PairRouteShapesAndEdgeBlocksMatchReference) {
  const QuantizeCase cases[] = {
      {"fp4_one_chunk", {1, 32}, 1},
      {"fp4_rows", {3, 64}, 1},
      {"fp4_tiled_pad", {130, 96}, 1},
      {"fp4_tail8", {2, 40}, 1},
      {"fp4_long_tail", {5, 1000}, 1},
      {"fp4_d128", {257, 128}, 1},
      {"fp4_one_row_odd", {1, 5}, 1},
      {"fp4_k16_only", {4, 16}, 1},
      {"fp4_tail_only", {7, 8}, 1},
      {"fp4_strided_rows", {6, 64}, 1, {80, 1}, 8},
  };
  uint64_t seed = 31000;
  int runs = 0, failures = 0;
  for (const char* fname : {"mxfp4", "mxfp4/floor", "nvfp4", "mxfp6_e2m3", "mxfp6_e3m2/floor", "e3m2/k16/ue8m0"}) {
    const Format f = format_of(fname);
    for (const auto& c : cases)
      for (ScaleLayout layout : kLayouts)
        for (DType dtype : {DType::BF16, DType::F16}) {
          std::vector<Problem> problems;
          for (Pattern pattern : {Pattern::Normal, Pattern::Mixed, Pattern::Tiny, Pattern::Grid})
            problems.push_back(make_problem(c, dtype, pattern, seed++));
          Problem edge = make_problem(c, dtype, Pattern::Normal, seed);
          edge.host = make_tensor(fp4_edge_values(edge.host.values.size(), seed++), dtype);
          problems.push_back(std::move(edge));
          for (const Problem& p : problems) {
            ++runs;
            if (!check_quantize(p, f, fname, layout, true) && ++failures > 20) FAIL() << "too many failures";
            if (f.tensor_scale)
              for (float s : {1.0f, 1000.0f, 3.0e38f, 1e-30f, -3.0f}) {
                ++runs;
                if (!check_quantize(p, f, fname, layout, true, s) && ++failures > 20) FAIL() << "too many failures";
              }
          }
        }
  }
  std::printf("  %d pair-route quantize runs compared\n", runs);
}

// The staged rows kernel (Auto picks it only for tensors of hundreds of MiB) on every format and input type:
// several tiles a CTA, a partial last tile, tiled pad rows, and inputs it does not take (strided rows, rows
// that are not whole chunks), which run the direct kernel.
TEST(GpuQuantize, StagedRowsKernelMatchesReference) {
  const QuantizeCase cases[] = {
      {"tiles_pad_rows", {67, 512}, 1},
      {"partial_tile", {1000, 256}, 1},
      {"d128", {300, 128}, 1},
      {"kv_cache", {2, 3, 4, 64}, 3},
      {"not_whole_chunks", {9, 40}, 1},
      {"strided_rows", {6, 64}, 1, {80, 1}, 8},
  };
  uint64_t seed = 52000;
  int runs = 0, failures = 0;
  for (const char* fname : {"mxfp8", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4",
                            "e3m2/k16/ue8m0", "int4/k32/ue8m0", "e2m3/k16/ue4m3"}) {
    const Format f = format_of(fname);
    for (DType dtype : kDTypes)
      for (const auto& c : cases)
        for (ScaleLayout layout : kLayouts)
          for (Pattern pattern : {Pattern::Normal, Pattern::Mixed}) {
            ++runs;
            if (!check_quantize(make_problem(c, dtype, pattern, seed++), f, fname, layout, true, std::nullopt, 0, 0,
                                RowsKernel::Staged) &&
                ++failures > 20)
              FAIL() << "too many failures";
          }
  }
  std::printf("  %d staged quantize runs compared\n", runs);
}

// The staged kernel's grid on a tensor of several waves (the launcher's choice, Auto): 8-tile CTAs, then the
// last wave's worth of tiles in 4-tile CTAs (quantize.cu StagedSpans), and a partial last tile. 160 MiB of BF16
// is over two waves of 8-tile CTAs at up to 8 CTAs an SM on 132 SMs (16 KB tiles: 132 MiB a wave).
TEST(GpuQuantize, StagedLongAndTailCtasMatchReference) {
  const QuantizeCase c{"long_and_tail", {160 * 1024 * 4 + 3, 128}, 1};
  uint64_t seed = 53000;
  for (const char* fname : {"mxfp4", "mxfp6_e2m3", "e3m3/k32/ue8m0"})
    check_quantize(make_problem(c, DType::BF16, Pattern::Normal, seed++), format_of(fname), fname,
                   ScaleLayout::Tiled128x4, true);
}

// The same kernel's output stores where they cannot be wide: codes and scales at odd and 8-byte
// offsets (the 16-byte code store and NVFP4's 16-bit scale-pair store need alignment), against
// whole-row, padded and odd block counts in both layouts.
TEST(GpuQuantize, PairRouteUnalignedOutputsMatchReference) {
  const QuantizeCase cases[] = {
      {"fp4_rows", {3, 64}, 1},
      {"fp4_tiled_pad", {130, 96}, 1},
      {"fp4_long_tail", {5, 1000}, 1},
      {"fp4_d128", {257, 128}, 1},
  };
  const size_t offsets[][2] = {{1, 1}, {8, 0}, {0, 1}, {3, 2}};
  uint64_t seed = 32000;
  int runs = 0, failures = 0;
  for (const char* fname : {"mxfp4", "mxfp4/floor", "nvfp4", "mxfp6_e2m3"}) {
    const Format f = format_of(fname);
    for (const auto& c : cases)
      for (ScaleLayout layout : kLayouts)
        for (const auto& o : offsets) {
          Problem p = make_problem(c, DType::BF16, Pattern::Normal, seed);
          p.host = make_tensor(fp4_edge_values(p.host.values.size(), seed++), DType::BF16);
          ++runs;
          if (!check_quantize(p, f, fname, layout, true, std::nullopt, o[0], o[1]) && ++failures > 20)
            FAIL() << "too many failures";
          if (f.tensor_scale) {
            ++runs;
            if (!check_quantize(p, f, fname, layout, true, -3.0f, o[0], o[1]) && ++failures > 20)
              FAIL() << "too many failures";
          }
        }
  }
  std::printf("  %d unaligned pair-route quantize runs compared\n", runs);
}

TEST(GpuQuantize, AmaxAndTensorScale) {
  for (DType dtype : kDTypes)
    for (Pattern pattern : {Pattern::Normal, Pattern::Mixed, Pattern::Tiny})
      for (const auto& c : quantize_cases()) {
        const Problem p = make_problem(c, dtype, pattern, 77);
        const float want = tensor_amax(p.host.values.data() + c.offset, c.shape, p.strides);
        DeviceBuffer<uint8_t> x(p.host.bytes.size());
        DeviceBuffer<float> amax(1), s_enc(1);
        x.upload(p.host.bytes);
        amax.fill_bytes(kPoison);
        s_enc.fill_bytes(kPoison);
        const void* x0 = x.data() + c.offset * dtype_bytes(dtype);
        ASSERT_TRUE(tensor_amax(x0, dtype, c.shape, p.strides, amax.data(), nullptr).ok);
        ASSERT_TRUE(nvfp4_tensor_scale(x0, dtype, c.shape, p.strides, kNvfp4, s_enc.data(), nullptr).ok);
        CUDA_ASSERT(cudaDeviceSynchronize());
        EXPECT_EQ(float_bits(amax.download()[0]), float_bits(want)) << c.name << " " << dtype_name(dtype);
        EXPECT_EQ(float_bits(s_enc.download()[0]), float_bits(mxattn::nvfp4_tensor_scale(want, kE2M1)))
            << c.name << " " << dtype_name(dtype);
      }
}

// Dequantize the reference's codes on the GPU, into the case's (possibly strided) view of a poisoned
// buffer: every element of the view must equal the reference's value rounded to the dtype (NaN:
// any NaN), and every byte outside the view must still be poison. `s_enc` replaces the tensor scale
// (both sides decode the same codes with it). Returns the number of bad elements, with a failure.
int check_dequantize(const char* fname, DType dtype, const QuantizeCase& c, ScaleLayout layout, uint64_t seed,
                     std::optional<float> s_enc = std::nullopt, Pattern pattern = Pattern::Mixed) {
  const Format f = format_of(fname);
  const Problem p = make_problem(c, DType::F32, pattern, seed);
  QuantizedTensor q = quantize(p.host.values.data() + c.offset, c.shape, p.strides, c.block_axis, f, layout);
  if (s_enc) q.tensor_scale = *s_enc;
  const std::vector<float> want = dequantize(q);  // contiguous, source order
  DeviceBuffer<uint8_t> codes(q.codes.size()), scales(q.scales.size());
  DeviceBuffer<float> ts(1);
  codes.upload(q.codes);
  scales.upload(q.scales);
  cudaMemcpy(ts.data(), &q.tensor_scale, sizeof(float), cudaMemcpyHostToDevice);
  const size_t elems = size_t(c.offset) + span_elements(c.shape, p.strides);
  DeviceBuffer<uint8_t> y(elems * dtype_bytes(dtype));
  y.fill_bytes(kPoison);
  const Status st = dequantize({codes.data(), scales.data(), ts.data()}, f, layout, y.data() + c.offset * dtype_bytes(dtype),
                               dtype, c.shape, p.strides, c.block_axis, nullptr);
  EXPECT_TRUE(st.ok) << st.message;
  const cudaError_t synced = cudaDeviceSynchronize();
  EXPECT_EQ(synced, cudaSuccess) << cudaGetErrorString(synced);
  if (!st.ok || synced != cudaSuccess) return 1;
  const auto got = y.download();
  // Walk the view in source order (the order of `want`).
  std::vector<bool> inside(elems, false);
  std::vector<int64_t> idx(c.shape.size(), 0);
  const size_t bytes = dtype_bytes(dtype);
  std::string errors;
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t off = c.offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * p.strides[d];
    inside[off] = true;
    uint32_t g = 0;
    std::memcpy(&g, &got[off * bytes], bytes);
    const uint32_t w = to_dtype_bits(want[i], dtype);
    const bool same = dtype_is_nan(w, dtype) ? dtype_is_nan(g, dtype) : g == w;
    if (!same && bad++ < 6) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " [%zu] got 0x%x want 0x%x (%g);", i, g, w, want[i]);
      errors += buf;
    }
    for (int d = int(idx.size()) - 1; d >= 0 && ++idx[d] == c.shape[d]; --d) idx[d] = 0;
  }
  for (size_t e = 0; e < elems; ++e)
    for (size_t b = 0; b < bytes && !inside[e]; ++b)
      if (got[e * bytes + b] != kPoison && bad++ < 6) errors += " wrote outside the view at " + std::to_string(e) + ";";
  if (bad)
    ADD_FAILURE() << fname << " " << dtype_name(dtype) << " " << layout_name(layout) << " case " << c.name
                  << (s_enc ? " S_enc " + std::to_string(*s_enc) : std::string()) << ": " << bad << " bad elements:" << errors;
  return bad;
}

TEST(GpuDequantize, MatchesReferenceIntoViews) {
  uint64_t seed = 20000;
  int failures = 0;
  for (const char* fname : kFormats)
    for (DType dtype : kDTypes)
      for (const auto& c : quantize_cases())
        for (ScaleLayout layout : kLayouts) {
          failures += check_dequantize(fname, dtype, c, layout, seed++) > 0;
          if (failures > 20) FAIL() << "too many failures";
        }
}

// Tensor scales of every kind: NVFP4's dequantize divides twice a piece instead of once an element where
// that is exact (kernels/dequantize.cu), and per element where it is not (tiny, huge, zero, subnormal S_enc).
TEST(GpuDequantize, GivenTensorScales) {
  uint64_t seed = 30000;
  int failures = 0;
  for (const char* fname : {"nvfp4", "e2m3/k16/ue4m3/ts"})
    for (float s : {1.0f, -3.0f, 1000.0f, 3.0e38f, 1e-30f, 0x1p-140f, 0.0f, INFINITY})
      for (DType dtype : kDTypes)
        for (const auto& c : quantize_cases()) {
          failures += check_dequantize(fname, dtype, c, ScaleLayout::Tiled128x4, seed++, s) > 0;
          if (failures > 20) FAIL() << "too many failures";
        }
}

// 6-bit codes to BF16/F16 (kernels/dequantize.cu PieceScale::Pairs): two codes a table lookup and one
// HMUL2 where the block's scale keeps every value normal in the output type, the float route elsewhere
// (Mixed: exponents of +-30 across F16's range edges, zero, NaN, tiny and huge blocks). Rows of whole
// 16-code pieces, several CTAs with a partial last run; blocks of 16; UE4M3 scales (no pair route); the
// other 6-bit elements, whose ranges set other scale ranges for the route (e5m0's values reach past F16's).
TEST(GpuDequantize, SixBitPairsMatchReference) {
  const QuantizeCase cases[] = {{"pairs_runs", {300, 1040}, 1}, {"pairs_blocks", {2, 5, 3, 96}, 3}};
  uint64_t seed = 40000;
  int failures = 0;
  for (const char* fname : {"mxfp6_e2m3", "mxfp6_e3m2", "mxfp6_e2m3/floor", "e3m2/k16/ue8m0", "e2m3/k16/ue4m3",
                            "e5m0/k32/ue8m0", "e4m1/k16/ue8m0", "e1m4/k32/ue8m0", "int6/k32/ue8m0"})
    for (DType dtype : {DType::BF16, DType::F16})
      for (const auto& c : cases)
        for (ScaleLayout layout : kLayouts)
          for (Pattern pattern : {Pattern::Normal, Pattern::Mixed, Pattern::Grid}) {
            failures += check_dequantize(fname, dtype, c, layout, seed++, std::nullopt, pattern) > 0;
            if (failures > 20) FAIL() << "too many failures";
          }
}

TEST(GpuScaleLayout, ConvertsBothWays) {
  std::mt19937 rng(3);
  for (ScaleShape s : {ScaleShape{1, 1}, ScaleShape{5, 3}, ScaleShape{128, 4}, ScaleShape{130, 9}, ScaleShape{300, 64},
                       ScaleShape{257, 1}, ScaleShape{0, 5}}) {
    std::vector<uint8_t> rm(s.rows * s.cols);
    for (auto& b : rm) b = uint8_t(rng() % 255 + 1);  // no zeros: padding must come from the kernel
    std::vector<uint8_t> tiled(scale_bytes(ScaleLayout::Tiled128x4, s));
    mxattn::convert_scale_layout(rm.data(), ScaleLayout::RowMajor, tiled.data(), ScaleLayout::Tiled128x4, s);

    DeviceBuffer<uint8_t> d_rm(rm.size()), d_tiled(tiled.size()), d_back(rm.size());
    d_rm.upload(rm);
    d_tiled.fill_bytes(kPoison);
    d_back.fill_bytes(kPoison);
    ASSERT_TRUE(convert_scale_layout(d_rm.data(), ScaleLayout::RowMajor, d_tiled.data(), ScaleLayout::Tiled128x4, s, nullptr).ok);
    ASSERT_TRUE(convert_scale_layout(d_tiled.data(), ScaleLayout::Tiled128x4, d_back.data(), ScaleLayout::RowMajor, s, nullptr).ok);
    CUDA_ASSERT(cudaDeviceSynchronize());
    if (!tiled.empty()) EXPECT_EQ(d_tiled.download(), tiled) << s.rows << "x" << s.cols;
    if (!rm.empty()) EXPECT_EQ(d_back.download(), rm) << s.rows << "x" << s.cols;
  }
}

TEST(GpuQuantize, BadArgumentsAreNamed) {
  DeviceBuffer<uint8_t> buf(1024);
  const int64_t shape[] = {4, 32};
  const QuantizedBuffers out{buf.data(), buf.data() + 512, nullptr};
  auto msg = [&](Status s) { return s.ok ? std::string("ok") : s.message; };
  EXPECT_NE(msg(quantize(buf.data(), DType::F32, shape, {}, 5, kMxfp8E4M3, ScaleLayout::RowMajor, out, nullptr)).find("block_axis"),
            std::string::npos);
  const int64_t bad_strides[] = {32};
  EXPECT_NE(msg(quantize(buf.data(), DType::F32, shape, bad_strides, 1, kMxfp8E4M3, ScaleLayout::RowMajor, out, nullptr))
                .find("strides"),
            std::string::npos);
  EXPECT_NE(msg(quantize(buf.data() + 1, DType::F32, shape, {}, 1, kMxfp8E4M3, ScaleLayout::RowMajor, out, nullptr))
                .find("alignment"),
            std::string::npos);
  const int64_t neg[] = {4, -1};
  EXPECT_NE(msg(quantize(buf.data(), DType::F32, neg, {}, 1, kMxfp8E4M3, ScaleLayout::RowMajor, out, nullptr)).find("shape"),
            std::string::npos);
  EXPECT_NE(msg(quantize(buf.data(), DType::F32, shape, {}, 1, kNvfp4, ScaleLayout::RowMajor, out, nullptr)).find("tensor_scale"),
            std::string::npos);
  Format odd = kMxfp4;
  odd.block = 24;
  EXPECT_NE(msg(quantize(buf.data(), DType::F32, shape, {}, 1, odd, ScaleLayout::RowMajor, out, nullptr)).find("format"),
            std::string::npos);
  EXPECT_NE(msg(quantize(buf.data(), DType(7), shape, {}, 1, kMxfp4, ScaleLayout::RowMajor, out, nullptr)).find("dtype"),
            std::string::npos);
}

}  // namespace
}  // namespace mxattn::test
