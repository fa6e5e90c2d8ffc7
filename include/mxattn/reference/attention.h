// FP64 attention, the reference every kernel is compared with, and its MX-emulating variant.
//
// Q [B, S_q, H_q, D], K and V [B, S_kv, H_kv, D], contiguous; H_q a multiple of H_kv (GQA: query head
// h reads KV head h / (H_q / H_kv)). Causal masks align to the bottom-right: query i sees keys
// j <= i + S_kv - S_q. A query that sees no key gets a zero output and a log-sum-exp of -inf.
#pragma once
#include <cstdint>
#include <vector>

#include "mxattn/format/format.h"

namespace mxattn {

struct AttentionShape {
  int64_t batch = 1, seq_q = 1, seq_kv = 1, heads_q = 1, heads_kv = 1, head_dim = 64;

  int64_t q_elems() const { return batch * seq_q * heads_q * head_dim; }
  int64_t kv_elems() const { return batch * seq_kv * heads_kv * head_dim; }
};

struct AttentionOptions {
  bool causal = false;
  double softmax_scale = 0.0;  // 0: 1 / sqrt(head_dim)
};

struct AttentionResult {
  std::vector<double> out;  // [B, S_q, H_q, D]
  std::vector<double> lse;  // [B, H_q, S_q], natural log of sum_j exp(scale * q.k_j)
};

// Throws std::invalid_argument naming the bad field of `shape`.
void check_attention_shape(const AttentionShape& shape);

AttentionResult attention_fp64(const double* q, const double* k, const double* v, const AttentionShape& shape,
                               const AttentionOptions& opt);

// Where V's blocks run: along S_kv (prefill, channel-major storage) or along D (a KV cache).
enum class VBlockAxis : uint8_t { Seq, HeadDim };

struct MxAttentionFormats {
  Format q = kMxfp8E4M3, k = kMxfp8E4M3, v = kMxfp8E4M3;
  VBlockAxis v_axis = VBlockAxis::Seq;
};

// Quantize Q and K along D and V along v_axis, dequantize, then FP64 attention on what came back.
AttentionResult mx_attention(const float* q, const float* k, const float* v, const AttentionShape& shape,
                             const MxAttentionFormats& formats, const AttentionOptions& opt);

// Accuracy of `got` against `ref`: cosine similarity, ||got - ref|| / ||ref||, max |got - ref|.
struct ErrorStats {
  double cosine = 0, rel_l2 = 0, max_abs = 0;
  bool finite = true;  // no NaN/Inf in got
};
ErrorStats compare(const std::vector<double>& got, const std::vector<double>& ref);

}  // namespace mxattn
