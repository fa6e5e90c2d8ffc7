#include "mxattn/explore/smoothing.h"

#include <cmath>
#include <random>
#include <stdexcept>

namespace mxattn::explore {

std::string Smoothing::name() const {
  if (k_mean && hadamard) return "kmean+hadamard";
  if (k_mean) return "kmean";
  if (hadamard) return "hadamard";
  return "none";
}

int64_t hadamard_block(int64_t dim) {
  if (dim <= 0) throw std::invalid_argument("hadamard_block: dim must be positive");
  return dim & -dim;
}

std::vector<int8_t> random_signs(int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int8_t> s(static_cast<size_t>(n));
  for (auto& v : s) v = (gen() >> 63) ? int8_t(1) : int8_t(-1);
  return s;
}

void hadamard_rotate_rows(double* x, int64_t rows, int64_t dim, const std::vector<int8_t>& signs) {
  if (int64_t(signs.size()) != dim) throw std::invalid_argument("hadamard_rotate_rows: one sign per channel");
  const int64_t n = hadamard_block(dim);
  const double norm = 1.0 / std::sqrt(double(n));
  for (int64_t r = 0; r < rows; ++r) {
    double* row = x + r * dim;
    for (int64_t d = 0; d < dim; ++d) row[d] *= signs[size_t(d)];
    for (int64_t b = 0; b < dim; b += n) {
      double* v = row + b;
      // Sylvester's H_n, one butterfly stage per bit: H_2n = [[H_n, H_n], [H_n, -H_n]].
      for (int64_t len = 1; len < n; len <<= 1)
        for (int64_t i = 0; i < n; i += 2 * len)
          for (int64_t j = i; j < i + len; ++j) {
            const double a = v[j], c = v[j + len];
            v[j] = a + c;
            v[j + len] = a - c;
          }
      for (int64_t j = 0; j < n; ++j) v[j] *= norm;
    }
  }
}

void subtract_token_mean(double* k, const AttentionShape& s) {
  const int64_t D = s.head_dim, row = s.heads_kv * D;
  std::vector<double> mean(static_cast<size_t>(row));
  for (int64_t b = 0; b < s.batch; ++b) {
    double* kb = k + b * s.seq_kv * row;
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t j = 0; j < s.seq_kv; ++j)
      for (int64_t c = 0; c < row; ++c) mean[size_t(c)] += kb[j * row + c];
    for (auto& m : mean) m /= double(s.seq_kv);
    for (int64_t j = 0; j < s.seq_kv; ++j)
      for (int64_t c = 0; c < row; ++c) kb[j * row + c] -= mean[size_t(c)];
  }
}

void apply_smoothing(std::vector<double>& q, std::vector<double>& k, const AttentionShape& shape, const Smoothing& s) {
  if (s.k_mean) subtract_token_mean(k.data(), shape);
  if (s.hadamard) {
    // One rotation for Q and K: the same signs, so that Q K^T is preserved.
    const auto signs = random_signs(shape.head_dim, s.seed);
    hadamard_rotate_rows(q.data(), int64_t(q.size()) / shape.head_dim, shape.head_dim, signs);
    hadamard_rotate_rows(k.data(), int64_t(k.size()) / shape.head_dim, shape.head_dim, signs);
  }
}

}  // namespace mxattn::explore
