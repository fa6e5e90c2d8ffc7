// The format explorer: for given Q, K, V, what each block format costs in bits and in accuracy.
//
// Per format: bits per element (block scales included), RoadBlock's per-thread scale metadata
// (roadblock.h), the quantization error of each tensor as it would be stored, and the attention error
// against FP64 attention on the unquantized inputs, in two uses:
//   Mode::Qkv      Q, K, V all quantized (prefill): Q and K blocked along D, V along S_kv.
//   Mode::KvCache  only the KV cache: Q exact, K and V blocked along D (a cache grows by tokens).
// With smoothing (smoothing.h), each mode is measured a second time on smoothed Q and K; the
// reference stays the unsmoothed FP64 attention, which smoothing leaves unchanged in exact arithmetic.
#pragma once
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mxattn/explore/data.h"
#include "mxattn/explore/roadblock.h"
#include "mxattn/explore/smoothing.h"
#include "mxattn/format/format.h"
#include "mxattn/reference/attention.h"

namespace mxattn::explore {

// printf into a std::string of whatever length it needs (tables, CSV, JSON and SVG text).
std::string printf_string(const char* f, ...) __attribute__((format(printf, 1, 2)));

enum class Mode : uint8_t { Qkv, KvCache };
inline constexpr Mode kAllModes[] = {Mode::Qkv, Mode::KvCache};
const char* mode_name(Mode m);   // "qkv", "kv"
const char* mode_title(Mode m);  // "Q/K/V quantized", "KV cache quantized"

// Every named format, then custom ones over element {E2M1, E2M3, E3M2, E4M3, E5M2, INT8, INT4},
// block {8, 16, 32, 64}, scale {UE8M0, UE4M3}, rule {RCEIL, FLOOR}; each format once.
std::vector<Format> default_sweep();

// Error of a quantize -> dequantize round trip: ||xq - x|| / ||x|| and 10 log10(|x|^2 / |xq - x|^2).
struct TensorError {
  double rel_l2 = 0, snr_db = 0;
};
TensorError tensor_error(const std::vector<float>& x, const std::vector<float>& xq);

struct FormatResult {
  Format format;
  std::string name;
  bool named = false;  // one of named_formats()
  double bits_per_element = 0;
  std::array<RoadblockTiles, 4> roadblock;  // NT = 4, 8, 16, 32

  // The tensors themselves: Q and K along D, V along S_kv and along D; K after smoothing.
  TensorError q, k, v_seq, v_dim, k_smoothed;
  // Attention error by mode (index: Mode), without and with smoothing.
  std::array<ErrorStats, 2> attention{}, attention_smoothed{};
  std::array<bool, 2> pareto{}, pareto_smoothed{};  // on the frontier of bits against rel_l2

  // An attention kernel's output for Q/K/V in this format (ExploreOptions::kernel), against the same
  // FP64 reference: the format's error plus the kernel's own.
  bool kernel_ran = false;
  ErrorStats kernel{};
  std::string kernel_note;  // why it did not run (the kernel's Status message)
};

// Runs an attention kernel on Q, K, V quantized in `f` (Q/K/V mode: Q and K blocked along D, V along
// S_kv) and returns its output [B, S_q, H_q, D], or nullopt with `why` set. The CLI passes the GPU
// prefill kernel here where it is built with CUDA and a GPU is present.
using KernelAttention = std::function<std::optional<std::vector<double>>(
    const Format& f, const AttentionData& data, const AttentionOptions& opt, std::string* why)>;

struct ExploreOptions {
  std::vector<Format> formats;  // empty: default_sweep()
  std::vector<Mode> modes = {Mode::Qkv, Mode::KvCache};
  Smoothing smoothing;  // measured in addition to the plain case where smoothing.any()
  AttentionOptions attention;
  int threads = 0;          // 0: one per hardware thread
  KernelAttention kernel;   // optional; called once per format, from the calling thread
  std::string kernel_name;  // how tables name it
};

struct ExploreReport {
  std::string data;
  AttentionShape shape;
  bool causal = false;
  std::vector<Mode> modes;
  Smoothing smoothing;
  std::vector<FormatResult> results;
  double seconds = 0;            // whole sweep, wall clock
  double reference_seconds = 0;  // the FP64 reference (attention_fp64)
  std::string kernel_name;       // empty where no kernel was measured
  double kernel_seconds = 0;     // all kernel calls, transfers included

  bool has_mode(Mode m) const;
};

ExploreReport explore_formats(const AttentionData& data, const ExploreOptions& opt);

// Indices of the Pareto-optimal points (no other point has fewer or equal bits and a smaller error),
// in increasing bits. Non-finite errors are never optimal.
std::vector<size_t> pareto_frontier(const std::vector<double>& bits, const std::vector<double>& error);

// Marks FormatResult::pareto / pareto_smoothed from the attention rel_l2 of each mode.
void mark_pareto(ExploreReport& report);

// Outputs (report.cpp, svg.cpp). Tables go to a FILE*; files are written whole; throw
// std::runtime_error naming the path when a file cannot be written.
void print_roadblock_model(std::FILE* out, const std::vector<Format>& formats);
void print_table(std::FILE* out, const ExploreReport& report);
std::string to_csv(const std::vector<ExploreReport>& reports);
std::string to_json(const std::vector<ExploreReport>& reports);
std::string to_svg(const std::vector<ExploreReport>& reports);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace mxattn::explore
