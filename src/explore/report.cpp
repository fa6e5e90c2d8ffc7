// The explorer's terminal tables, CSV and JSON.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "mxattn/explore/explore.h"

namespace mxattn::explore {

std::string printf_string(const char* f, ...) {
  va_list ap, again;
  va_start(ap, f);
  va_copy(again, ap);
  std::string out(size_t(std::vsnprintf(nullptr, 0, f, ap)), '\0');
  va_end(ap);
  std::vsnprintf(out.data(), out.size() + 1, f, again);
  va_end(again);
  return out;
}

namespace {

std::string shape_line(const ExploreReport& r) {
  const auto& s = r.shape;
  return printf_string("B=%lld S_q=%lld S_kv=%lld H_q=%lld H_kv=%lld D=%lld%s", (long long)s.batch, (long long)s.seq_q,
             (long long)s.seq_kv, (long long)s.heads_q, (long long)s.heads_kv, (long long)s.head_dim,
             r.causal ? ", causal" : "");
}

// Rows in increasing bits, then increasing error of the first mode measured.
std::vector<size_t> table_order(const ExploreReport& r) {
  std::vector<size_t> order(r.results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t mi = r.modes.empty() ? 0 : size_t(r.modes.front());
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = r.results[a], &y = r.results[b];
    if (x.bits_per_element != y.bits_per_element) return x.bits_per_element < y.bits_per_element;
    const double ex = x.attention[mi].rel_l2, ey = y.attention[mi].rel_l2;
    return (std::isnan(ey) && !std::isnan(ex)) || ex < ey;
  });
  return order;
}

// JSON numbers: NaN and Inf are not JSON; they become null.
std::string jnum(double v) { return std::isfinite(v) ? printf_string("%.9g", v) : "null"; }
std::string jstr(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n')
      out += "\\n";
    else if (uint8_t(c) < 0x20)
      out += printf_string("\\u%04x", unsigned(c));
    else
      out += c;
  }
  return out + "\"";
}
// A CSV field: quoted where it holds a comma or a quote.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
std::string jerr(const ErrorStats& e) {
  return "{\"cosine\": " + jnum(e.cosine) + ", \"rel_l2\": " + jnum(e.rel_l2) + ", \"max_abs\": " + jnum(e.max_abs) +
         "}";
}
std::string jtensor(const TensorError& e) {
  return "{\"rel_l2\": " + jnum(e.rel_l2) + ", \"snr_db\": " + jnum(e.snr_db) + "}";
}

}  // namespace

void print_roadblock_model(std::FILE* out, const std::vector<Format>& formats) {
  std::fprintf(out, "RoadBlock model (seeds/003, eqs. 2-13; NR = %d registers per operand per thread)\n\n",
               kRoadblockRegsPerOperand);
  std::string h1 = printf_string("%-22s %2s %2s %4s", "", "", "", ""), h2 = printf_string("%-22s %2s %2s %4s", "format", "d", "w", "k");
  for (int nt : kRoadblockThreadsPerWarp) {
    const auto t = roadblock_tiles(nt, 8, 8, 32);
    h1 += printf_string(" | %-24s", printf_string("NT=%d, tile %dx%dx%d regs", nt, t.tile_m, t.tile_n, t.tile_k).c_str());
    h2 += printf_string(" | %6s %5s %6s %4s", "K elem", "blks", "bits", "regs");
  }
  std::fprintf(out, "%s\n%s\n", h1.c_str(), h2.c_str());
  for (const Format& f : formats) {
    std::string line = printf_string("%-22s %2d %2d %4d", format_name(f).c_str(), f.elem.bits, f.scale_bits(), f.block);
    for (int nt : kRoadblockThreadsPerWarp) {
      const auto t = roadblock_tiles(nt, f.elem.bits, f.scale_bits(), f.block);
      line += printf_string(" | %6.4g %5.3g %6.4g %4d", t.tile_k_elems, t.blocks_k, t.per_thread_metadata_bits, t.registers());
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
  std::fprintf(out,
               "\nK elem: tileK unpacked, elements along K per tile (6); blks: scale blocks along K per tile (7);\n"
               "bits: scale metadata per thread (13); regs: 32-bit registers that takes. Fractions are kept: a\n"
               "block longer than the tile has its scale reused over several K steps; 6-bit elements straddle\n"
               "registers.\n");
}

void print_table(std::FILE* out, const ExploreReport& r) {
  const bool smooth = r.smoothing.any();
  std::fprintf(out, "mxattn explore: data %s, %s; %zu formats in %.1f s (FP64 reference %.2f s)%s\n", r.data.c_str(),
               shape_line(r).c_str(), r.results.size(), r.seconds, r.reference_seconds,
               smooth ? ("; smoothing: " + r.smoothing.name()).c_str() : "");
  std::fprintf(out, "RoadBlock tiles (M x N x K registers):");
  for (int nt : kRoadblockThreadsPerWarp) {
    const auto t = roadblock_tiles(nt, 8, 8, 32);
    std::fprintf(out, "  NT=%d %dx%dx%d", nt, t.tile_m, t.tile_n, t.tile_k);
  }
  std::fprintf(out, "\n\n");

  // Two header lines: groups, then columns.
  std::string h1 = printf_string("%-22s %6s  %-19s  %-23s", "", "bits/", "scale bits/thread", "tensor SNR dB");
  std::string h2 = printf_string("%-22s %6s  %4s %4s %4s %4s  %5s %5s %5s %5s", "format", "elem", "NT=4", "8", "16", "32", "Q",
                       "K", "V:S", "V:D");
  for (Mode m : r.modes) {
    h1 += printf_string(" | %-*s", smooth ? 32 : 22, mode_title(m));
    h2 += printf_string(" | %9s %9s %2s", "cosine", "rel_l2", "P");
    if (smooth) h2 += printf_string(" %9s", "smoothed");
  }
  const bool kernel = !r.kernel_name.empty();
  if (kernel) {
    h1 += printf_string(" | %-19s", "kernel, Q/K/V");
    h2 += printf_string(" | %9s %9s", "cosine", "rel_l2");
  }
  std::fprintf(out, "%s\n%s\n", h1.c_str(), h2.c_str());

  for (size_t i : table_order(r)) {
    const FormatResult& f = r.results[i];
    std::string line = printf_string("%-22s %6.3f ", (f.name + (f.named ? " *" : "")).c_str(), f.bits_per_element);
    for (const auto& t : f.roadblock) line += printf_string(" %4.3g", t.per_thread_metadata_bits);
    line += printf_string("  %5.1f %5.1f %5.1f %5.1f", f.q.snr_db, f.k.snr_db, f.v_seq.snr_db, f.v_dim.snr_db);
    for (Mode m : r.modes) {
      const auto& e = f.attention[size_t(m)];
      line += printf_string(" | %9.6f %9.3e %2s", e.cosine, e.rel_l2, f.pareto[size_t(m)] ? "P" : "");
      if (smooth) line += printf_string(" %9.3e", f.attention_smoothed[size_t(m)].rel_l2);
    }
    if (kernel)
      line += f.kernel_ran ? printf_string(" | %9.6f %9.3e", f.kernel.cosine, f.kernel.rel_l2) : printf_string(" | %9s %9s", "-", "-");
    std::fprintf(out, "%s\n", line.c_str());
  }
  std::fprintf(out,
               "\n* named format.  bits/elem: element bits + scale bits / block (an NVFP4 FP32 tensor scale not "
               "counted).\nscale bits/thread: RoadBlock eq. 13.  SNR: tensor round trip, Q and K blocked along D, V "
               "along S (V:S) or D (V:D).\ncosine, rel_l2: attention output against FP64 attention on the "
               "unquantized inputs.  P: on the Pareto frontier of bits against rel_l2.\n");
  if (smooth)
    std::fprintf(out, "smoothed: rel_l2 with %s applied to Q and K before quantization.\n", r.smoothing.name().c_str());
  if (kernel) {
    std::fprintf(out, "kernel: %s on Q/K/V in each format, against the same FP64 reference (%.2f s in all).\n",
                 r.kernel_name.c_str(), r.kernel_seconds);
    std::string first_note;
    size_t skipped = 0;
    for (const auto& f : r.results)
      if (!f.kernel_ran && ++skipped == 1) first_note = f.name + ": " + f.kernel_note;
    if (skipped)
      std::fprintf(out, "  '-': %zu formats the kernel did not run (e.g. %s); reasons in the CSV/JSON.\n", skipped,
                   first_note.c_str());
  }

  for (Mode m : r.modes)
    for (bool smoothed : {false, true}) {
      if (smoothed && !smooth) continue;
      std::vector<double> bits, err;
      for (const auto& f : r.results) {
        bits.push_back(f.bits_per_element);
        err.push_back((smoothed ? f.attention_smoothed : f.attention)[size_t(m)].rel_l2);
      }
      std::fprintf(out, "Pareto frontier, %s%s:", mode_title(m), smoothed ? " (smoothed)" : "");
      for (size_t i : pareto_frontier(bits, err))
        std::fprintf(out, "  %s (%.3g b, %.2e)", r.results[i].name.c_str(), bits[i], err[i]);
      std::fprintf(out, "\n");
    }
}

std::string to_csv(const std::vector<ExploreReport>& reports) {
  std::string s =
      "data,batch,seq_q,seq_kv,heads_q,heads_kv,head_dim,causal,format,named,element,element_bits,block,scale,rule,"
      "tensor_scale,bits_per_element";
  for (int nt : kRoadblockThreadsPerWarp)
    s +=
        printf_string(",rb_nt%d_tile_m,rb_nt%d_tile_n,rb_nt%d_tile_k,rb_nt%d_blocks_k,rb_nt%d_scale_bits_per_thread,"
            "rb_nt%d_registers",
            nt, nt, nt, nt, nt, nt);
  s += ",q_rel_l2,q_snr_db,k_rel_l2,k_snr_db,v_seq_rel_l2,v_seq_snr_db,v_dim_rel_l2,v_dim_snr_db";
  for (Mode m : kAllModes)
    s += printf_string(",%s_cosine,%s_rel_l2,%s_max_abs,%s_pareto", mode_name(m), mode_name(m), mode_name(m), mode_name(m));
  s += ",kernel,kernel_qkv_cosine,kernel_qkv_rel_l2,kernel_qkv_max_abs,kernel_note";
  s += ",smoothing,k_smoothed_snr_db";
  for (Mode m : kAllModes)
    s += printf_string(",%s_smoothed_cosine,%s_smoothed_rel_l2,%s_smoothed_max_abs,%s_smoothed_pareto", mode_name(m),
             mode_name(m), mode_name(m), mode_name(m));
  s += "\n";
  auto num = [](double v) { return std::isnan(v) ? std::string("nan") : printf_string("%.9g", v); };
  for (const auto& r : reports) {
    for (size_t i : table_order(r)) {
      const FormatResult& f = r.results[i];
      const auto& sh = r.shape;
      s += printf_string("%s,%lld,%lld,%lld,%lld,%lld,%lld,%d,%s,%d,%s,%d,%d,%s,%s,%d,%s", csv_field(r.data).c_str(),
               (long long)sh.batch, (long long)sh.seq_q, (long long)sh.seq_kv, (long long)sh.heads_q,
               (long long)sh.heads_kv, (long long)sh.head_dim, int(r.causal), csv_field(f.name).c_str(), int(f.named),
               element_name(f.format.elem).c_str(), f.format.elem.bits, f.format.block, scale_type_name(f.format.scale),
               scale_rule_name(f.format.rule), int(f.format.tensor_scale), num(f.bits_per_element).c_str());
      for (const auto& t : f.roadblock)
        s += printf_string(",%d,%d,%d,%s,%s,%d", t.tile_m, t.tile_n, t.tile_k, num(t.blocks_k).c_str(),
                 num(t.per_thread_metadata_bits).c_str(), t.registers());
      // Appending piecewise: GCC 12 misreads "," + std::string as overlapping copies (-Wrestrict).
      auto field = [&](const std::string& v) {
        s += ',';
        s += v;
      };
      for (const auto* e : {&f.q, &f.k, &f.v_seq, &f.v_dim}) {
        field(num(e->rel_l2));
        field(num(e->snr_db));
      }
      for (Mode m : kAllModes) {
        if (!r.has_mode(m)) {
          s += ",,,,";
          continue;
        }
        const auto& e = f.attention[size_t(m)];
        for (double v : {e.cosine, e.rel_l2, e.max_abs}) field(num(v));
        field(f.pareto[size_t(m)] ? "1" : "0");
      }
      field(csv_field(r.kernel_name));
      for (double v : {f.kernel.cosine, f.kernel.rel_l2, f.kernel.max_abs}) field(f.kernel_ran ? num(v) : "");
      field(csv_field(f.kernel_note));
      const bool smooth = r.smoothing.any();
      field(r.smoothing.name());
      field(smooth ? num(f.k_smoothed.snr_db) : "");
      for (Mode m : kAllModes) {
        if (!smooth || !r.has_mode(m)) {
          s += ",,,,";
          continue;
        }
        const auto& e = f.attention_smoothed[size_t(m)];
        for (double v : {e.cosine, e.rel_l2, e.max_abs}) field(num(v));
        field(f.pareto_smoothed[size_t(m)] ? "1" : "0");
      }
      s += "\n";
    }
  }
  return s;
}

std::string to_json(const std::vector<ExploreReport>& reports) {
  std::string s = "{\n  \"tool\": \"mxattn explore\",\n  \"roadblock_tiles\": [";
  for (int nt : kRoadblockThreadsPerWarp) {
    const auto t = roadblock_tiles(nt, 8, 8, 32);
    s += printf_string("%s{\"nt\": %d, \"tile_cap\": %d, \"tile_m\": %d, \"tile_n\": %d, \"tile_k_registers\": %d}",
             nt == kRoadblockThreadsPerWarp[0] ? "" : ", ", nt, t.tile_cap, t.tile_m, t.tile_n, t.tile_k);
  }
  s += "],\n  \"runs\": [";
  for (size_t ri = 0; ri < reports.size(); ++ri) {
    const auto& r = reports[ri];
    const auto& sh = r.shape;
    s += ri ? ",\n" : "\n";
    s += "    {\"data\": " + jstr(r.data) +
         printf_string(", \"shape\": {\"batch\": %lld, \"seq_q\": %lld, \"seq_kv\": %lld, \"heads_q\": %lld, \"heads_kv\": "
             "%lld, \"head_dim\": %lld}",
             (long long)sh.batch, (long long)sh.seq_q, (long long)sh.seq_kv, (long long)sh.heads_q,
             (long long)sh.heads_kv, (long long)sh.head_dim) +
         ", \"causal\": " + (r.causal ? "true" : "false") + ", \"smoothing\": " + jstr(r.smoothing.name()) +
         ", \"seconds\": " + jnum(r.seconds) + ", \"reference_seconds\": " + jnum(r.reference_seconds) +
         ", \"kernel\": " + (r.kernel_name.empty() ? std::string("null") : jstr(r.kernel_name)) + ", \"modes\": [";
    for (size_t m = 0; m < r.modes.size(); ++m) s += (m ? ", " : "") + jstr(mode_name(r.modes[m]));
    s += "],\n     \"formats\": [";
    bool first = true;
    for (size_t i : table_order(r)) {
      const FormatResult& f = r.results[i];
      s += first ? "\n" : ",\n";
      first = false;
      s += "      {\"name\": " + jstr(f.name) + ", \"named\": " + (f.named ? "true" : "false") +
           ", \"element\": " + jstr(element_name(f.format.elem)) +
           printf_string(", \"element_bits\": %d, \"block\": %d", f.format.elem.bits, f.format.block) +
           ", \"scale\": " + jstr(scale_type_name(f.format.scale)) +
           ", \"rule\": " + jstr(scale_rule_name(f.format.rule)) +
           ", \"tensor_scale\": " + (f.format.tensor_scale ? "true" : "false") +
           ", \"bits_per_element\": " + jnum(f.bits_per_element) + ",\n       \"roadblock\": [";
      for (size_t n = 0; n < f.roadblock.size(); ++n) {
        const auto& t = f.roadblock[n];
        s += (n ? ", " : "") + printf_string("{\"nt\": %d, \"tile_k_elems\": ", t.nt) + jnum(t.tile_k_elems) +
             ", \"blocks_k\": " + jnum(t.blocks_k) + ", \"scale_bits_k\": " + jnum(t.scale_bits_k) +
             ", \"a_metadata_bits\": " + jnum(t.a_metadata_bits) + ", \"b_metadata_bits\": " + jnum(t.b_metadata_bits) +
             ", \"per_thread_metadata_bits\": " + jnum(t.per_thread_metadata_bits) +
             printf_string(", \"registers\": %d}", t.registers());
      }
      s += "],\n       \"tensors\": {\"q\": " + jtensor(f.q) + ", \"k\": " + jtensor(f.k) +
           ", \"v_seq\": " + jtensor(f.v_seq) + ", \"v_dim\": " + jtensor(f.v_dim);
      if (r.smoothing.any()) s += ", \"k_smoothed\": " + jtensor(f.k_smoothed);
      s += "},\n       \"attention\": {";
      bool firstm = true;
      for (Mode m : r.modes) {
        const size_t mi = size_t(m);
        s += (firstm ? "" : ", ") + jstr(mode_name(m)) + ": " + jerr(f.attention[mi]);
        s += ", " + jstr(std::string(mode_name(m)) + "_pareto") + ": " + (f.pareto[mi] ? "true" : "false");
        if (r.smoothing.any()) {
          s += ", " + jstr(std::string(mode_name(m)) + "_smoothed") + ": " + jerr(f.attention_smoothed[mi]);
          s += ", " + jstr(std::string(mode_name(m)) + "_smoothed_pareto") + ": " +
               (f.pareto_smoothed[mi] ? "true" : "false");
        }
        firstm = false;
      }
      s += "}";
      if (!r.kernel_name.empty())
        s += ",\n       \"kernel\": " +
             (f.kernel_ran ? "{\"qkv\": " + jerr(f.kernel) + "}" : "{\"note\": " + jstr(f.kernel_note) + "}");
      s += "}";
    }
    s += "\n     ]}";
  }
  s += "\n  ]\n}\n";
  return s;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out << text;
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace mxattn::explore
