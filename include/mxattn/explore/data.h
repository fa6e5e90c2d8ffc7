// The Q, K, V a sweep measures formats on: generated distributions, or the user's own .npy tensors.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mxattn/reference/attention.h"

namespace mxattn::explore {

struct AttentionData {
  std::string name;  // the distribution, or "npy:Q,K,V"
  AttentionShape shape;
  std::vector<float> q, k, v;  // contiguous, [B, S_q, H_q, D] and [B, S_kv, H_kv, D]
};

enum class Distribution : uint8_t {
  Normal,    // Q, K, V ~ N(0, 1)
  Uniform,   // U(-1, 1)
  StudentT,  // Student-t with 3 degrees of freedom, scaled to unit variance: heavy tails
  Outliers,  // N(0, 1); in K, one channel in 32 is an outlier channel: x 10 and + 10 (LLM keys)
  Sink,      // N(0, 1); token 0 of Q, K and V is x 20: a massive-activation (attention-sink) token
};

inline constexpr Distribution kAllDistributions[] = {
    Distribution::Normal, Distribution::Uniform, Distribution::StudentT, Distribution::Outliers, Distribution::Sink};

const char* distribution_name(Distribution d);  // normal, uniform, student-t, outliers, sink
std::optional<Distribution> parse_distribution(std::string_view name);

// Per-channel scale and offset of the Outliers distribution's outlier channels in K.
inline constexpr float kOutlierScale = 10.0f, kOutlierOffset = 10.0f;
inline constexpr int kOutlierEvery = 32;  // one outlier channel per 32 (at least one)
inline constexpr float kSinkScale = 20.0f;

// Q, K, V of `shape` (seq_q = seq_kv expected for Sink) drawn from `dist` with `seed`.
AttentionData generate_data(Distribution dist, const AttentionShape& shape, uint64_t seed);

// Q, K, V from .npy files of shape [S, D], [S, H, D] or [B, S, H, D] (float16/32/64, little-endian,
// C order). Throws std::runtime_error naming the file(s) when one is missing, of another dtype, or
// when the shapes do not fit together (K and V equal; Q with the same B and D; H_q a multiple of H_kv).
// max_kv_heads > 0 keeps only the first KV heads (and their query heads), to bound the time.
AttentionData load_npy_data(const std::string& q_path, const std::string& k_path, const std::string& v_path,
                            int64_t max_kv_heads = 0);

}  // namespace mxattn::explore
