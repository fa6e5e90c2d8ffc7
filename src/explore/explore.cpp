#include "mxattn/explore/explore.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <thread>

#include "mxattn/explore/fast_attention.h"
#include "mxattn/reference/quantize.h"

namespace mxattn::explore {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<double> to_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

std::vector<float> to_float(const std::vector<double>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = float(x[i]);
  return out;
}

// What a tensor looks like after being stored in `f` with blocks along `axis`.
std::vector<float> round_trip(const std::vector<float>& x, const std::vector<int64_t>& shape, int axis,
                              const Format& f) {
  return dequantize(quantize(x.data(), shape, {}, axis, f));
}

bool is_named(const Format& f) {
  for (const auto& nf : named_formats())
    if (nf.format == f) return true;
  return false;
}

}  // namespace

const char* mode_name(Mode m) { return m == Mode::Qkv ? "qkv" : "kv"; }
const char* mode_title(Mode m) { return m == Mode::Qkv ? "Q/K/V quantized" : "KV cache quantized"; }

std::vector<Format> default_sweep() {
  std::vector<Format> all;
  auto add = [&](const Format& f) {
    if (std::find(all.begin(), all.end(), f) == all.end()) all.push_back(f);
  };
  for (const auto& nf : named_formats()) add(nf.format);
  for (const Element& e : {kE2M1, kE2M3, kE3M2, kE4M3, kE5M2, kInt8, Element::integer(4)})
    for (int k : {8, 16, 32, 64})
      for (ScaleType s : {ScaleType::E8M0, ScaleType::UE4M3})
        for (ScaleRule r : {ScaleRule::Rceil, ScaleRule::Floor}) add(Format{e, k, s, r, false});
  return all;
}

TensorError tensor_error(const std::vector<float>& x, const std::vector<float>& xq) {
  double xx = 0, ee = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(xq[i]) - double(x[i]);
    xx += double(x[i]) * double(x[i]);
    ee += d * d;
  }
  TensorError e;
  e.rel_l2 = xx > 0 ? std::sqrt(ee / xx) : std::sqrt(ee);
  e.snr_db = ee > 0 ? 10.0 * std::log10(xx / ee) : std::numeric_limits<double>::infinity();
  if (!std::isfinite(ee)) e.rel_l2 = e.snr_db = std::numeric_limits<double>::quiet_NaN();
  return e;
}

bool ExploreReport::has_mode(Mode m) const { return std::find(modes.begin(), modes.end(), m) != modes.end(); }

ExploreReport explore_formats(const AttentionData& data, const ExploreOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const AttentionShape& s = data.shape;
  check_attention_shape(s);
  if (data.q.size() != size_t(s.q_elems()) || data.k.size() != size_t(s.kv_elems()) ||
      data.v.size() != size_t(s.kv_elems()))
    throw std::invalid_argument("explore: Q, K, V sizes do not match the shape");
  ExploreReport report;
  report.data = data.name;
  report.shape = s;
  report.causal = opt.attention.causal;
  report.modes = opt.modes;
  report.smoothing = opt.smoothing;
  const std::vector<Format> formats = opt.formats.empty() ? default_sweep() : opt.formats;
  const int threads = opt.threads > 0 ? opt.threads : int(std::max(1u, std::thread::hardware_concurrency()));

  // The reference: FP64 attention on the unquantized inputs, once for every format and mode.
  const auto q64 = to_double(data.q), k64 = to_double(data.k), v64 = to_double(data.v);
  const auto tr = std::chrono::steady_clock::now();
  const std::vector<double> ref = attention_fp64(q64.data(), k64.data(), v64.data(), s, opt.attention).out;
  report.reference_seconds = seconds_since(tr);

  // Smoothed Q and K: in FP64 for the unquantized Q of KV-cache mode, in float for quantization.
  std::vector<double> qs64, ks64;
  std::vector<float> qs, ks;
  if (opt.smoothing.any()) {
    qs64 = q64;
    ks64 = k64;
    apply_smoothing(qs64, ks64, s, opt.smoothing);
    qs = to_float(qs64);
    ks = to_float(ks64);
  }

  const std::vector<int64_t> q_shape{s.batch, s.seq_q, s.heads_q, s.head_dim};
  const std::vector<int64_t> kv_shape{s.batch, s.seq_kv, s.heads_kv, s.head_dim};
  const bool qkv = report.has_mode(Mode::Qkv), kv = report.has_mode(Mode::KvCache);
  constexpr int kAlongD = 3, kAlongS = 1;

  // Formats are independent: one per worker; a worker runs its attentions single-threaded unless
  // there are fewer formats than threads.
  const int workers = std::max(1, std::min<int>(threads, int(formats.size())));
  const int inner = std::max(1, threads / workers);
  report.results.resize(formats.size());
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> failures(static_cast<size_t>(workers));
  auto work = [&](int worker) {
    try {
      for (size_t i; (i = next++) < formats.size();) {
        const Format& f = formats[i];
        FormatResult& r = report.results[i];
        r.format = f;
        r.name = format_name(f);
        r.named = is_named(f);
        r.bits_per_element = f.bits_per_element();
        for (size_t n = 0; n < r.roadblock.size(); ++n)
          r.roadblock[n] = roadblock_tiles(kRoadblockThreadsPerWarp[n], f.elem.bits, f.scale_bits(), f.block);

        const auto qq = round_trip(data.q, q_shape, kAlongD, f);
        const auto kq = round_trip(data.k, kv_shape, kAlongD, f);
        const auto vs = round_trip(data.v, kv_shape, kAlongS, f);
        const auto vd = round_trip(data.v, kv_shape, kAlongD, f);
        r.q = tensor_error(data.q, qq);
        r.k = tensor_error(data.k, kq);
        r.v_seq = tensor_error(data.v, vs);
        r.v_dim = tensor_error(data.v, vd);

        auto attend = [&](const std::vector<double>& a, const std::vector<double>& b, const std::vector<double>& c) {
          return compare(attention_fp64_fast(a.data(), b.data(), c.data(), s, opt.attention, inner), ref);
        };
        const auto k_d = to_double(kq), vs_d = qkv ? to_double(vs) : std::vector<double>{},
                   vd_d = kv ? to_double(vd) : std::vector<double>{};
        if (qkv) r.attention[size_t(Mode::Qkv)] = attend(to_double(qq), k_d, vs_d);
        if (kv) r.attention[size_t(Mode::KvCache)] = attend(q64, k_d, vd_d);
        if (opt.smoothing.any()) {
          const auto ksq = round_trip(ks, kv_shape, kAlongD, f);
          r.k_smoothed = tensor_error(ks, ksq);
          const auto ks_d = to_double(ksq);
          if (qkv)
            r.attention_smoothed[size_t(Mode::Qkv)] =
                attend(to_double(round_trip(qs, q_shape, kAlongD, f)), ks_d, vs_d);
          if (kv) r.attention_smoothed[size_t(Mode::KvCache)] = attend(qs64, ks_d, vd_d);
        }
      }
    } catch (...) {
      failures[size_t(worker)] = std::current_exception();
      next = formats.size();  // the others stop at their next format
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < workers; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  for (const auto& e : failures)
    if (e) std::rethrow_exception(e);

  // The kernel, if any, after the CPU work: one call at a time from this thread (a GPU is one device).
  if (opt.kernel) {
    const auto tk = std::chrono::steady_clock::now();
    report.kernel_name = opt.kernel_name.empty() ? "kernel" : opt.kernel_name;
    for (FormatResult& r : report.results) {
      std::string why;
      const auto out = opt.kernel(r.format, data, opt.attention, &why);
      r.kernel_ran = out.has_value() && out->size() == ref.size();
      if (r.kernel_ran)
        r.kernel = compare(*out, ref);
      else
        r.kernel_note = why.empty() ? "no output" : why;
    }
    report.kernel_seconds = seconds_since(tk);
  }

  mark_pareto(report);
  report.seconds = seconds_since(t0);
  return report;
}

std::vector<size_t> pareto_frontier(const std::vector<double>& bits, const std::vector<double>& error) {
  std::vector<size_t> order;
  for (size_t i = 0; i < bits.size(); ++i)
    if (std::isfinite(error[i]) && std::isfinite(bits[i])) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return bits[a] != bits[b] ? bits[a] < bits[b] : error[a] < error[b]; });
  std::vector<size_t> front;
  double best = std::numeric_limits<double>::infinity();
  for (size_t i : order)
    if (error[i] < best) {
      best = error[i];
      front.push_back(i);
    }
  return front;
}

void mark_pareto(ExploreReport& report) {
  auto& res = report.results;
  std::vector<double> bits;
  for (const auto& r : res) bits.push_back(r.bits_per_element);
  for (Mode m : report.modes) {
    const size_t mi = size_t(m);
    for (bool smoothed : {false, true}) {
      if (smoothed && !report.smoothing.any()) continue;
      std::vector<double> err;
      for (const auto& r : res) err.push_back((smoothed ? r.attention_smoothed : r.attention)[mi].rel_l2);
      for (auto& r : res) (smoothed ? r.pareto_smoothed : r.pareto)[mi] = false;
      for (size_t i : pareto_frontier(bits, err)) (smoothed ? res[i].pareto_smoothed : res[i].pareto)[mi] = true;
    }
  }
}

}  // namespace mxattn::explore
