#include "mxattn/reference/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "mxattn/reference/quantize.h"

namespace mxattn {

void check_attention_shape(const AttentionShape& s) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("attention shape: " + what);
  };
  need(s.batch >= 1, "batch must be >= 1, got " + std::to_string(s.batch));
  need(s.seq_q >= 1, "seq_q must be >= 1, got " + std::to_string(s.seq_q));
  need(s.seq_kv >= 1, "seq_kv must be >= 1, got " + std::to_string(s.seq_kv));
  need(s.heads_kv >= 1, "heads_kv must be >= 1, got " + std::to_string(s.heads_kv));
  need(s.heads_q >= 1 && s.heads_q % s.heads_kv == 0,
       "heads_q (" + std::to_string(s.heads_q) + ") must be a positive multiple of heads_kv (" +
           std::to_string(s.heads_kv) + ")");
  need(s.head_dim >= 1, "head_dim must be >= 1, got " + std::to_string(s.head_dim));
}

AttentionResult attention_fp64(const double* q, const double* k, const double* v, const AttentionShape& s,
                               const AttentionOptions& opt) {
  check_attention_shape(s);
  const int64_t D = s.head_dim, group = s.heads_q / s.heads_kv;
  const double scale = opt.softmax_scale != 0.0 ? opt.softmax_scale : 1.0 / std::sqrt(double(D));
  AttentionResult res;
  res.out.assign(size_t(s.q_elems()), 0.0);
  res.lse.assign(size_t(s.batch * s.heads_q * s.seq_q), 0.0);

  // One (batch, query head) pair per task; rows are independent.
  auto run = [&](int64_t task) {
    const int64_t b = task / s.heads_q, h = task % s.heads_q, hk = h / group;
    std::vector<double> p(size_t(s.seq_kv));
    for (int64_t i = 0; i < s.seq_q; ++i) {
      const double* qi = q + ((b * s.seq_q + i) * s.heads_q + h) * D;
      const int64_t last = opt.causal ? std::min(s.seq_kv - 1, i + s.seq_kv - s.seq_q) : s.seq_kv - 1;
      double* o = &res.out[size_t(((b * s.seq_q + i) * s.heads_q + h) * D)];
      double& lse = res.lse[size_t((b * s.heads_q + h) * s.seq_q + i)];
      if (last < 0) {
        lse = -std::numeric_limits<double>::infinity();
        continue;
      }
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j <= last; ++j) {
        const double* kj = k + ((b * s.seq_kv + j) * s.heads_kv + hk) * D;
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
        p[size_t(j)] = dot * scale;
        m = std::max(m, p[size_t(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j <= last; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
      for (int64_t j = 0; j <= last; ++j) {
        const double* vj = v + ((b * s.seq_kv + j) * s.heads_kv + hk) * D;
        const double w = p[size_t(j)] / sum;
        for (int64_t d = 0; d < D; ++d) o[d] += w * vj[d];
      }
      lse = m + std::log(sum);
    }
  };
  const int64_t tasks = s.batch * s.heads_q;
  const int64_t threads = std::min<int64_t>(tasks, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t task = t; task < tasks; task += threads) run(task);
    });
  for (auto& th : pool) th.join();
  return res;
}

AttentionResult mx_attention(const float* q, const float* k, const float* v, const AttentionShape& s,
                             const MxAttentionFormats& f, const AttentionOptions& opt) {
  check_attention_shape(s);
  const std::vector<int64_t> q_shape{s.batch, s.seq_q, s.heads_q, s.head_dim};
  const std::vector<int64_t> kv_shape{s.batch, s.seq_kv, s.heads_kv, s.head_dim};
  auto round_trip = [](const float* x, const std::vector<int64_t>& shape, int axis, const Format& fmt) {
    const std::vector<float> back = dequantize(quantize(x, shape, {}, axis, fmt));
    return std::vector<double>(back.begin(), back.end());
  };
  const auto qd = round_trip(q, q_shape, 3, f.q);
  const auto kd = round_trip(k, kv_shape, 3, f.k);
  const auto vd = round_trip(v, kv_shape, f.v_axis == VBlockAxis::Seq ? 1 : 3, f.v);
  return attention_fp64(qd.data(), kd.data(), vd.data(), s, opt);
}

ErrorStats compare(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) throw std::invalid_argument("compare: sizes differ");
  ErrorStats e;
  double dot = 0, gg = 0, rr = 0, dd = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) e.finite = false;
    const double d = got[i] - ref[i];
    dot += got[i] * ref[i];
    gg += got[i] * got[i];
    rr += ref[i] * ref[i];
    dd += d * d;
    e.max_abs = std::max(e.max_abs, std::fabs(d));
  }
  e.cosine = (gg > 0 && rr > 0) ? dot / std::sqrt(gg * rr) : (gg == rr ? 1.0 : 0.0);
  e.rel_l2 = rr > 0 ? std::sqrt(dd / rr) : std::sqrt(dd);
  if (!e.finite) e.cosine = e.rel_l2 = e.max_abs = std::numeric_limits<double>::quiet_NaN();
  return e;
}

}  // namespace mxattn
