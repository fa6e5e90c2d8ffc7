#include "mxattn/explore/data.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "mxattn/explore/npy.h"

namespace mxattn::explore {
namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// [S, D] -> [1, S, 1, D]; [S, H, D] -> [1, S, H, D]; [B, S, H, D] as is.
std::vector<int64_t> as_bshd(const NpyArray& a, const std::string& path) {
  const auto& s = a.shape;
  if (s.size() == 2) return {1, s[0], 1, s[1]};
  if (s.size() == 3) return {1, s[0], s[1], s[2]};
  if (s.size() == 4) return s;
  throw std::runtime_error(path + ": shape " + shape_str(s) + " has rank " + std::to_string(s.size()) +
                           "; expected [S, D], [S, H, D] or [B, S, H, D]");
}

// The first `heads` heads of a [B, S, H, D] tensor.
std::vector<float> first_heads(const std::vector<float>& x, const std::vector<int64_t>& bshd, int64_t heads) {
  const int64_t rows = bshd[0] * bshd[1], H = bshd[2], D = bshd[3];
  std::vector<float> out(static_cast<size_t>(rows * heads * D));
  for (int64_t r = 0; r < rows; ++r) std::copy_n(x.begin() + r * H * D, heads * D, out.begin() + r * heads * D);
  return out;
}

}  // namespace

const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::Normal: return "normal";
    case Distribution::Uniform: return "uniform";
    case Distribution::StudentT: return "student-t";
    case Distribution::Outliers: return "outliers";
    default: return "sink";
  }
}

std::optional<Distribution> parse_distribution(std::string_view name) {
  for (Distribution d : kAllDistributions)
    if (name == distribution_name(d)) return d;
  if (name == "t" || name == "student_t" || name == "studentt") return Distribution::StudentT;
  return std::nullopt;
}

AttentionData generate_data(Distribution dist, const AttentionShape& shape, uint64_t seed) {
  check_attention_shape(shape);
  AttentionData data;
  data.name = distribution_name(dist);
  data.shape = shape;
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  constexpr double kNu = 3.0;
  std::student_t_distribution<double> student(kNu);
  const double t_norm = std::sqrt((kNu - 2.0) / kNu);  // t_3 has variance 3
  auto draw = [&] {
    switch (dist) {
      case Distribution::Uniform: return uniform(gen);
      case Distribution::StudentT: return float(student(gen) * t_norm);
      default: return normal(gen);
    }
  };
  for (auto* t : {&data.q, &data.k, &data.v}) {
    t->resize(size_t(t == &data.q ? shape.q_elems() : shape.kv_elems()));
    for (float& x : *t) x = draw();
  }
  const int64_t D = shape.head_dim;
  if (dist == Distribution::Outliers) {
    // The same outlier channels for every token of a head, as in LLM keys; chosen per (batch, head).
    const int64_t count = std::max<int64_t>(1, D / kOutlierEvery);
    std::vector<int64_t> channels(static_cast<size_t>(D));
    for (int64_t b = 0; b < shape.batch; ++b)
      for (int64_t h = 0; h < shape.heads_kv; ++h) {
        std::iota(channels.begin(), channels.end(), 0);
        std::shuffle(channels.begin(), channels.end(), gen);
        for (int64_t i = 0; i < count; ++i)
          for (int64_t j = 0; j < shape.seq_kv; ++j) {
            float& x = data.k[size_t(((b * shape.seq_kv + j) * shape.heads_kv + h) * D + channels[size_t(i)])];
            x = x * kOutlierScale + kOutlierOffset;
          }
      }
  }
  if (dist == Distribution::Sink) {
    auto scale_token0 = [&](std::vector<float>& t, int64_t seq, int64_t heads) {
      for (int64_t b = 0; b < shape.batch; ++b)
        for (int64_t i = 0; i < heads * D; ++i) t[size_t(b * seq * heads * D + i)] *= kSinkScale;
    };
    scale_token0(data.q, shape.seq_q, shape.heads_q);
    scale_token0(data.k, shape.seq_kv, shape.heads_kv);
    scale_token0(data.v, shape.seq_kv, shape.heads_kv);
  }
  return data;
}

AttentionData load_npy_data(const std::string& q_path, const std::string& k_path, const std::string& v_path,
                            int64_t max_kv_heads) {
  NpyArray q = read_npy(q_path), k = read_npy(k_path), v = read_npy(v_path);
  const auto qs = as_bshd(q, q_path), ks = as_bshd(k, k_path), vs = as_bshd(v, v_path);
  if (ks != vs)
    throw std::runtime_error("K (" + k_path + ", shape " + shape_str(k.shape) + ") and V (" + v_path + ", shape " +
                             shape_str(v.shape) + ") must have the same shape");
  if (qs[0] != ks[0] || qs[3] != ks[3])
    throw std::runtime_error("Q (" + q_path + ", shape " + shape_str(q.shape) + ") and K (" + k_path + ", shape " +
                             shape_str(k.shape) + ") must have the same batch and head_dim");
  if (qs[2] % ks[2] != 0)
    throw std::runtime_error("Q (" + q_path + ") has " + std::to_string(qs[2]) + " heads, not a multiple of K's (" +
                             k_path + ") " + std::to_string(ks[2]));
  for (const auto* t : {&q, &k, &v})
    for (float x : t->data)
      if (!std::isfinite(x)) {
        const std::string& p = t == &q ? q_path : (t == &k ? k_path : v_path);
        throw std::runtime_error(p + ": holds NaN or Inf; the explorer needs finite inputs");
      }

  AttentionData data;
  data.name = "npy:" + q_path.substr(q_path.find_last_of('/') + 1);
  data.shape = {qs[0], qs[1], ks[1], qs[2], ks[2], qs[3]};
  data.q = std::move(q.data);
  data.k = std::move(k.data);
  data.v = std::move(v.data);
  if (max_kv_heads > 0 && max_kv_heads < ks[2]) {
    const int64_t group = qs[2] / ks[2];
    data.q = first_heads(data.q, qs, max_kv_heads * group);
    data.k = first_heads(data.k, ks, max_kv_heads);
    data.v = first_heads(data.v, vs, max_kv_heads);
    data.shape.heads_q = max_kv_heads * group;
    data.shape.heads_kv = max_kv_heads;
  }
  return data;
}

}  // namespace mxattn::explore
