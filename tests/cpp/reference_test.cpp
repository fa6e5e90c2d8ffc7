// CPU reference: whole-tensor quantization and FP64 attention.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "mxattn/reference/attention.h"
#include "mxattn/reference/quantize.h"

namespace mxattn {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

const Format kFormats[] = {kMxfp8E4M3, kMxfp8E5M2, kMxfp6E2M3, kMxfp6E3M2, kMxfp4, kMxint8, kNvfp4,
                           Format{Element::minifloat(3, 3), 16, ScaleType::E8M0, ScaleRule::Floor, false},
                           Format{Element::integer(4), 8, ScaleType::UE4M3, ScaleRule::Rceil, false}};

TEST(Quantize, ExactlyRepresentableInputsRoundTrip) {
  // Each block holds its format's largest code times 2^e, so RCEIL picks exactly 2^e and every
  // element of the form decode(code) * 2^e comes back unchanged.
  std::mt19937 rng(5);
  for (const Format& f : kFormats) {
    if (f.scale != ScaleType::E8M0 || f.rule != ScaleRule::Rceil) continue;
    const int rows = 7, cols = 3 * f.block + 5;
    std::vector<float> x(size_t(rows) * cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const int e = (r * 7 + c / f.block * 3) % 40 - 20;
        uint32_t code = rng() % (1u << f.elem.bits);
        if (std::isnan(f.elem.decode(code)) || std::isinf(f.elem.decode(code)) ||
            (f.elem.is_int() && code == f.elem.sign_bit()))
          code = 0;
        if (c % f.block == 0) code = f.elem.max_code();
        x[size_t(r) * cols + c] = std::ldexp(f.elem.decode(code), e);
      }
    const std::vector<int64_t> shape{rows, cols};
    const QuantizedTensor q = quantize(x.data(), shape, {}, 1, f);
    EXPECT_EQ(dequantize(q), x) << format_name(f);
  }
}

TEST(Quantize, BlockAxisAndStridesMatchAnExplicitTranspose) {
  // V [B, S, H, D] blocked along S equals [B, H, D, S] (contiguous copy) blocked along its last axis.
  const int64_t B = 2, S = 45, H = 3, D = 8;
  const auto v = random_floats(size_t(B * S * H * D), 11);
  std::vector<float> t(v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) t[size_t(((b * H + h) * D + d) * S + s)] = v[size_t(((b * S + s) * H + h) * D + d)];
  for (const Format& f : kFormats) {
    for (ScaleLayout layout : {ScaleLayout::RowMajor, ScaleLayout::Tiled128x4}) {
      const std::vector<int64_t> vs{B, S, H, D}, ts{B, H, D, S};
      const QuantizedTensor a = quantize(v.data(), vs, {}, 1, f, layout);
      const QuantizedTensor b = quantize(t.data(), ts, {}, 3, f, layout);
      EXPECT_EQ(a.shape, ts);
      EXPECT_EQ(a.codes, b.codes) << format_name(f);
      EXPECT_EQ(a.scales, b.scales) << format_name(f);
      EXPECT_EQ(a.tensor_scale, b.tensor_scale);
      EXPECT_EQ(dequantize(a), [&] {  // back in V's own order
        const auto bt = dequantize(b);
        std::vector<float> r(bt.size());
        for (int64_t bb = 0; bb < B; ++bb)
          for (int64_t s = 0; s < S; ++s)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t d = 0; d < D; ++d)
                r[size_t(((bb * S + s) * H + h) * D + d)] = bt[size_t(((bb * H + h) * D + d) * S + s)];
        return r;
      }());
      // The same transpose given as strides over V's memory.
      const std::vector<int64_t> strides{S * H * D, H * D, D, 1};
      const std::vector<int64_t> tstrides{strides[0], strides[2], strides[3], strides[1]};
      const QuantizedTensor c = quantize(v.data(), ts, tstrides, 3, f, layout);
      EXPECT_EQ(c.codes, b.codes);
      EXPECT_EQ(c.scales, b.scales);
    }
  }
}

TEST(Quantize, TiledScalesAreTheRowMajorOnesRearranged) {
  const auto x = random_floats(200 * 100, 3);
  const std::vector<int64_t> shape{200, 100};
  for (const Format& f : kFormats) {
    const QuantizedTensor rm = quantize(x.data(), shape, {}, -1, f, ScaleLayout::RowMajor);
    const QuantizedTensor tl = quantize(x.data(), shape, {}, -1, f, ScaleLayout::Tiled128x4);
    EXPECT_EQ(rm.codes, tl.codes);
    std::vector<uint8_t> conv(tl.scales.size());
    convert_scale_layout(rm.scales.data(), ScaleLayout::RowMajor, conv.data(), ScaleLayout::Tiled128x4, rm.scale_shape());
    EXPECT_EQ(conv, tl.scales) << format_name(f);
  }
}

TEST(Quantize, NanInfAndZeroBlocks) {
  for (const Format& f : kFormats) {
    const int cols = 3 * f.block;
    auto x = random_floats(size_t(cols), 8);
    x[1] = NAN;                                                     // block 0
    x[size_t(f.block) + 2] = -INFINITY;                              // block 1
    for (int c = 2 * f.block; c < cols; ++c) x[size_t(c)] = 0.0f;  // block 2
    const std::vector<int64_t> shape{1, cols};
    const QuantizedTensor q = quantize(x.data(), shape, {}, 1, f);
    const auto back = dequantize(q);
    const uint8_t nan_scale = f.scale == ScaleType::E8M0 ? 0xFF : 0x7F;
    EXPECT_EQ(q.scale_code(0, 0), nan_scale);
    EXPECT_EQ(q.scale_code(0, 1), nan_scale);
    for (int c = 0; c < 2 * f.block; ++c) EXPECT_TRUE(std::isnan(back[size_t(c)])) << format_name(f) << " " << c;
    if (f.scale == ScaleType::E8M0) EXPECT_EQ(q.scale_code(0, 2), 0x00) << "zero blocks get 2^-127";
    for (int c = 2 * f.block; c < cols; ++c) EXPECT_EQ(back[size_t(c)], 0.0f) << format_name(f);
  }
}

TEST(Quantize, Nvfp4TensorScale) {
  auto x = random_floats(64 * 48, 4, 3.0f);
  const std::vector<int64_t> shape{64, 48};
  const QuantizedTensor q = quantize(x.data(), shape, {}, 1, kNvfp4);
  float amax = 0;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  EXPECT_EQ(q.tensor_scale, 2688.0f / amax);
  const QuantizedTensor given = quantize(x.data(), shape, {}, 1, kNvfp4, ScaleLayout::RowMajor, 2688.0f / amax);
  EXPECT_EQ(given.codes, q.codes);
  // The block holding the tensor's amax gets scale 448 (the largest UE4M3).
  int max_scales = 0;
  for (size_t r = 0; r < q.rows(); ++r)
    for (size_t b = 0; b < q.blocks_per_row(); ++b) max_scales += q.scale_code(r, b) == 0x7E;
  EXPECT_GE(max_scales, 1);
  // Error is bounded by half an E2M1 step at the block's scale (plus the FP32 decode rounding).
  const auto back = dequantize(q);
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t r = i / 48, b = (i % 48) / 16;
    const double s = decode_ue4m3(q.scale_code(r, b)) / q.tensor_scale;
    ASSERT_LE(std::fabs(double(back[i]) - x[i]), s * 1.0 * (1 + 1e-6) + 1e-30) << i;  // E2M1 steps are <= 2
  }
}

TEST(Quantize, RejectsBadArguments) {
  const float x[4] = {1, 2, 3, 4};
  const std::vector<int64_t> shape{2, 2};
  EXPECT_THROW(quantize(x, shape, {}, 2, kMxfp4), std::invalid_argument);
  const std::vector<int64_t> bad_strides{2};
  EXPECT_THROW(quantize(x, shape, bad_strides, 1, kMxfp4), std::invalid_argument);
}

// --- attention ---

std::vector<double> to_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

TEST(Attention, ZeroQueryAveragesValues) {
  const AttentionShape s{.batch = 1, .seq_q = 3, .seq_kv = 5, .heads_q = 2, .heads_kv = 2, .head_dim = 4};
  std::vector<double> q(size_t(s.q_elems()), 0.0);
  const auto k = to_double(random_floats(size_t(s.kv_elems()), 1));
  const auto v = to_double(random_floats(size_t(s.kv_elems()), 2));
  const AttentionResult r = attention_fp64(q.data(), k.data(), v.data(), s, {});
  for (int64_t i = 0; i < s.seq_q; ++i)
    for (int64_t h = 0; h < s.heads_q; ++h) {
      EXPECT_NEAR(r.lse[size_t(h * s.seq_q + i)], std::log(5.0), 1e-12);
      for (int64_t d = 0; d < 4; ++d) {
        double mean = 0;
        for (int64_t j = 0; j < 5; ++j) mean += v[size_t((j * 2 + h) * 4 + d)] / 5;
        EXPECT_NEAR(r.out[size_t((i * 2 + h) * 4 + d)], mean, 1e-12);
      }
    }
}

TEST(Attention, CausalBottomRightAndEmptyRows) {
  // S_q = 4 > S_kv = 2: query i sees keys j <= i - 2, so rows 0 and 1 see nothing.
  AttentionShape s{.batch = 1, .seq_q = 4, .seq_kv = 2, .heads_q = 1, .heads_kv = 1, .head_dim = 3};
  const auto q = to_double(random_floats(size_t(s.q_elems()), 3));
  const auto k = to_double(random_floats(size_t(s.kv_elems()), 4));
  const auto v = to_double(random_floats(size_t(s.kv_elems()), 5));
  const AttentionResult r = attention_fp64(q.data(), k.data(), v.data(), s, {.causal = true});
  for (int i : {0, 1}) {
    EXPECT_EQ(r.lse[size_t(i)], -INFINITY);
    for (int d = 0; d < 3; ++d) EXPECT_EQ(r.out[size_t(i * 3 + d)], 0.0);
  }
  for (int d = 0; d < 3; ++d) EXPECT_DOUBLE_EQ(r.out[size_t(2 * 3 + d)], v[size_t(d)]);  // row 2 sees key 0 only
  // S_q = 2 < S_kv = 5: the last query sees every key, as without the mask; the first sees 4.
  s = {.batch = 1, .seq_q = 2, .seq_kv = 5, .heads_q = 1, .heads_kv = 1, .head_dim = 3};
  const auto k5 = to_double(random_floats(size_t(s.kv_elems()), 6));
  const auto v5 = to_double(random_floats(size_t(s.kv_elems()), 7));
  const AttentionResult c = attention_fp64(q.data(), k5.data(), v5.data(), s, {.causal = true});
  const AttentionResult n = attention_fp64(q.data(), k5.data(), v5.data(), s, {});
  for (int d = 0; d < 3; ++d) EXPECT_DOUBLE_EQ(c.out[size_t(3 + d)], n.out[size_t(3 + d)]);
  const AttentionShape s4{.batch = 1, .seq_q = 1, .seq_kv = 4, .heads_q = 1, .heads_kv = 1, .head_dim = 3};
  const AttentionResult first = attention_fp64(q.data(), k5.data(), v5.data(), s4, {});
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(c.out[size_t(d)], first.out[size_t(d)], 1e-14);
}

TEST(Attention, GqaEqualsRepeatedKvHeads) {
  const AttentionShape g{.batch = 2, .seq_q = 5, .seq_kv = 7, .heads_q = 4, .heads_kv = 2, .head_dim = 8};
  AttentionShape m = g;
  m.heads_kv = 4;
  const auto q = to_double(random_floats(size_t(g.q_elems()), 1));
  const auto k = to_double(random_floats(size_t(g.kv_elems()), 2));
  const auto v = to_double(random_floats(size_t(g.kv_elems()), 3));
  std::vector<double> k4(size_t(m.kv_elems())), v4(size_t(m.kv_elems()));
  for (int64_t i = 0; i < 2 * 7; ++i)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t d = 0; d < 8; ++d) {
        k4[size_t((i * 4 + h) * 8 + d)] = k[size_t((i * 2 + h / 2) * 8 + d)];
        v4[size_t((i * 4 + h) * 8 + d)] = v[size_t((i * 2 + h / 2) * 8 + d)];
      }
  for (bool causal : {false, true}) {
    const AttentionResult a = attention_fp64(q.data(), k.data(), v.data(), g, {.causal = causal, .softmax_scale = 0.3});
    const AttentionResult b = attention_fp64(q.data(), k4.data(), v4.data(), m, {.causal = causal, .softmax_scale = 0.3});
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.lse, b.lse);
  }
}

TEST(Attention, SoftmaxScaleAndLse) {
  const AttentionShape s{.batch = 1, .seq_q = 3, .seq_kv = 6, .heads_q = 1, .heads_kv = 1, .head_dim = 5};
  const auto q = to_double(random_floats(size_t(s.q_elems()), 1));
  const auto k = to_double(random_floats(size_t(s.kv_elems()), 2));
  const auto v = to_double(random_floats(size_t(s.kv_elems()), 3));
  std::vector<double> q2 = q;
  for (auto& x : q2) x *= 2;
  const AttentionResult a = attention_fp64(q.data(), k.data(), v.data(), s, {.softmax_scale = 0.5});
  const AttentionResult b = attention_fp64(q2.data(), k.data(), v.data(), s, {.softmax_scale = 0.25});
  for (size_t i = 0; i < a.out.size(); ++i) EXPECT_NEAR(a.out[i], b.out[i], 1e-14);
  for (int64_t i = 0; i < 3; ++i) {  // lse = log sum_j exp(scale q.k_j), computed directly
    double sum = 0;
    for (int64_t j = 0; j < 6; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < 5; ++d) dot += q[size_t(i * 5 + d)] * k[size_t(j * 5 + d)];
      sum += std::exp(0.5 * dot);
    }
    EXPECT_NEAR(a.lse[size_t(i)], std::log(sum), 1e-12);
  }
}

TEST(Attention, RejectsBadShapes) {
  const double x[1] = {0};
  AttentionShape s{.batch = 1, .seq_q = 1, .seq_kv = 1, .heads_q = 3, .heads_kv = 2, .head_dim = 1};
  try {
    attention_fp64(x, x, x, s, {});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("heads_q"), std::string::npos) << e.what();
  }
  s = {.batch = 1, .seq_q = 0, .seq_kv = 1, .heads_q = 1, .heads_kv = 1, .head_dim = 1};
  EXPECT_THROW(attention_fp64(x, x, x, s, {}), std::invalid_argument);
}

TEST(MxAttention, FormatErrorOrderAndExactInputs) {
  const AttentionShape s{.batch = 1, .seq_q = 64, .seq_kv = 96, .heads_q = 2, .heads_kv = 1, .head_dim = 64};
  const auto q = random_floats(size_t(s.q_elems()), 1), k = random_floats(size_t(s.kv_elems()), 2),
             v = random_floats(size_t(s.kv_elems()), 3);
  const AttentionResult ref = attention_fp64(to_double(q).data(), to_double(k).data(), to_double(v).data(), s, {});
  auto err = [&](const Format& f) {
    return compare(mx_attention(q.data(), k.data(), v.data(), s, {f, f, f, VBlockAxis::Seq}, {}).out, ref.out).rel_l2;
  };
  // More element bits, less error: INT8 < E4M3 < E2M1.
  EXPECT_LT(err(kMxint8), err(kMxfp8E4M3));
  EXPECT_LT(err(kMxfp8E4M3), err(kMxfp4));
  EXPECT_GT(err(kMxfp4), 0.0);
  // Inputs already on the MXFP8 grid pass through unchanged: the emulation adds nothing else.
  const std::vector<int64_t> qs{1, 64, 2, 64}, ks{1, 96, 1, 64};
  const auto qg = dequantize(quantize(q.data(), qs, {}, 3, kMxfp8E4M3));
  const auto kg = dequantize(quantize(k.data(), ks, {}, 3, kMxfp8E4M3));
  const auto vg = dequantize(quantize(v.data(), ks, {}, 3, kMxfp8E4M3));
  const AttentionResult exact = attention_fp64(to_double(qg).data(), to_double(kg).data(), to_double(vg).data(), s, {});
  const AttentionResult emu =
      mx_attention(qg.data(), kg.data(), vg.data(), s, {kMxfp8E4M3, kMxfp8E4M3, kMxfp8E4M3, VBlockAxis::HeadDim}, {});
  EXPECT_EQ(emu.out, exact.out);
}

TEST(Compare, Stats) {
  const std::vector<double> a{1, 2, 3}, b{1, 2, 4};
  EXPECT_DOUBLE_EQ(compare(a, a).cosine, 1.0);
  EXPECT_DOUBLE_EQ(compare(a, a).rel_l2, 0.0);
  EXPECT_DOUBLE_EQ(compare(b, a).max_abs, 1.0);
  EXPECT_NEAR(compare(b, a).rel_l2, 1 / std::sqrt(14.0), 1e-15);
  EXPECT_TRUE(std::isnan(compare({1, NAN, 3}, a).cosine)) << "NaN in the output never passes";
}

}  // namespace
}  // namespace mxattn
