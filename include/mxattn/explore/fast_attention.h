// FP64 attention for sweeps: the same mathematics as reference/attention.h's attention_fp64, with
// register-blocked loops (4 queries x 8 keys, 4 queries x 8 channels) that vectorize, so that a sweep
// of a hundred formats at S = 1024, D = 128 takes seconds rather than minutes. The reference stays the
// definition; tests hold this one to it within a few ulps of FP64 (only the summation order differs).
#pragma once
#include <vector>

#include "mxattn/reference/attention.h"

namespace mxattn::explore {

// Out [B, S_q, H_q, D] for contiguous Q [B, S_q, H_q, D] and K, V [B, S_kv, H_kv, D] (GQA and
// bottom-right causal masks as attention_fp64). Spreads (batch, head) pairs over `threads` threads
// (0: one per hardware thread).
std::vector<double> attention_fp64_fast(const double* q, const double* k, const double* v, const AttentionShape& shape,
                                        const AttentionOptions& opt, int threads = 1);

}  // namespace mxattn::explore
