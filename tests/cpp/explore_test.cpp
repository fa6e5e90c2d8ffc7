// The format explorer: its fast FP64 attention against the reference, smoothing, data, .npy input,
// the sweep's numbers against DESIGN.md §5, the Pareto frontier, and the output files.
#include "mxattn/explore/explore.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "mxattn/explore/data.h"
#include "mxattn/explore/fast_attention.h"
#include "mxattn/explore/npy.h"
#include "mxattn/explore/smoothing.h"
#include "mxattn/format/format.h"
#include "mxattn/reference/attention.h"
#include "mxattn/reference/quantize.h"

namespace mxattn::explore {
namespace {

std::vector<double> to_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

const FormatResult& find(const ExploreReport& r, const std::string& name) {
  for (const auto& f : r.results)
    if (f.name == name) return f;
  ADD_FAILURE() << "no result for " << name;
  return r.results.front();
}

// A fresh directory for one test's files.
std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("mxattn_explore_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// A .npy file with any header dict and payload, for the dtypes write_npy does not produce.
void write_raw_npy(const std::string& path, const std::string& dict, const void* payload, size_t bytes) {
  std::string header = dict;
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(static_cast<const char*>(payload), std::streamsize(bytes));
}

// ---------------------------------------------------------------------------------------------
// Fast FP64 attention: the sweep's workhorse must be the reference's mathematics.

TEST(ExploreFastAttention, MatchesReferenceOnOddShapesGqaAndCausal) {
  const AttentionShape shapes[] = {
      {2, 37, 53, 4, 2, 20},   // GQA, S_q != S_kv, D not a multiple of the 8-wide tile, rows not of 4 or 8
      {1, 64, 64, 1, 1, 128},  // the sweep's shape, smaller
      {1, 5, 3, 3, 1, 5},      // D below one tile, more queries than keys
  };
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal;
  for (const AttentionShape& s : shapes)
    for (bool causal : {false, true}) {
      std::vector<double> q(size_t(s.q_elems())), k(size_t(s.kv_elems())), v(size_t(s.kv_elems()));
      for (auto* t : {&q, &k, &v})
        for (double& x : *t) x = 2.0 * normal(gen);
      AttentionOptions opt;
      opt.causal = causal;
      const auto ref = attention_fp64(q.data(), k.data(), v.data(), s, opt);
      for (int threads : {1, 2}) {
        const auto got = attention_fp64_fast(q.data(), k.data(), v.data(), s, opt, threads);
        const ErrorStats e = compare(got, ref.out);
        EXPECT_LT(e.rel_l2, 1e-13) << "S_q=" << s.seq_q << " S_kv=" << s.seq_kv << " D=" << s.head_dim
                                   << " causal=" << causal << " threads=" << threads;
        EXPECT_LT(e.max_abs, 1e-12);
      }
    }
}

// ---------------------------------------------------------------------------------------------
// Smoothing.

TEST(ExploreSmoothing, HadamardRotationIsOrthogonal) {
  EXPECT_EQ(hadamard_block(128), 128);
  EXPECT_EQ(hadamard_block(96), 32);
  EXPECT_EQ(hadamard_block(48), 16);
  for (int64_t dim : {16, 48, 128}) {
    const int64_t n = hadamard_block(dim);
    // Rotating the rows of the identity gives R itself.
    std::vector<double> r(size_t(dim * dim), 0.0);
    for (int64_t i = 0; i < dim; ++i) r[size_t(i * dim + i)] = 1.0;
    hadamard_rotate_rows(r.data(), dim, dim, random_signs(dim, 3));
    double worst = 0;
    for (int64_t i = 0; i < dim; ++i)
      for (int64_t j = 0; j < dim; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < dim; ++c) dot += r[size_t(i * dim + c)] * r[size_t(j * dim + c)];
        worst = std::max(worst, std::fabs(dot - (i == j ? 1.0 : 0.0)));
        // Block-diagonal, entries +-1/sqrt(n) inside the blocks.
        const double expect = i / n == j / n ? 1.0 / std::sqrt(double(n)) : 0.0;
        EXPECT_NEAR(std::fabs(r[size_t(i * dim + j)]), expect, 1e-15) << "dim=" << dim << " (" << i << ", " << j << ")";
      }
    EXPECT_LT(worst, 1e-14) << "R R^T != I for dim " << dim;
  }
}

TEST(ExploreSmoothing, LeavesExactAttentionUnchanged) {
  const AttentionShape s{2, 96, 96, 4, 2, 64};
  const AttentionData data = generate_data(Distribution::Outliers, s, 11);
  const auto q = to_double(data.q), k = to_double(data.k), v = to_double(data.v);
  for (bool causal : {false, true}) {
    AttentionOptions opt;
    opt.causal = causal;
    const auto ref = attention_fp64(q.data(), k.data(), v.data(), s, opt);
    for (const Smoothing& sm : {Smoothing{true, false}, Smoothing{false, true}, Smoothing{true, true}}) {
      auto qs = q, ks = k;
      apply_smoothing(qs, ks, s, sm);
      double changed = 0;
      for (size_t i = 0; i < k.size(); ++i) changed = std::max(changed, std::fabs(ks[i] - k[i]));
      EXPECT_GT(changed, 1.0) << sm.name() << " did nothing to K";
      const auto got = attention_fp64(qs.data(), ks.data(), v.data(), s, opt);
      const ErrorStats e = compare(got.out, ref.out);
      EXPECT_LT(e.rel_l2, 1e-12) << sm.name() << " causal=" << causal;
    }
  }
}

// A K with a large offset per channel: MXFP4 blocks along D spend their range on the offsets.
// Subtracting the mean over tokens removes them (and changes nothing in exact arithmetic).
TEST(ExploreSmoothing, MeanSubtractionHelpsKeysWithChannelOffsets) {
  const AttentionShape s{1, 256, 256, 1, 1, 64};
  AttentionData data = generate_data(Distribution::Normal, s, 5);
  std::mt19937_64 gen(9);
  std::uniform_real_distribution<float> offset(-20.0f, 20.0f);
  std::vector<float> off(static_cast<size_t>(s.head_dim));
  for (float& o : off) o = offset(gen);
  for (int64_t j = 0; j < s.seq_kv; ++j)
    for (int64_t d = 0; d < s.head_dim; ++d) data.k[size_t(j * s.head_dim + d)] += off[size_t(d)];

  ExploreOptions opt;
  opt.formats = {kMxfp4, kMxfp8E4M3};
  opt.smoothing.k_mean = true;
  const ExploreReport r = explore_formats(data, opt);
  for (const FormatResult& f : r.results)
    for (Mode m : kAllModes) {
      const double plain = f.attention[size_t(m)].rel_l2, smoothed = f.attention_smoothed[size_t(m)].rel_l2;
      EXPECT_LT(smoothed, 0.5 * plain) << f.name << " " << mode_name(m) << ": plain " << plain << " smoothed "
                                       << smoothed;
    }
  // The smoothed K itself is N(0, 1) again: its SNR is that of normal data, not of offset data.
  EXPECT_NEAR(find(r, "mxfp4").k_smoothed.snr_db, find(r, "mxfp4").q.snr_db, 1.0);
}

// ---------------------------------------------------------------------------------------------
// The sweep.

TEST(ExploreSweep, DefaultSweepIsNamedFormatsThenEveryCustomOneOnce) {
  const auto all = default_sweep();
  // 7 named + 7 elements x 4 blocks x 2 scales x 2 rules, less the 6 named MX formats that reappear.
  EXPECT_EQ(all.size(), 7u + 7 * 4 * 2 * 2 - 6);
  for (size_t i = 0; i < named_formats().size(); ++i) EXPECT_EQ(all[i], named_formats()[i].format);
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < i; ++j) EXPECT_FALSE(all[i] == all[j]) << format_name(all[i]) << " twice";
    const auto back = parse_format(format_name(all[i]));
    ASSERT_TRUE(back.has_value()) << format_name(all[i]);
    EXPECT_EQ(*back, all[i]) << format_name(all[i]);
  }
  EXPECT_NE(std::find(all.begin(), all.end(), *parse_format("int4/k64/ue4m3/floor")), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), *parse_format("mxfp4/floor")), all.end());
}

ExploreReport named_sweep(Distribution dist) {
  const AttentionShape s{1, 1024, 1024, 1, 1, 128};
  ExploreOptions opt;
  for (const auto& nf : named_formats()) opt.formats.push_back(nf.format);
  opt.formats.push_back(*parse_format("mxfp4/floor"));
  return explore_formats(generate_data(dist, s, 1), opt);
}

// DESIGN.md §5: attention cosine against FP64 on unquantized inputs, S = 1024, D = 128, Q/K/V quantized.
TEST(ExploreSweep, NormalDataMatchesDesignExpectations) {
  const ExploreReport r = named_sweep(Distribution::Normal);
  const auto qkv = size_t(Mode::Qkv), kv = size_t(Mode::KvCache);
  EXPECT_NEAR(find(r, "mxfp8").attention[qkv].cosine, 0.9985, 0.0008);
  EXPECT_NEAR(find(r, "mxfp6_e2m3").attention[qkv].cosine, 0.9986, 0.0008);
  EXPECT_NEAR(find(r, "nvfp4").attention[qkv].cosine, 0.985, 0.003);
  EXPECT_NEAR(find(r, "mxfp4").attention[qkv].cosine, 0.978, 0.003);
  // Bits, and what each format's elements give on N(0, 1): E4M3 about 31 dB, E2M1 about 19 dB.
  EXPECT_DOUBLE_EQ(find(r, "mxfp4").bits_per_element, 4.25);
  EXPECT_DOUBLE_EQ(find(r, "nvfp4").bits_per_element, 4.5);
  EXPECT_DOUBLE_EQ(find(r, "mxfp8").bits_per_element, 8.25);
  EXPECT_NEAR(find(r, "mxfp8").k.snr_db, 31.5, 1.0);
  EXPECT_NEAR(find(r, "mxfp4").k.snr_db, 18.8, 1.0);
  EXPECT_DOUBLE_EQ(find(r, "nvfp4").roadblock[3].per_thread_metadata_bits, 64);
  for (const FormatResult& f : r.results) {
    // Leaving Q exact can only help on iid data.
    EXPECT_LT(f.attention[kv].rel_l2, f.attention[qkv].rel_l2) << f.name;
    EXPECT_TRUE(f.attention[qkv].finite) << f.name;
  }
  // The frontier: NVFP4 beats MXFP4 per bit here; MXFP8 (E4M3) beats E5M2 at the same bits.
  EXPECT_TRUE(find(r, "nvfp4").pareto[qkv]);
  EXPECT_TRUE(find(r, "mxint8").pareto[qkv]);
  EXPECT_FALSE(find(r, "mxfp8_e5m2").pareto[qkv]);
  EXPECT_LT(find(r, "mxfp8").attention[qkv].rel_l2, find(r, "mxfp8_e5m2").attention[qkv].rel_l2);
}

// The explorer's numbers are those of the reference's own MX attention (reference/attention.h):
// mx_attention for Q/K/V, and a dequantized K and V (blocked along D) for the KV cache.
TEST(ExploreSweep, AgreesWithReferenceMxAttention) {
  const AttentionShape s{1, 256, 256, 2, 1, 64};
  const AttentionData data = generate_data(Distribution::Uniform, s, 2);
  ExploreOptions opt;
  opt.formats = {kMxfp8E4M3, kMxfp4, *parse_format("mxfp4/floor"), kNvfp4, *parse_format("e3m2/k16/ue4m3")};
  const ExploreReport r = explore_formats(data, opt);
  const auto q = to_double(data.q), k = to_double(data.k), v = to_double(data.v);
  const auto ref = attention_fp64(q.data(), k.data(), v.data(), s, {});
  const std::vector<int64_t> kv_shape{s.batch, s.seq_kv, s.heads_kv, s.head_dim};
  for (const FormatResult& f : r.results) {
    const MxAttentionFormats all{f.format, f.format, f.format, VBlockAxis::Seq};
    const ErrorStats qkv = compare(mx_attention(data.q.data(), data.k.data(), data.v.data(), s, all, {}).out, ref.out);
    EXPECT_NEAR(f.attention[size_t(Mode::Qkv)].rel_l2, qkv.rel_l2, 1e-12) << f.name;
    EXPECT_NEAR(f.attention[size_t(Mode::Qkv)].cosine, qkv.cosine, 1e-12) << f.name;
    const auto kd = to_double(dequantize(quantize(data.k.data(), kv_shape, {}, 3, f.format)));
    const auto vd = to_double(dequantize(quantize(data.v.data(), kv_shape, {}, 3, f.format)));
    const ErrorStats kv = compare(attention_fp64(q.data(), kd.data(), vd.data(), s, {}).out, ref.out);
    EXPECT_NEAR(f.attention[size_t(Mode::KvCache)].rel_l2, kv.rel_l2, 1e-12) << f.name;
  }
}

// A kernel hook (the GPU prefill kernel in the CLI) is measured against the same reference; here a
// stand-in that computes exactly what the format implies, and refuses 6-bit elements.
TEST(ExploreSweep, KernelHookIsMeasuredBesideTheFormats) {
  const AttentionShape s{1, 128, 128, 1, 1, 64};
  ExploreOptions opt;
  opt.formats = {kMxfp8E4M3, kMxfp6E2M3, kNvfp4};
  opt.kernel_name = "exact stand-in";
  int calls = 0;
  opt.kernel = [&](const Format& f, const AttentionData& d, const AttentionOptions& o,
                   std::string* why) -> std::optional<std::vector<double>> {
    ++calls;
    if (f.elem.bits == 6) {
      *why = "6-bit elements not supported";
      return std::nullopt;
    }
    return mx_attention(d.q.data(), d.k.data(), d.v.data(), d.shape, {f, f, f, VBlockAxis::Seq}, o).out;
  };
  const ExploreReport r = explore_formats(generate_data(Distribution::Normal, s, 4), opt);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r.kernel_name, "exact stand-in");
  for (const FormatResult& f : r.results) {
    if (f.format.elem.bits == 6) {
      EXPECT_FALSE(f.kernel_ran);
      EXPECT_EQ(f.kernel_note, "6-bit elements not supported");
    } else {
      ASSERT_TRUE(f.kernel_ran) << f.name;
      EXPECT_NEAR(f.kernel.rel_l2, f.attention[size_t(Mode::Qkv)].rel_l2, 1e-12) << f.name;
    }
  }
  const std::string csv = to_csv({r});
  EXPECT_NE(csv.find("6-bit elements not supported"), std::string::npos);
  EXPECT_NE(to_json({r}).find("\"kernel\": \"exact stand-in\""), std::string::npos);
}

TEST(ExploreSweep, UniformDataRceilBeatsFloor) {
  const ExploreReport r = named_sweep(Distribution::Uniform);
  const auto qkv = size_t(Mode::Qkv);
  // DESIGN.md §5 quotes MXFP4 (RCEIL) 0.994 on U(-1, 1).
  EXPECT_NEAR(find(r, "mxfp4").attention[qkv].cosine, 0.994, 0.002);
  // FLOOR maps a block maximum in [0.5, 1) to [4, 8) in E2M1 units and clips what lies above 6;
  // RCEIL never clips.
  EXPECT_GT(find(r, "mxfp4").attention[qkv].cosine, find(r, "mxfp4/floor").attention[qkv].cosine);
  EXPECT_GT(find(r, "mxfp8").attention[qkv].cosine, 0.999);
}

TEST(ExplorePareto, FrontierKeepsOnlyUndominatedPoints) {
  const std::vector<double> bits{4, 4, 5, 6, 6.5, 8, 3};
  const std::vector<double> err{0.3, 0.2, 0.25, 0.1, 0.1, 0.01, std::nan("")};
  EXPECT_EQ(pareto_frontier(bits, err), (std::vector<size_t>{1, 3, 5}));
  EXPECT_TRUE(pareto_frontier({}, {}).empty());
}

TEST(ExploreSweep, TensorErrorIsRelativeL2AndSnr) {
  const TensorError e = tensor_error({3.0f, 4.0f}, {3.0f, 4.5f});
  EXPECT_DOUBLE_EQ(e.rel_l2, 0.1);
  EXPECT_NEAR(e.snr_db, 20.0, 1e-12);
  EXPECT_TRUE(std::isinf(tensor_error({1.0f}, {1.0f}).snr_db));
}

// ---------------------------------------------------------------------------------------------
// Data.

TEST(ExploreData, DistributionsHaveTheirShape) {
  const AttentionShape s{1, 1024, 1024, 1, 1, 128};
  auto moments = [](const std::vector<float>& x) {
    double m = 0, m2 = 0, m4 = 0;
    for (float v : x) m += v;
    m /= double(x.size());
    for (float v : x) {
      const double d = v - m;
      m2 += d * d;
      m4 += d * d * d * d;
    }
    m2 /= double(x.size());
    m4 /= double(x.size());
    return std::array<double, 3>{m, m2, m4 / (m2 * m2)};  // mean, variance, kurtosis
  };
  const auto normal = moments(generate_data(Distribution::Normal, s, 1).q);
  EXPECT_NEAR(normal[0], 0.0, 0.01);
  EXPECT_NEAR(normal[1], 1.0, 0.02);
  EXPECT_NEAR(normal[2], 3.0, 0.1);
  const auto uniform = moments(generate_data(Distribution::Uniform, s, 1).q);
  EXPECT_NEAR(uniform[1], 1.0 / 3.0, 0.01);
  const auto t = moments(generate_data(Distribution::StudentT, s, 1).q);
  EXPECT_NEAR(t[1], 1.0, 0.3);  // unit variance in expectation; t_3's sample variance is noisy
  EXPECT_GT(t[2], 6.0);         // heavy tails

  // Outliers: D / 32 channels of K with mean 10; the rest mean 0.
  const AttentionData o = generate_data(Distribution::Outliers, s, 1);
  int outlier_channels = 0;
  for (int64_t d = 0; d < s.head_dim; ++d) {
    double m = 0;
    for (int64_t j = 0; j < s.seq_kv; ++j) m += o.k[size_t(j * s.head_dim + d)];
    m /= double(s.seq_kv);
    if (std::fabs(m - kOutlierOffset) < 1.5)
      ++outlier_channels;
    else
      EXPECT_NEAR(m, 0.0, 0.2) << "channel " << d;
  }
  EXPECT_EQ(outlier_channels, s.head_dim / kOutlierEvery);

  // Sink: token 0 is 20 times the others' norm.
  const AttentionData sink = generate_data(Distribution::Sink, s, 1);
  auto norm = [&](const std::vector<float>& x, int64_t token) {
    double n = 0;
    for (int64_t d = 0; d < s.head_dim; ++d)
      n += double(x[size_t(token * s.head_dim + d)]) * x[size_t(token * s.head_dim + d)];
    return std::sqrt(n);
  };
  for (const auto* x : {&sink.q, &sink.k, &sink.v}) EXPECT_GT(norm(*x, 0), 10.0 * norm(*x, 1));
}

// ---------------------------------------------------------------------------------------------
// .npy input.

TEST(ExploreNpy, ReadsFloat32Float16AndFloat64) {
  const std::string dir = temp_dir("read");
  const std::vector<float> x{1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f};
  write_npy(dir + "/x.npy", {2, 3}, x.data());
  const NpyArray a = read_npy(dir + "/x.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.dtype, "<f4");
  EXPECT_EQ(a.data, x);

  write_npy(dir + "/v.npy", {4}, x.data());  // a 1-tuple shape "(4,)"
  EXPECT_EQ(read_npy(dir + "/v.npy").shape, (std::vector<int64_t>{4}));

  // float16: 1, -2.5, 65504 (largest), 2^-24 (smallest subnormal).
  const uint16_t h[] = {0x3C00, 0xC100, 0x7BFF, 0x0001};
  write_raw_npy(dir + "/h.npy", "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", h, sizeof h);
  const NpyArray ha = read_npy(dir + "/h.npy");
  EXPECT_EQ(ha.data, (std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24)}));

  const double d[] = {0.1, -1e30, 2.0};
  write_raw_npy(dir + "/d.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 3), }", d, sizeof d);
  const NpyArray da = read_npy(dir + "/d.npy");
  EXPECT_EQ(da.shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(da.data, (std::vector<float>{0.1f, -1e30f, 2.0f}));
}

TEST(ExploreNpy, ErrorsNameTheFileAndTheProblem) {
  const std::string dir = temp_dir("errors");
  auto message = [](const std::string& path) {
    try {
      read_npy(path);
    } catch (const NpyError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  auto expect_has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << "'" << msg << "' lacks '" << part << "'";
  };
  const std::string missing = dir + "/missing_q.npy";
  expect_has(message(missing), missing);
  expect_has(message(missing), "cannot open");

  const int32_t ints[] = {1, 2, 3};
  write_raw_npy(dir + "/ints.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", ints, sizeof ints);
  expect_has(message(dir + "/ints.npy"), dir + "/ints.npy");
  expect_has(message(dir + "/ints.npy"), "'<i4'");

  const float f[] = {1, 2};
  write_raw_npy(dir + "/big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f, sizeof f);
  expect_has(message(dir + "/big.npy"), "'>f4'");
  write_raw_npy(dir + "/fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }", f, sizeof f);
  expect_has(message(dir + "/fortran.npy"), "Fortran");
  write_raw_npy(dir + "/short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", f, sizeof f);
  expect_has(message(dir + "/short.npy"), "fewer bytes");
  std::ofstream(dir + "/text.npy") << "not numpy";
  expect_has(message(dir + "/text.npy"), "not a .npy file");
}

TEST(ExploreNpy, LoadChecksShapesAndNamesTheFiles) {
  const std::string dir = temp_dir("load");
  auto save = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> x(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3.0f;
    write_npy(dir + "/" + name, shape, x.data());
    return dir + "/" + name;
  };
  auto error = [&](const std::string& q, const std::string& k, const std::string& v) {
    try {
      load_npy_data(q, k, v);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const auto q = save("q.npy", {8, 4, 16}), k = save("k.npy", {8, 2, 16}), v = save("v.npy", {8, 2, 16});
  const AttentionData ok = load_npy_data(q, k, v);
  EXPECT_EQ(ok.shape.seq_q, 8);
  EXPECT_EQ(ok.shape.heads_q, 4);
  EXPECT_EQ(ok.shape.heads_kv, 2);
  EXPECT_EQ(ok.shape.head_dim, 16);
  EXPECT_EQ(ok.q.size(), 8u * 4 * 16);
  const AttentionData one = load_npy_data(q, k, v, 1);  // the first KV head and its two query heads
  EXPECT_EQ(one.shape.heads_q, 2);
  EXPECT_EQ(one.shape.heads_kv, 1);
  EXPECT_EQ(one.k[16], ok.k[32]);  // token 1, head 0

  const auto v_short = save("v_short.npy", {8, 2, 8});
  const std::string e1 = error(q, k, v_short);
  EXPECT_NE(e1.find(k), std::string::npos) << e1;
  EXPECT_NE(e1.find(v_short), std::string::npos) << e1;
  const auto q_d = save("q_d.npy", {8, 4, 32});
  EXPECT_NE(error(q_d, k, v).find(q_d), std::string::npos);
  const auto q_h = save("q_h.npy", {8, 3, 16});
  EXPECT_NE(error(q_h, k, v).find("not a multiple"), std::string::npos);
  const auto rank5 = save("r5.npy", {1, 1, 8, 2, 16});
  EXPECT_NE(error(q, rank5, v).find(rank5), std::string::npos);
  EXPECT_NE(error(q, k, dir + "/nope.npy").find(dir + "/nope.npy"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Outputs.

TEST(ExploreOutputs, CsvJsonAndSvgCarryEveryFormat) {
  const AttentionShape s{1, 64, 64, 2, 1, 32};
  ExploreOptions opt;
  for (const auto& nf : named_formats()) opt.formats.push_back(nf.format);
  opt.formats.push_back(*parse_format("e5m2/k16/ue4m3/floor"));  // rounds normal-sized scales to zero
  opt.smoothing = Smoothing{true, true};
  const ExploreReport r = explore_formats(generate_data(Distribution::Normal, s, 3), opt);
  ASSERT_EQ(r.results.size(), opt.formats.size());

  const std::string csv = to_csv({r});
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = csv.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(csv.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 1 + opt.formats.size());
  const auto fields = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const auto& l : lines) EXPECT_EQ(std::count(l.begin(), l.end(), ','), fields) << l;
  EXPECT_EQ(lines[0].rfind("data,", 0), 0u);

  const std::string json = to_json({r});
  EXPECT_EQ(std::count(json.begin(), json.end(), '{'), std::count(json.begin(), json.end(), '}'));
  EXPECT_EQ(std::count(json.begin(), json.end(), '['), std::count(json.begin(), json.end(), ']'));
  EXPECT_EQ(json.find("nan"), std::string::npos);
  EXPECT_EQ(json.find("inf"), std::string::npos);

  const std::string svg = to_svg({r});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_GE(std::count(svg.begin(), svg.end(), '\n'), 50);
  for (const auto& nf : named_formats()) {
    EXPECT_NE(json.find("\"" + std::string(nf.name) + "\""), std::string::npos) << nf.name;
    EXPECT_NE(svg.find(">" + std::string(nf.name) + "<"), std::string::npos) << nf.name << " not labelled";
  }
  size_t polylines = 0;
  for (size_t at = 0; (at = svg.find("<polyline", at)) != std::string::npos; ++at) ++polylines;
  EXPECT_EQ(polylines, 4u);  // a frontier per mode, plain and smoothed

  const std::string dir = temp_dir("outputs");
  write_text_file(dir + "/x.svg", svg);
  EXPECT_EQ(std::filesystem::file_size(dir + "/x.svg"), svg.size());
  EXPECT_THROW(write_text_file(dir + "/no/such/dir/x.csv", csv), std::runtime_error);
}

}  // namespace
}  // namespace mxattn::explore
