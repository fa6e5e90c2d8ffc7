// The explorer's picture: attention error against bits per element, one panel per (data, mode),
// one point per format, the Pareto frontier drawn as a staircase, named formats labelled.
#include <algorithm>
#include <cmath>

#include "mxattn/explore/explore.h"

namespace mxattn::explore {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

constexpr double kPanelW = 600, kPanelH = 420;
constexpr double kLeft = 72, kRight = 24, kTop = 48, kBottom = 52;
constexpr double kLabelH = 12, kCharW = 6.2, kBoldCharW = 7.0;  // 11 px sans-serif, roughly

const char* const kPlainColor = "#1f4e9c";
const char* const kCustomColor = "#8fa9d4";
const char* const kFrontColor = "#d62728";
const char* const kSmoothColor = "#e67e00";

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

struct Panel {
  double ox, oy;      // top-left corner
  double xmin, xmax;  // bits
  double ymin, ymax;  // log10(rel_l2)
  double px(double bits) const { return ox + kLeft + (bits - xmin) / (xmax - xmin) * (kPanelW - kLeft - kRight); }
  double py(double err) const {
    const double l = std::log10(err);
    return oy + kTop + (ymax - l) / (ymax - ymin) * (kPanelH - kTop - kBottom);
  }
};

void draw_frontier(std::string& svg, const Panel& p, const std::vector<double>& bits, const std::vector<double>& err,
                   const char* color, bool dashed) {
  const auto front = pareto_frontier(bits, err);
  if (front.empty()) return;
  // Staircase: from each frontier point right to the next one's bits, then down to its error.
  std::string pts;
  for (size_t n = 0; n < front.size(); ++n) {
    const size_t i = front[n];
    if (n > 0) pts += printf_string("%.1f,%.1f ", p.px(bits[i]), p.py(err[front[n - 1]]));
    pts += printf_string("%.1f,%.1f ", p.px(bits[i]), p.py(err[i]));
  }
  pts += printf_string("%.1f,%.1f", p.px(p.xmax), p.py(err[front.back()]));
  svg += printf_string("<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s/>\n", pts.c_str(), color,
             dashed ? " stroke-dasharray=\"5,3\"" : "");
}

void draw_panel(std::string& svg, const ExploreReport& r, Mode m, double ox, double oy, std::vector<Box>& taken) {
  const size_t mi = size_t(m);
  const bool smooth = r.smoothing.any();
  std::vector<double> bits, err, err_s;
  for (const auto& f : r.results) {
    bits.push_back(f.bits_per_element);
    err.push_back(f.attention[mi].rel_l2);
    err_s.push_back(f.attention_smoothed[mi].rel_l2);
  }
  double xmin = 1e9, xmax = -1e9, lmin = 1e9, lmax = -1e9;
  auto extend = [&](double b, double e) {
    if (!(std::isfinite(e) && e > 0)) return;
    xmin = std::min(xmin, b);
    xmax = std::max(xmax, b);
    lmin = std::min(lmin, std::log10(e));
    lmax = std::max(lmax, std::log10(e));
  };
  for (size_t i = 0; i < bits.size(); ++i) {
    extend(bits[i], err[i]);
    if (smooth) extend(bits[i], err_s[i]);
  }
  if (xmin > xmax) {  // nothing finite to draw
    xmin = 0, xmax = 1, lmin = -1, lmax = 0;
  }
  // A little room around the points: a quarter bit on the left, room for labels on the right, a
  // sixth of a decade above and below (more when the points span less than a decade).
  const double pad = std::max(1.0 / 6, (1.0 - (lmax - lmin)) / 2);
  Panel p{ox, oy, std::floor(xmin - 0.25), std::ceil(xmax + 0.75), lmin - pad, lmax + pad};

  const double x0 = ox + kLeft, x1 = ox + kPanelW - kRight, y0 = oy + kTop, y1 = oy + kPanelH - kBottom;
  svg += printf_string("<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">%s — %s</text>\n", x0, oy + 22,
             esc(r.data).c_str(), mode_title(m));
  svg += printf_string("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">S_q=%lld S_kv=%lld D=%lld%s</text>\n", x0,
             oy + 38, (long long)r.shape.seq_q, (long long)r.shape.seq_kv, (long long)r.shape.head_dim,
             r.causal ? " causal" : "");
  svg += printf_string("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" stroke=\"#333\"/>\n", x0, y0,
             x1 - x0, y1 - y0);
  // Grid and ticks: one per bit, one per decade (with 2x and 5x minor lines).
  for (double b = p.xmin; b <= p.xmax + 1e-9; b += 1) {
    svg +=
        printf_string("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", p.px(b), y0, p.px(b), y1);
    svg += printf_string("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n", p.px(b), y1 + 15, b);
  }
  // 1, 2, 5 times powers of ten; all labelled when the range is short, decades only otherwise.
  const bool label_all = p.ymax - p.ymin < 2.5;
  for (int decade = int(std::floor(p.ymin)); decade <= int(std::ceil(p.ymax)); ++decade)
    for (double mant : {1.0, 2.0, 5.0}) {
      const double e = mant * std::pow(10.0, decade), l = std::log10(e);
      if (l < p.ymin || l > p.ymax) continue;
      svg += printf_string("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", x0, p.py(e), x1, p.py(e),
                 mant == 1.0 ? "#d0d0d0" : "#ececec");
      if (mant == 1.0 || label_all)
        svg += printf_string("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%ge%d</text>\n", x0 - 5,
                   p.py(e) + 4, mant, decade);
    }
  svg +=
      printf_string("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">bits per element (block scales "
          "included)</text>\n",
          (x0 + x1) / 2, y1 + 36);
  svg +=
      printf_string("<text transform=\"translate(%.1f,%.1f) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">attention "
          "rel. L2 error vs FP64</text>\n",
          ox + 18, (y0 + y1) / 2);

  // The legend sits bottom left, where a bits-against-error plot has no points; labels avoid it.
  const int legend_rows = smooth ? 5 : 3;
  const Box legend{x0 + 6, y1 - 6 - 15.0 * legend_rows - 8, x0 + 6 + 184, y1 - 6};
  taken.push_back(legend);
  if (smooth) {
    for (size_t i = 0; i < bits.size(); ++i)
      if (std::isfinite(err_s[i]) && err_s[i] > 0) {
        svg +=
            printf_string("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"none\" stroke=\"%s\"><title>%s (smoothed): %.3g "
                "bits, rel_l2 %.3e</title></circle>\n",
                p.px(bits[i]), p.py(err_s[i]), kSmoothColor, esc(r.results[i].name).c_str(), bits[i], err_s[i]);
        taken.push_back({p.px(bits[i]) - 3, p.py(err_s[i]) - 3, p.px(bits[i]) + 3, p.py(err_s[i]) + 3});
      }
    draw_frontier(svg, p, bits, err_s, kSmoothColor, true);
  }
  draw_frontier(svg, p, bits, err, kFrontColor, false);
  // Custom formats first, named ones on top.
  for (bool named : {false, true})
    for (size_t i = 0; i < bits.size(); ++i) {
      const FormatResult& f = r.results[i];
      if (f.named != named || !(std::isfinite(err[i]) && err[i] > 0)) continue;
      svg +=
          printf_string("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"%s><title>%s: %.3g bits, rel_l2 %.3e, cosine "
              "%.6f</title></circle>\n",
              p.px(bits[i]), p.py(err[i]), named ? "4.5" : "3", named ? kPlainColor : kCustomColor,
              f.pareto[mi] ? printf_string(" stroke=\"%s\" stroke-width=\"1.5\"", kFrontColor).c_str() : "", esc(f.name).c_str(),
              bits[i], err[i], f.attention[mi].cosine);
      taken.push_back({p.px(bits[i]) - 4, p.py(err[i]) - 4, p.px(bits[i]) + 4, p.py(err[i]) + 4});
    }
  // Labels: named formats always (bold), frontier formats where there is room. Try right, left,
  // above, below; skip a frontier label that fits nowhere.
  for (bool named : {true, false})
    for (size_t i = 0; i < bits.size(); ++i) {
      const FormatResult& f = r.results[i];
      if (f.named != named || (!named && !f.pareto[mi]) || !(std::isfinite(err[i]) && err[i] > 0)) continue;
      const double cx = p.px(bits[i]), cy = p.py(err[i]), w = double(f.name.size()) * (named ? kBoldCharW : kCharW);
      // Right, left, above, below, then further out (a named label must land somewhere).
      const double tries[][2] = {{7, 4},        {-7 - w, 4},  {7, -8},  {7, 15}, {-7 - w, -8},  {-7 - w, 15},
                                 {-w / 2, -8},  {-w / 2, 17}, {7, -20}, {7, 27}, {-7 - w, -20}, {-7 - w, 27},
                                 {-w / 2, -22}, {-w / 2, 31}, {7, -33}, {7, 40}, {-7 - w, -33}, {-7 - w, 40}};
      const Box* chosen = nullptr;
      std::vector<Box> fits;  // in the plot area
      // A frontier label stays next to its point (the first eight places) or is left out.
      const size_t places = named ? std::size(tries) : 8;
      for (size_t n = 0; n < places; ++n) {
        const auto& t = tries[n];
        const Box b{cx + t[0], cy + t[1] - kLabelH + 2, cx + t[0] + w, cy + t[1] + 2};
        if (b.x0 >= x0 && b.x1 <= x1 && b.y0 >= y0 && b.y1 <= y1) fits.push_back(b);
      }
      for (const Box& b : fits)
        if (std::none_of(taken.begin(), taken.end(), [&](const Box& o) { return b.overlaps(o); })) {
          chosen = &b;
          break;
        }
      if (!chosen && named && !fits.empty()) chosen = &fits.front();  // a named format is always labelled
      if (!chosen) continue;
      svg += printf_string("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\"%s>%s</text>\n", chosen->x0, chosen->y1 - 2,
                 named ? " font-weight=\"bold\"" : " fill=\"#444\"", esc(f.name).c_str());
      taken.push_back(*chosen);
    }
  // Legend.
  double ly = legend.y0 + 18;
  const double lx = legend.x0 + 10;
  svg +=
      printf_string("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" fill-opacity=\"0.9\" "
          "stroke=\"#bbb\"/>\n",
          legend.x0, legend.y0, legend.x1 - legend.x0, legend.y1 - legend.y0);
  svg +=
      printf_string("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">"
          "named format</text>\n",
          lx, ly - 4, kPlainColor, lx + 10, ly);
  ly += 15;
  svg +=
      printf_string("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">"
          "custom format</text>\n",
          lx, ly - 4, kCustomColor, lx + 10, ly);
  ly += 15;
  svg +=
      printf_string("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.6\"/><text "
          "x=\"%.1f\" y=\"%.1f\" font-size=\"11\">Pareto frontier</text>\n",
          lx - 4, ly - 4, lx + 6, ly - 4, kFrontColor, lx + 10, ly);
  if (smooth) {
    ly += 15;
    svg +=
        printf_string("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"none\" stroke=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" "
            "font-size=\"11\">smoothed (%s)</text>\n",
            lx, ly - 4, kSmoothColor, lx + 10, ly, r.smoothing.name().c_str());
    ly += 15;
    svg +=
        printf_string("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.6\" "
            "stroke-dasharray=\"5,3\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">its frontier</text>\n",
            lx - 4, ly - 4, lx + 6, ly - 4, kSmoothColor, lx + 10, ly);
  }
}

}  // namespace

std::string to_svg(const std::vector<ExploreReport>& reports) {
  size_t cols = 1;
  for (const auto& r : reports) cols = std::max(cols, r.modes.size());
  const double width = kPanelW * double(cols), height = kPanelH * double(std::max<size_t>(1, reports.size()));
  std::string svg =
      printf_string("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
          "fill=\"white\"/>\n",
          width, height, width, height);
  for (size_t ri = 0; ri < reports.size(); ++ri)
    for (size_t mi = 0; mi < reports[ri].modes.size(); ++mi) {
      std::vector<Box> taken;  // per panel: labels avoid points and other labels
      draw_panel(svg, reports[ri], reports[ri].modes[mi], kPanelW * double(mi), kPanelH * double(ri), taken);
    }
  svg += "</svg>\n";
  return svg;
}

}  // namespace mxattn::explore
