// Paged KV cache: append (bit-exact against the CPU reference quantizer) and split-KV decode against
// FP64 attention of the dequantized cache (kernel error, bar 5e-3) and of the unquantized K, V.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "mxattn/api/device_buffer.h"
#include "gpu_test_util.h"
#include "mxattn/api/kv_cache.h"
#include "mxattn/reference/attention.h"
#include "mxattn/reference/quantize.h"

namespace mxattn {
namespace {

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

template <typename T>
using Dev = DeviceArray<T>;


struct DecodeCase {
  const char* format;  // K's, and V's unless v_format
  int head_dim = 128, heads_q = 8, heads_kv = 2, q_len = 1, page_size = 16;
  std::vector<int> seq_lens;
  bool causal = true;
  int num_splits = 0;
  bool fp16_io = false;  // Q and the output in FP16 (Q values are BF16 values, exact in FP16)
  const char* v_format = nullptr;
  // NaN in one element of sequence 0 before quantization: its block's scale becomes NaN. 'k' or 'v'
  // at (nan_key, head 0, channel nan_channel); 0: none.
  char nan_in = 0;
  int nan_key = 0, nan_channel = 5;
  // V's tokens times 2^u, u in [-v_spread, v_spread] varying along the sequence (fixed pattern): block scales
  // that rise and fall from tile to tile and differ within one.
  int v_spread = 0;
};


// The LSE's error, relative to max(1, |LSE|): FP32 sums over at most a few thousand keys (measured at most
// 1e-6 on the H100); the bar the decode issue sets.
constexpr double kLseBar = 1e-5;

void run_decode(const DecodeCase& c, std::mt19937& rng) {
  const auto fmt = parse_format(c.format), vfmt = parse_format(c.v_format ? c.v_format : c.format);
  ASSERT_TRUE(fmt && vfmt);
  const int B = int(c.seq_lens.size()), D = c.head_dim, Hk = c.heads_kv, Hq = c.heads_q;
  char desc[200];
  std::snprintf(desc, sizeof desc, "%s%s%s D%d Hq%d Hkv%d q_len%d page%d B%d max_len%d%s%s V spread %d", c.format,
                c.v_format ? " / v " : "", c.v_format ? c.v_format : "", D, Hq, Hk, c.q_len, c.page_size, B,
                *std::max_element(c.seq_lens.begin(), c.seq_lens.end()), c.causal ? " causal" : "",
                c.nan_in == 'k' ? " NaN in K" : c.nan_in == 'v' ? " NaN in V" : "", c.v_spread);
  SCOPED_TRACE(desc);
  const int max_len = *std::max_element(c.seq_lens.begin(), c.seq_lens.end());
  const int max_pages = (max_len + c.page_size - 1) / c.page_size;
  // Pages handed out in a shuffled order, with spare pages nobody owns.
  const int num_pages = B * max_pages + 3;
  std::vector<int32_t> perm(num_pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> table(size_t(B) * max_pages, -1);
  for (int b = 0, next = 0; b < B; ++b)
    for (int pg = 0; pg < (c.seq_lens[b] + c.page_size - 1) / c.page_size; ++pg) table[size_t(b) * max_pages + pg] = perm[next++];

  // K, V per sequence as BF16 [1, L, Hk, D]; the new tokens' part is appended separately.
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<uint16_t>> k16(B), v16(B);
  std::vector<std::vector<float>> kf(B), vf(B);
  float amax_k = 0, amax_v = 0;
  for (int b = 0; b < B; ++b) {
    const size_t n = size_t(c.seq_lens[b]) * Hk * D;
    k16[b].resize(n), v16[b].resize(n), kf[b].resize(n), vf[b].resize(n);
    for (size_t i = 0; i < n; ++i) {
      k16[b][i] = uint16_t(test::to_dtype_bits(nd(rng), DType::BF16)), kf[b][i] = test::from_dtype_bits(k16[b][i], DType::BF16);
      const int tok = int(i / (size_t(Hk) * D));
      const float v_mag = c.v_spread ? std::ldexp(1.0f, (tok * 37 + b * 11) % (2 * c.v_spread + 1) - c.v_spread) : 1.0f;
      v16[b][i] = uint16_t(test::to_dtype_bits(nd(rng) * v_mag, DType::BF16)), vf[b][i] = test::from_dtype_bits(v16[b][i], DType::BF16);
      amax_k = std::max(amax_k, std::fabs(kf[b][i])), amax_v = std::max(amax_v, std::fabs(vf[b][i]));
    }
  }
  if (c.nan_in) {
    const size_t at = (size_t(c.nan_key) * Hk) * D + c.nan_channel;  // sequence 0, head 0
    auto& x16 = c.nan_in == 'k' ? k16[0] : v16[0];
    auto& xf = c.nan_in == 'k' ? kf[0] : vf[0];
    x16[at] = 0x7FC0, xf[at] = NAN;
  }
  const float sk = nvfp4_tensor_scale(amax_k, fmt->elem), sv = nvfp4_tensor_scale(amax_v, vfmt->elem);

  KvCacheView cache;
  cache.k_format = *fmt, cache.v_format = *vfmt;
  cache.num_pages = num_pages, cache.page_size = c.page_size, cache.heads_kv = Hk, cache.head_dim = D;
  Dev<uint8_t> kc(cache.code_bytes(*fmt)), ks(cache.scale_bytes(*fmt)), vc(cache.code_bytes(*vfmt)),
      vs(cache.scale_bytes(*vfmt));
  CUDA_OK(cudaMemset(kc.data(), 0xFF, kc.size()));  // unwritten slots hold NaN codes and scales
  CUDA_OK(cudaMemset(ks.data(), 0xFF, ks.size()));
  CUDA_OK(cudaMemset(vc.data(), 0xFF, vc.size()));
  CUDA_OK(cudaMemset(vs.data(), 0xFF, vs.size()));
  Dev<float> d_sk(std::vector<float>{sk}), d_sv(std::vector<float>{sv});
  cache.k_codes = kc.data(), cache.k_scales = ks.data(), cache.v_codes = vc.data(), cache.v_scales = vs.data();
  cache.k_tensor_scale = d_sk.data(), cache.v_tensor_scale = d_sv.data();
  Dev<int32_t> d_table(table);

  // Append: every sequence's tokens in two steps (a prompt, then the q_len new tokens), padded to one
  // [B, n, Hk, D] batch per step: sequences append the same count, so shorter prompts start later.
  for (int step = 0; step < 2; ++step) {
    std::vector<int32_t> pos(B);
    const int n = step == 0 ? *std::min_element(c.seq_lens.begin(), c.seq_lens.end()) - c.q_len : c.q_len;
    if (n <= 0) continue;
    for (int b = 0; b < B; ++b) pos[b] = step == 0 ? 0 : c.seq_lens[b] - c.q_len;
    std::vector<uint16_t> kb(size_t(B) * n * Hk * D), vb(kb.size());
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < n; ++i)
        for (int e = 0; e < Hk * D; ++e) {
          kb[(size_t(b) * n + i) * Hk * D + e] = k16[b][size_t(pos[b] + i) * Hk * D + e];
          vb[(size_t(b) * n + i) * Hk * D + e] = v16[b][size_t(pos[b] + i) * Hk * D + e];
        }
    Dev<uint16_t> dk(kb), dv(vb);
    Dev<int32_t> dpos(pos);
    const int64_t st[3] = {int64_t(n) * Hk * D, int64_t(Hk) * D, D};
    const Status s = kv_cache_append(cache, {d_table.data(), max_pages, dpos.data(), B}, n, dk.data(), st, dv.data(), st,
                                     DType::BF16, nullptr);
    ASSERT_TRUE(s.ok) << s.message;
  }
  // The remaining middle tokens of longer sequences, one sequence at a time.
  const int first = *std::min_element(c.seq_lens.begin(), c.seq_lens.end()) - c.q_len;
  for (int b = 0; b < B; ++b) {
    const int from = std::max(first, 0), to = c.seq_lens[b] - c.q_len;
    if (to <= from) continue;
    const int n = to - from;
    std::vector<uint16_t> kb(k16[b].begin() + size_t(from) * Hk * D, k16[b].begin() + size_t(to) * Hk * D);
    std::vector<uint16_t> vb(v16[b].begin() + size_t(from) * Hk * D, v16[b].begin() + size_t(to) * Hk * D);
    Dev<uint16_t> dk(kb), dv(vb);
    Dev<int32_t> dpos(std::vector<int32_t>{from});
    const int64_t st[3] = {int64_t(n) * Hk * D, int64_t(Hk) * D, D};
    const Status s = kv_cache_append(cache, {d_table.data() + size_t(b) * max_pages, max_pages, dpos.data(), 1}, n, dk.data(),
                                     st, dv.data(), st, DType::BF16, nullptr);
    ASSERT_TRUE(s.ok) << s.message;
  }
  CUDA_OK(cudaDeviceSynchronize());

  // The cache must hold exactly what the CPU reference produces, row by row.
  const auto kc_h = kc.download(), ks_h = ks.download(), vc_h = vc.download(), vs_h = vs.download();
  const size_t rb = packed_bytes(size_t(D), fmt->elem.bits), sb = size_t(D / fmt->block);
  const size_t vrb = packed_bytes(size_t(D), vfmt->elem.bits), vsb = size_t(D / vfmt->block);
  std::vector<std::vector<float>> kd(B), vd(B);
  size_t mismatches = 0;
  for (int b = 0; b < B; ++b) {
    const std::vector<int64_t> shape{1, c.seq_lens[b], Hk, D};
    const QuantizedTensor qk = quantize(kf[b].data(), shape, {}, 3, *fmt, ScaleLayout::RowMajor, sk);
    const QuantizedTensor qv = quantize(vf[b].data(), shape, {}, 3, *vfmt, ScaleLayout::RowMajor, sv);
    kd[b] = dequantize(qk), vd[b] = dequantize(qv);
    for (int j = 0; j < c.seq_lens[b]; ++j)
      for (int h = 0; h < Hk; ++h) {
        const size_t ref_row = size_t(j) * Hk + h;
        const size_t row = (size_t(table[size_t(b) * max_pages + j / c.page_size]) * Hk + h) * c.page_size + j % c.page_size;
        const bool same = !std::memcmp(&kc_h[row * rb], &qk.codes[ref_row * rb], rb) &&
                          !std::memcmp(&ks_h[row * sb], &qk.scales[ref_row * sb], sb) &&
                          !std::memcmp(&vc_h[row * vrb], &qv.codes[ref_row * vrb], vrb) &&
                          !std::memcmp(&vs_h[row * vsb], &qv.scales[ref_row * vsb], vsb);
        if (!same && mismatches++ < 5) ADD_FAILURE() << "cache row of seq " << b << " token " << j << " head " << h << " differs";
      }
  }
  ASSERT_EQ(mismatches, 0u);

  // Decode.
  std::vector<uint16_t> q16(size_t(B) * c.q_len * Hq * D);
  for (auto& x : q16) {
    x = uint16_t(test::to_dtype_bits(nd(rng), DType::BF16));
    if (std::fabs(test::from_dtype_bits(x, DType::BF16)) < 1e-4f) x = 0;
  }
  std::vector<uint16_t> q_dev(q16);
  if (c.fp16_io)
    // BF16 values of at least 1e-4 (smaller ones were zeroed above) are exact in FP16.
    for (auto& x : q_dev) x = uint16_t(test::to_dtype_bits(test::from_dtype_bits(x, DType::BF16), DType::F16));
  Dev<uint16_t> dq(q_dev), dout(q16.size());
  Dev<float> dlse(size_t(B) * Hq * c.q_len);
  CUDA_OK(cudaMemset(dout.data(), 0xFF, dout.size() * 2));
  CUDA_OK(cudaMemset(dlse.data(), 0xFF, dlse.size() * 4));
  Dev<int32_t> dlens(std::vector<int32_t>(c.seq_lens.begin(), c.seq_lens.end()));
  DecodeArgs a;
  a.cache = cache;
  a.seqs = {d_table.data(), max_pages, dlens.data(), B};
  a.max_seq_len = max_len, a.q_len = c.q_len, a.heads_q = Hq;
  a.q = dq.data();
  a.q_dtype = a.out_dtype = c.fp16_io ? DType::F16 : DType::BF16;
  a.q_strides[0] = int64_t(c.q_len) * Hq * D, a.q_strides[1] = int64_t(Hq) * D, a.q_strides[2] = D;
  a.causal = c.causal;
  a.out = dout.data();
  std::copy(a.q_strides, a.q_strides + 3, a.out_strides);
  a.lse = dlse.data();
  a.num_splits = c.num_splits;
  a.seq_lens_host = c.seq_lens.data();  // the plan for sequences of different lengths (more splits)
  // The workspace starts as random bytes: its arrival words need no clearing (decode_merge.h).
  std::vector<uint8_t> junk(decode_workspace_bytes(a));
  for (auto& x : junk) x = uint8_t(rng());
  Dev<uint8_t> ws(junk);
  a.workspace = ws.data(), a.workspace_bytes = ws.size();
  const Status s = attention_decode(a, nullptr);
  ASSERT_TRUE(s.ok) << s.message;
  CUDA_OK(cudaDeviceSynchronize());
  const auto out_h = dout.download();
  const auto lse_h = dlse.download();
  // A second call reuses the workspace as the first left it. Warps claim tiles as they go, so the
  // sums may round differently: it must meet the same bar, not match bit for bit.
  CUDA_OK(cudaMemset(dout.data(), 0xFF, dout.size() * 2));
  ASSERT_TRUE(attention_decode(a, nullptr).ok);
  CUDA_OK(cudaDeviceSynchronize());
  const auto out_again = dout.download();

  std::vector<double> got, got_again, ref, exact, lse_got, lse_ref;
  double lse_err = 0;
  for (int b = 0; b < B; ++b) {
    const AttentionShape shp{1, c.q_len, c.seq_lens[b], Hq, Hk, D};
    std::vector<double> qb(size_t(c.q_len) * Hq * D);
    for (size_t i = 0; i < qb.size(); ++i) qb[i] = test::from_dtype_bits(q16[size_t(b) * qb.size() + i], DType::BF16);
    const std::vector<double> kdd(kd[b].begin(), kd[b].end()), vdd(vd[b].begin(), vd[b].end());
    const std::vector<double> kff(kf[b].begin(), kf[b].end()), vff(vf[b].begin(), vf[b].end());
    const AttentionResult r = attention_fp64(qb.data(), kdd.data(), vdd.data(), shp, {c.causal, 0.0});
    const AttentionResult x = attention_fp64(qb.data(), kff.data(), vff.data(), shp, {c.causal, 0.0});
    for (size_t i = 0; i < qb.size(); ++i) {
      const uint16_t o = out_h[size_t(b) * qb.size() + i];
      got.push_back(test::from_dtype_bits(o, c.fp16_io ? DType::F16 : DType::BF16));
      got_again.push_back(test::from_dtype_bits(out_again[size_t(b) * qb.size() + i], c.fp16_io ? DType::F16 : DType::BF16));
    }
    ref.insert(ref.end(), r.out.begin(), r.out.end());
    exact.insert(exact.end(), x.out.begin(), x.out.end());
    for (size_t i = 0; i < r.lse.size(); ++i) {
      lse_got.push_back(lse_h[size_t(b) * r.lse.size() + i]), lse_ref.push_back(r.lse[i]);
      // Relative to max(1, |LSE|) (-inf rows must match exactly: their difference is NaN, counted as Inf).
      const double d = std::isinf(r.lse[i]) && lse_got.back() == r.lse[i]
                            ? 0.0
                            : std::fabs(lse_got.back() - r.lse[i]) / std::max(1.0, std::fabs(r.lse[i]));
      if (!std::isnan(r.lse[i])) lse_err = std::max(lse_err, std::isfinite(d) ? d : INFINITY);
    }
  }
  if (c.nan_in) {  // NaN exactly where the reference has it, in the output and the LSE; the rest within the bar
    size_t wrong = 0, nan_rows = 0;
    std::vector<double> got_f, ref_f;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(got[i]) != std::isnan(ref[i]) && wrong++ < 5)
        ADD_FAILURE() << "out[" << i << "] (row " << i / size_t(D) << ", d " << i % size_t(D) << ") = " << got[i]
                      << ", reference " << ref[i];
      if (!std::isnan(ref[i])) got_f.push_back(got[i]), ref_f.push_back(ref[i]);
    }
    for (size_t i = 0; i < lse_got.size(); ++i) {
      nan_rows += std::isnan(lse_ref[i]);
      if (std::isnan(lse_got[i]) != std::isnan(lse_ref[i]) && wrong++ < 10)
        ADD_FAILURE() << "lse[" << i << "] = " << lse_got[i] << ", reference " << lse_ref[i];
    }
    const ErrorStats e = compare(got_f, ref_f);
    std::printf("  %-62s NaN pattern %s (%zu of %zu values, %zu NaN LSEs); finite part rel_l2 %.2e\n", desc,
                wrong ? "WRONG" : "exact", got.size() - got_f.size(), got.size(), nan_rows, e.rel_l2);
    EXPECT_EQ(wrong, 0u);
    EXPECT_LT(got_f.size(), got.size()) << "no NaN reached the output";
    EXPECT_LE(e.rel_l2, 5e-3);
    EXPECT_LE(lse_err, kLseBar);
    return;
  }
  const ErrorStats e = compare(got, ref), fe = compare(got, exact);
  std::printf("  %-62s kernel: rel_l2 %.2e cos %.6f | vs unquantized: cos %.5f | lse max %.1e\n", desc, e.rel_l2,
              e.cosine, fe.cosine, lse_err);
  if (!(e.rel_l2 <= 5e-3)) {
    int shown = 0;
    for (size_t i = 0; i < got.size() && shown < 8; ++i)
      if (!(std::fabs(got[i] - ref[i]) <= 0.02 + 0.02 * std::fabs(ref[i])) && ++shown)
        ADD_FAILURE() << "out[" << i << "] (row " << i / size_t(D) << ", d " << i % size_t(D) << ") = " << got[i]
                      << ", reference " << ref[i];
  }
  EXPECT_TRUE(e.finite);
  EXPECT_LE(e.rel_l2, 5e-3);
  EXPECT_LE(lse_err, kLseBar);
  const ErrorStats again = compare(got_again, ref);
  EXPECT_TRUE(again.finite) << "second call";
  EXPECT_LE(again.rel_l2, 5e-3) << "second call";
}

TEST(DecodeAttention, EveryFormat) {
  std::mt19937 rng(std::random_device{}());
  for (const char* f : {"mxfp8", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "mxint8", "nvfp4"})
    run_decode({f, 128, 8, 2, 1, 16, {300, 1000, 77}}, rng);
}

TEST(DecodeAttention, ShapesPagesAndQueries) {
  std::mt19937 rng(std::random_device{}());
  for (int d : {64, 128, 256}) {
    run_decode({"mxfp4", d, 32, 8, 1, 64, {2000, 513}}, rng);
    run_decode({"mxfp8", d, 8, 1, 4, 16, {129, 40}}, rng);        // MQA, 4 query tokens: 32 rows
    run_decode({"nvfp4", d, 4, 2, 16, 32, {16, 700}}, rng);       // 16 query tokens, a sequence of only them
    run_decode({"mxfp4", d, 8, 2, 1, 16, {2048, 2048}}, rng);     // even lengths: 4 to 8 splits merged in a cluster
  }
  run_decode({"mxfp8", 128, 4, 4, 1, 1, {1, 5, 33}}, rng);       // page size 1, a one-token sequence
  run_decode({"mxfp6_e2m3", 128, 16, 2, 3, 256, {1500}, false}, rng);  // non-causal
  run_decode({"mxfp4", 128, 8, 2, 2, 16, {5000}, true, 1}, rng);       // one split: no merge across blocks
  run_decode({"mxfp4", 128, 8, 2, 2, 16, {5000}, true, 40}, rng);      // more splits than a cluster: the workspace merge
  run_decode({"mxfp8", 128, 8, 2, 2, 64, {900, 64}, true, 0, true}, rng);  // FP16 Q and output
}

// K and V in formats of different widths or blocks: the four named formats' codecs, every pair.
TEST(DecodeAttention, MixedFormats) {
  std::mt19937 rng(std::random_device{}());
  const char* formats[] = {"mxfp8", "mxfp6_e2m3", "mxfp4", "nvfp4"};
  for (const char* k : formats)
    for (const char* v : formats)
      if (std::strcmp(k, v)) run_decode({k, 128, 8, 2, 1, 16, {300, 1000}, true, 0, false, v}, rng);
  for (int d : {64, 256}) {
    run_decode({"mxfp8", d, 32, 8, 1, 64, {2000, 513}, true, 0, false, "mxfp4"}, rng);
    run_decode({"mxfp6_e3m2", d, 8, 1, 4, 16, {129, 40}, true, 0, false, "nvfp4"}, rng);
  }
  // Head dim 256 decodes K, and an E2M1 V, in halves (decode_traits.h kKParts): a 6-bit K with each V width.
  for (const char* v : {"mxfp8", "mxfp6_e2m3", "mxfp4"})
    run_decode({"mxfp6_e2m3", 256, 8, 2, 1, 16, {300, 1000}, true, 0, false, v}, rng);
  run_decode({"mxfp8", 128, 4, 4, 1, 1, {1, 5, 33}, true, 0, false, "mxfp4"}, rng);  // page size 1
  run_decode({"mxfp8_e5m2", 128, 8, 2, 1, 16, {300}, true, 0, false, "mxfp8"}, rng);   // one width, two elements
}

// V's block scales spread over 61 binades along the sequence (2^30 within a tile): the E8M0 V paths' running
// references (decode_kernel.h T::kVFold) rise and their O columns rescale, at every head dim, alone and beside 8-bit K.
TEST(DecodeAttention, SpreadValueScales) {
  std::mt19937 rng(std::random_device{}());
  for (int d : {64, 128, 256})
    for (const char* k : {"mxfp4", "mxfp8"}) {
      DecodeCase c{k, d, 8, 2, 1, 16, {700, 1000}, true, 0, false, "mxfp4"};
      c.v_spread = 30;
      run_decode(c, rng);
    }
  DecodeCase c{"nvfp4", 128, 8, 2, 1, 16, {700}, true, 0, false, "mxfp8"};  // the other V paths, as a check of the test
  c.v_spread = 30;
  run_decode(c, rng);
}

// A NaN in a cache block: NaN in exactly the reference's outputs and LSEs (K: the rows that see the key,
// every channel, and their LSE; V: the rows that see the key, the block's channels, finite LSEs).
TEST(DecodeAttention, NanBlocks) {
  std::mt19937 rng(std::random_device{}());
  for (const char* f : {"mxfp8", "mxfp4", "nvfp4", "mxfp6_e2m3"})
    for (char where : {'k', 'v'}) {
      DecodeCase c{f, 128, 8, 2, 1, 16, {300, 1000}};
      c.nan_in = where, c.nan_key = 37;
      run_decode(c, rng);
    }
  // Several query tokens, the NaN in the last key: only the last token sees it. One split and several.
  for (int splits : {1, 0})
    for (char where : {'k', 'v'}) {
      DecodeCase c{"mxfp8", 128, 8, 2, 4, 16, {200, 90}, true, splits, false, "mxfp4"};
      c.nan_in = where, c.nan_key = 199;
      run_decode(c, rng);
    }
}

// A cache array off the 16-byte alignment the page copies need, or a misaligned workspace, is
// refused, named, before any launch.
TEST(DecodeAttention, RefusesMisalignedCache) {
  const auto fmt = parse_format("mxfp4");
  ASSERT_TRUE(fmt);
  KvCacheView cache;
  cache.k_format = cache.v_format = *fmt;
  cache.num_pages = 2, cache.page_size = 64, cache.heads_kv = 1, cache.head_dim = 128;
  Dev<uint8_t> kc(cache.code_bytes(*fmt) + 16), ks(cache.scale_bytes(*fmt) + 16), vc(kc.size()), vs(ks.size());
  cache.k_codes = kc.data(), cache.k_scales = ks.data(), cache.v_codes = vc.data(), cache.v_scales = vs.data();
  Dev<int32_t> table(std::vector<int32_t>{0, 1}), lens(std::vector<int32_t>{100});
  Dev<uint16_t> q(8 * 128), out(8 * 128);
  DecodeArgs a;
  a.cache = cache, a.seqs = {table.data(), 2, lens.data(), 1};
  a.max_seq_len = 100, a.heads_q = 8, a.q = q.data(), a.out = out.data();
  a.q_strides[0] = a.out_strides[0] = a.q_strides[1] = a.out_strides[1] = 8 * 128;
  a.q_strides[2] = a.out_strides[2] = 128;
  Dev<uint8_t> ws(decode_workspace_bytes(a) + 16);
  a.workspace = ws.data(), a.workspace_bytes = ws.size();
  ASSERT_TRUE(attention_decode(a, nullptr).ok);
  a.workspace = ws.data() + 8;  // the arrival words need 8-byte atomics, the partials 8-byte loads
  const Status w = attention_decode(a, nullptr);
  EXPECT_FALSE(w.ok);
  EXPECT_NE(w.message.find("workspace: must be 16-byte aligned"), std::string::npos) << w.message;
  a.workspace = ws.data();
  const std::pair<uint8_t**, const char*> arrays[] = {{&a.cache.k_codes, "cache.k_codes"},
                                                       {&a.cache.k_scales, "cache.k_scales"},
                                                       {&a.cache.v_codes, "cache.v_codes"},
                                                       {&a.cache.v_scales, "cache.v_scales"}};
  for (const auto& [p, name] : arrays) {
    uint8_t* const aligned = *p;
    *p = aligned + 4;
    const Status s = attention_decode(a, nullptr);
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.message.find(std::string(name) + ": must be 16-byte aligned"), std::string::npos) << s.message;
    *p = aligned;
  }
  CUDA_OK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace mxattn
