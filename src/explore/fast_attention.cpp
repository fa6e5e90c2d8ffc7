#include "mxattn/explore/fast_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

namespace mxattn::explore {
namespace {

constexpr int kCols = 8;  // keys (Q K^T) or channels (P V) per register tile

// One machine register of doubles (GCC/Clang vector extension): SSE2, AVX2, AVX-512. A tile row is
// kCols / lanes of them; wider generic vectors than the ISA has compile to spills.
typedef double Vec2 __attribute__((vector_size(2 * sizeof(double))));
typedef double Vec4 __attribute__((vector_size(4 * sizeof(double))));
typedef double Vec8 __attribute__((vector_size(8 * sizeof(double))));

// Unaligned vector load and store, one register at a time (so that no load needs two stores
// forwarded); by reference, since passing a wide vector by value is an ABI question for the baseline.
template <typename V>
[[gnu::always_inline]] inline void load(V& v, const double* p) {
  std::memcpy(&v, p, sizeof v);
}
template <typename V>
[[gnu::always_inline]] inline void store(double* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

struct HeadView {
  const double* q;  // row i at q + i * q_stride
  int64_t q_stride;
  const double* kt;  // K^T in tiles of kCols keys: [ceil(S_kv / kCols), D, kCols], zero-padded
  const double* v;   // [S_kv, D], contiguous
  double* out;       // row i at out + i * q_stride
  int64_t seq_q, seq_kv, dim;
  double scale;
  bool causal;
};

// One (batch, head): rows of queries kRows at a time; scores for the whole key range, then softmax,
// then P V. Rows past the causal limit get probability 0, which leaves the sums exact.
// kRows queries per register tile: kRows x kCols accumulators must stay in registers (8 rows in
// AVX-512's 32 registers, 4 rows in AVX2's 16, 2 in SSE2's); the body is inlined into one function
// per ISA.
template <int kRows, typename V>
[[gnu::always_inline]] inline void attend_head(const HeadView& h, double* scores, double* qs) {
  constexpr int kLanes = int(sizeof(V) / sizeof(double)), kVecs = kCols / kLanes;
  const int64_t S = h.seq_kv, D = h.dim;
  const int64_t s_pad = (S + kCols - 1) / kCols * kCols;  // scores rows are padded to whole tiles
  for (int64_t i0 = 0; i0 < h.seq_q; i0 += kRows) {
    const int64_t rows = std::min<int64_t>(kRows, h.seq_q - i0);
    // Scaled queries, [kRows, D]; missing rows are zero.
    for (int r = 0; r < kRows; ++r)
      for (int64_t d = 0; d < D; ++d) qs[r * D + d] = r < rows ? h.q[(i0 + r) * h.q_stride + d] * h.scale : 0.0;
    int64_t last[kRows];
    for (int r = 0; r < kRows; ++r) last[r] = h.causal ? std::min(S - 1, i0 + r + S - h.seq_q) : S - 1;

    for (int64_t j0 = 0; j0 < s_pad; j0 += kCols) {
      V acc[kRows][kVecs] = {};
      for (int64_t d = 0; d < D; ++d) {
        const double* kd = h.kt + (j0 * D + d * kCols);
        for (int c = 0; c < kVecs; ++c) {
          V kv;
          load(kv, kd + c * kLanes);
          for (int r = 0; r < kRows; ++r) acc[r][c] += qs[r * D + d] * kv;
        }
      }
      for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < kVecs; ++c) store(scores + r * s_pad + j0 + c * kLanes, acc[r][c]);
    }

    // Softmax per row, in place: scores become probabilities (0 beyond the row's last key).
    for (int r = 0; r < rows; ++r) {
      double* p = scores + r * s_pad;
      if (last[r] < 0) {
        std::fill(p, p + s_pad, 0.0);
        continue;
      }
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j <= last[r]; ++j) m = std::max(m, p[j]);
      double sum = 0;
      for (int64_t j = 0; j <= last[r]; ++j) sum += (p[j] = std::exp(p[j] - m));
      const double inv = 1.0 / sum;
      for (int64_t j = 0; j <= last[r]; ++j) p[j] *= inv;
      std::fill(p + last[r] + 1, p + s_pad, 0.0);
    }
    for (int r = rows; r < kRows; ++r) std::fill(scores + r * s_pad, scores + (r + 1) * s_pad, 0.0);

    // O = P V, kCols channels at a time.
    for (int64_t d0 = 0; d0 < D; d0 += kCols) {
      if (d0 + kCols <= D) {
        V acc[kRows][kVecs] = {};
        for (int64_t j = 0; j < S; ++j) {
          for (int c = 0; c < kVecs; ++c) {
            V vj;
            load(vj, h.v + j * D + d0 + c * kLanes);
            for (int r = 0; r < kRows; ++r) acc[r][c] += scores[r * s_pad + j] * vj;
          }
        }
        for (int r = 0; r < rows; ++r)
          for (int c = 0; c < kVecs; ++c) store(h.out + (i0 + r) * h.q_stride + d0 + c * kLanes, acc[r][c]);
      } else {  // the last channels of a head_dim that is not a multiple of kCols
        for (int r = 0; r < rows; ++r)
          for (int64_t d = d0; d < D; ++d) {
            double o = 0;
            for (int64_t j = 0; j < S; ++j) o += scores[r * s_pad + j] * h.v[j * D + d];
            h.out[(i0 + r) * h.q_stride + d] = o;
          }
      }
    }
  }
}

constexpr int kMaxRows = 8;

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
// The project builds without -march; these loops are the whole cost of a sweep, so pick the widest
// vectors the CPU has at run time.
[[gnu::target("avx512f")]] void attend_head_avx512(const HeadView& h, double* s, double* q) {
  attend_head<8, Vec8>(h, s, q);
}
[[gnu::target("avx2,fma")]] void attend_head_avx2(const HeadView& h, double* s, double* q) {
  attend_head<4, Vec4>(h, s, q);
}
#endif
void attend_head_baseline(const HeadView& h, double* s, double* q) { attend_head<2, Vec2>(h, s, q); }

using AttendFn = void (*)(const HeadView&, double*, double*);
AttendFn pick_attend_head() {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return attend_head_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return attend_head_avx2;
#endif
  return attend_head_baseline;
}

}  // namespace

std::vector<double> attention_fp64_fast(const double* q, const double* k, const double* v, const AttentionShape& s,
                                        const AttentionOptions& opt, int threads) {
  check_attention_shape(s);
  const int64_t D = s.head_dim, group = s.heads_q / s.heads_kv;
  const double scale = opt.softmax_scale != 0.0 ? opt.softmax_scale : 1.0 / std::sqrt(double(D));
  std::vector<double> out(size_t(s.q_elems()), 0.0);
  const int64_t tasks = s.batch * s.heads_q;
  const int64_t workers =
      std::clamp<int64_t>(threads > 0 ? threads : int64_t(std::max(1u, std::thread::hardware_concurrency())), 1, tasks);
  const int64_t s_pad = (s.seq_kv + kCols - 1) / kCols * kCols;

  static const AttendFn attend = pick_attend_head();
  std::atomic<int64_t> next{0};
  auto work = [&] {
    std::vector<double> kt(size_t(D * s_pad), 0.0), vh(size_t(s.seq_kv * D));
    std::vector<double> scores(static_cast<size_t>(kMaxRows * s_pad)), qs(size_t(kMaxRows * D));
    int64_t cached = -1;  // the (batch, KV head) whose K^T and V are in kt, vh
    for (int64_t task; (task = next++) < tasks;) {
      const int64_t b = task / s.heads_q, h = task % s.heads_q, hk = h / group;
      if (cached != b * s.heads_kv + hk) {
        for (int64_t j = 0; j < s.seq_kv; ++j) {
          const int64_t row = ((b * s.seq_kv + j) * s.heads_kv + hk) * D;
          for (int64_t d = 0; d < D; ++d) {
            kt[size_t((j / kCols * D + d) * kCols + j % kCols)] = k[row + d];
            vh[size_t(j * D + d)] = v[row + d];
          }
        }
        cached = b * s.heads_kv + hk;
      }
      const int64_t q0 = (b * s.seq_q * s.heads_q + h) * D;
      HeadView view{q + q0,  s.heads_q * D, kt.data(), vh.data(), out.data() + q0,
                    s.seq_q, s.seq_kv,      D,         scale,     opt.causal};
      attend(view, scores.data(), qs.data());
    }
  };
  if (workers == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < workers; ++t) pool.emplace_back(work);
    for (auto& th : pool) th.join();
  }
  return out;
}

}  // namespace mxattn::explore
