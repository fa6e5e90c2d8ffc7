// Transforms of Q and K that leave exact attention unchanged but change what quantization sees.
//
// - Mean of K over tokens: softmax(q . (k_j - m)) = softmax(q . k_j - q . m), and q . m is the same
//   for every key j of a query, so subtracting m (per batch, KV head and channel) changes nothing in
//   exact arithmetic. It removes per-channel offsets, which inflate K's block scales.
// - Random-sign Hadamard rotation along D: R = diag(s) H / sqrt(n) is orthogonal, so
//   (Q R)(K R)^T = Q K^T. It spreads an outlier channel over n channels before blocking.
//   For D not a power of two, H is block-diagonal with n = the largest power of two dividing D.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mxattn/reference/attention.h"

namespace mxattn::explore {

struct Smoothing {
  bool k_mean = false;
  bool hadamard = false;
  uint64_t seed = 0x5EED;  // for the Hadamard signs

  bool any() const { return k_mean || hadamard; }
  std::string name() const;  // "none", "kmean", "hadamard", "kmean+hadamard"
};

// Largest power of two dividing dim: the Hadamard block size.
int64_t hadamard_block(int64_t dim);

// +1 / -1, one per channel, from `seed`.
std::vector<int8_t> random_signs(int64_t n, uint64_t seed);

// Each of `rows` contiguous rows of `dim` values becomes (row * signs) H / sqrt(n), block by block
// (a fast Walsh-Hadamard transform; n = hadamard_block(dim)).
void hadamard_rotate_rows(double* x, int64_t rows, int64_t dim, const std::vector<int8_t>& signs);

// K [B, S_kv, H_kv, D]: subtract, per (batch, head, channel), the mean over tokens.
void subtract_token_mean(double* k, const AttentionShape& shape);

// Applies `s` to Q and K (contiguous, in the layouts of reference/attention.h), in place.
void apply_smoothing(std::vector<double>& q, std::vector<double>& k, const AttentionShape& shape, const Smoothing& s);

}  // namespace mxattn::explore
