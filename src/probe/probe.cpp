// `mxattn probe`'s host side: the families, the library's maps, the one-hot analysis (probe.h), a CPU
// model of an instruction, and the text and SVG pictures of a measured map.
#include "mxattn/probe/probe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "mxattn/explore/explore.h"  // printf_string
#include "mxattn/kernels/attention/fragment.h"
#include "mxattn/kernels/attention/hopper/fragment.h"

namespace mxattn::probe {
namespace {

using explore::printf_string;

constexpr OperandSlots regs(int n, int parts, int elem_bytes) { return {false, n, parts, 0, 0, elem_bytes}; }
constexpr OperandSlots tile(int rows, int row_bytes, int elem_bytes) { return {true, 0, 0, rows, row_bytes, elem_bytes}; }

struct RegSlot {
  int thread, reg, part;
};
RegSlot reg_slot(const OperandSlots& o, int slot) {
  return {slot / (o.regs * o.parts), slot / o.parts % o.regs, slot % o.parts};
}

// (row, byte) of each byte offset of a tile of 64- or 128-byte rows (frag::KMajorTile's swizzle: within one
// panel the row count does not enter the offset).
Coord tile_row_byte(const OperandSlots& o, int offset) {
  static const std::vector<Coord> inv64 = [] {
    std::vector<Coord> v(256 * 64);
    for (int r = 0; r < 256; ++r)
      for (int b = 0; b < 64; ++b) v[frag::KMajorTile<8, 64>::offset(r, b)] = {r, b};
    return v;
  }();
  static const std::vector<Coord> inv128 = [] {
    std::vector<Coord> v(256 * 128);
    for (int r = 0; r < 256; ++r)
      for (int b = 0; b < 128; ++b) v[frag::KMajorTile<8, 128>::offset(r, b)] = {r, b};
    return v;
  }();
  return (o.row_bytes == 64 ? inv64 : inv128)[offset];
}

// A shared-memory slot's (tile row, k), or {-1, -1} outside the k-step.
Coord tile_row_k(const Family& f, const OperandSlots& o, int slot) {
  const Coord rb = tile_row_byte(o, slot * o.elem_bytes);
  const int byte = rb.col - 32 * f.kstep;
  if (byte < 0 || byte >= 32) return {};
  return {rb.row, byte / o.elem_bytes};
}

template <typename RC>
Coord to_coord(RC x) {
  return {x.row, x.col};
}

Coord library_a(const Family& f, int slot) {
  if (f.a.smem) return tile_row_k(f, f.a, slot);
  const RegSlot s = reg_slot(f.a, slot);
  if (f.threads == 128) return f.a.elem_bytes == 2 ? to_coord(frag::wgmma_a16(s.thread, s.reg, s.part))
                                                   : to_coord(frag::wgmma_a8(s.thread, s.reg, s.part));
  if (f.a.elem_bytes == 2) return to_coord(frag::mma_a(s.thread, s.reg, s.part));
  if (f.a.parts == 8) return to_coord(frag::mma_a4(s.thread, s.reg, s.part));
  return to_coord(frag::mma_a8(s.thread, s.reg, s.part));  // E4M3 and the mxf8f6f4 kinds: one element a byte
}

Coord library_b(const Family& f, int slot) {
  if (f.b.smem) {
    const Coord nk = tile_row_k(f, f.b, slot);  // B^T's rows are B's columns
    return nk.row < 0 ? Coord{} : Coord{nk.col, nk.row};
  }
  const RegSlot s = reg_slot(f.b, slot);
  if (f.b.elem_bytes == 2) return to_coord(frag::mma_b(s.thread, s.reg, s.part));
  if (f.b.parts == 8) return to_coord(frag::mma_b4(s.thread, s.reg, s.part));
  return to_coord(frag::mma_b8(s.thread, s.reg, s.part));
}

// The scale registers with selectors {0, 0} (ptx/mma_block_scale.h): A's row g in lane 4g, row g + 8 in lane
// 4g + 1, B's column g in lane 4g; byte j the k block j (1X: byte 0 alone).
Coord library_sa(const Family& f, int slot) {
  const int lane = slot / 4, byte = slot % 4;
  if (lane % 4 > 1 || byte >= f.scale.vec) return {};
  return {lane / 4 + 8 * (lane % 4), byte};
}
Coord library_sb(const Family& f, int slot) {
  const int lane = slot / 4, byte = slot % 4;
  if (lane % 4 != 0 || byte >= f.scale.vec) return {};
  return {byte, lane / 4};
}

Coord library_c(const Family& f, int slot) {
  const RegSlot s = reg_slot(f.c, slot);
  return f.threads == 32 ? to_coord(frag::mma_c(s.thread, s.reg)) : to_coord(frag::wgmma_acc(s.thread, s.reg));
}

std::string slot_name(const Family& f, const OperandSlots& o, int slot) {
  if (o.smem) return printf_string("byte %d", slot * o.elem_bytes);
  const RegSlot s = reg_slot(o, slot);
  const char* who = f.threads == 32 ? "lane" : "thread";
  return o.parts == 1 ? printf_string("%s %d reg %d", who, s.thread, s.reg)
                      : printf_string("%s %d reg %d part %d", who, s.thread, s.reg, s.part);
}

std::string coord_name(const Coord& c) {
  return c.row < 0 ? std::string("not read") : printf_string("(%d, %d)", c.row, c.col);
}

}  // namespace

namespace {

// The families' rows. One element a byte in kind::mxf8f6f4: E4M3 and E5M2 whole, E2M3 / E3M2 in bits 5:0,
// E2M1 in bits 5:2 (the codes of 1.0 there: 0x38, 0x3C, 0x08, 0x0C, 0x08); packed E2M1 nibbles in
// kind::mxf4nvf4 (0x2).
struct Elem {
  const char* name;
  Element e;
  uint32_t one;  // in its container
};
constexpr Elem kBf16{"bf16", kBf16Element, 0x3F80}, kE4m3{"e4m3", kE4M3, 0x38}, kE5m2{"e5m2", kE5M2, 0x3C},
    kE2m3{"e2m3", kE2M3, 0x08}, kE3m2{"e3m2", kE3M2, 0x0C}, kE2m1Byte{"e2m1", kE2M1, 0x08}, kE2m1Packed{"e2m1", kE2M1, 0x2};

const char* keep(std::string s) {  // the families live as long as the program
  static std::vector<std::unique_ptr<std::string>> all;
  all.push_back(std::make_unique<std::string>(std::move(s)));
  return all.back()->c_str();
}

Family mma(const Elem& e, int k, int sm) {
  const int parts = 4 / (e.e.bits / 8);
  return {keep(printf_string("mma.m16n8k%d.%s", k, e.name)),
          keep(printf_string("mma.sync.aligned.m16n8k%d.row.col.f32.%s.%s.f32", k, e.name, e.name)), 16, 8, k, 32,
          regs(4, parts, e.e.bits / 8), regs(2, parts, e.e.bits / 8), regs(4, 1, 4), 0, e.e, e.e, e.one, e.one, {}, sm};
}

// wgmma m64nNk(32 bytes): A from registers (rs) or a 64-row tile (ss), B^T an N-row tile, rows of `width` bytes
// (128: the 128-byte swizzle; 64: the 64-byte one, ".sw64" in the name).
Family wgmma(const Elem& e, int n, bool a_smem, int width) {
  const int bytes = e.e.bits / 8, k = 32 / bytes;
  const std::string shape = printf_string("m64n%dk%d", n, k);
  const char* swizzle = width == 64 ? ", 64-byte swizzle" : "";
  return {keep(printf_string("wgmma.%s.%s.%s%s", shape.c_str(), e.name, a_smem ? "ss" : "rs", width == 64 ? ".sw64" : "")),
          keep(printf_string("wgmma.mma_async.sync.aligned.%s.f32.%s.%s, A in %s%s", shape.c_str(), e.name, e.name,
                             a_smem ? "shared memory" : "registers", swizzle)),
          64, n, k, 128, a_smem ? tile(64, width, bytes) : regs(4, 4 / bytes, bytes), tile(n, width, bytes),
          regs(n / 2, 1, 4), 1, e.e, e.e, e.one, e.one, {}, 90};
}

// kind::mxf8f6f4 m16n8k32, scale_vec::1X UE8M0.
Family mxf8f6f4(const Elem& a, const Elem& b) {
  const std::string types = a.e == b.e ? std::string(a.name) : printf_string("%s.%s", a.name, b.name);
  return {keep("mma.m16n8k32.mxf8f6f4." + types),
          keep(printf_string("mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.%s.%s.f32.ue8m0",
                             a.name, b.name)),
          16, 8, 32, 32, regs(4, 4, 1), regs(2, 4, 1), regs(4, 1, 4), 0, a.e, b.e, a.one, b.one,
          {1, 32, 127, 128, ScaleType::E8M0}, 120};
}

// kind::mxf4nvf4 m16n8k64 on packed E2M1: scale_vec::2X UE8M0 (MXFP4) or 4X UE4M3 (NVFP4).
Family mxf4nvf4(bool ue4m3) {
  const Elem& e = kE2m1Packed;
  return {ue4m3 ? "mma.m16n8k64.mxf4nvf4.ue4m3" : "mma.m16n8k64.mxf4nvf4.ue8m0",
          ue4m3 ? "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"
                : "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0",
          16, 8, 64, 32, regs(4, 8, 1), regs(2, 8, 1), regs(4, 1, 4), 0, e.e, e.e, e.one, e.one,
          ue4m3 ? ScaleSpec{4, 16, 0x38, 0x40, ScaleType::UE4M3} : ScaleSpec{2, 32, 127, 128, ScaleType::E8M0}, 120};
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> all = [] {
    std::vector<Family> v = {mma(kBf16, 16, 80), mma(kE4m3, 32, 89)};
    // The Hopper kernel's wgmma (hopper/traits.h tiles, hopper/mainloop.h): the probe's first four, then S of
    // D = 128 and D = 64 (FP8 and exact modes), P V'^T of D = 128 (with the row sums: N = 136), 256, and the
    // row sums' N = 8, and the exact mode's BF16 P V'^T.
    for (bool a_smem : {false, true})
      for (const Elem* e : {&kBf16, &kE4m3}) v.push_back(wgmma(*e, 64, a_smem, 128));
    v.push_back(wgmma(kE4m3, 128, true, 128));
    v.push_back(wgmma(kE4m3, 256, true, 64));
    v.push_back(wgmma(kE4m3, 192, true, 64));
    v.push_back(wgmma(kE4m3, 128, false, 128));
    v.push_back(wgmma(kE4m3, 136, false, 128));
    v.push_back(wgmma(kE4m3, 256, false, 64));
    v.push_back(wgmma(kE4m3, 8, false, 128));
    v.push_back(wgmma(kE4m3, 8, false, 64));
    for (int n : {128, 256, 8}) v.push_back(wgmma(kBf16, n, false, 128));
    // sm_120a: each element type against itself (S = Q K^T), E4M3 against each (P V).
    for (const Elem* e : {&kE4m3, &kE5m2, &kE2m3, &kE3m2, &kE2m1Byte}) v.push_back(mxf8f6f4(*e, *e));
    for (const Elem* e : {&kE5m2, &kE2m3, &kE3m2, &kE2m1Byte}) v.push_back(mxf8f6f4(kE4m3, *e));
    v.push_back(mxf4nvf4(false));
    v.push_back(mxf4nvf4(true));
    return v;
  }();
  return all;
}

std::vector<const Family*> families_for(int cc) {
  std::vector<const Family*> out;
  for (const Family& f : families())
    if (f.runs_on(cc)) out.push_back(&f);
  return out;
}

const Family* find_family(const std::string& name) {
  for (const Family& f : families())
    if (name == f.name) return &f;
  return nullptr;
}

Map library_map(const Family& f) {
  Map m;
  for (int s = 0; s < f.a_slots(); ++s) m.a.push_back(library_a(f, s));
  for (int s = 0; s < f.b_slots(); ++s) m.b.push_back(library_b(f, s));
  for (int s = 0; s < f.c_slots(); ++s) m.c.push_back(library_c(f, s));
  if (f.scale.vec)
    for (int s = 0; s < kScaleSlots; ++s) m.sa.push_back(library_sa(f, s)), m.sb.push_back(library_sb(f, s));
  return m;
}

Runner model_runner(Map map) {
  return [map](const Family& f, const std::vector<Job>& jobs, std::vector<Result>& out, std::vector<uint32_t>* masks) {
    out.assign(jobs.size(), Result{});
    if (masks) masks->assign(jobs.size() * mask_words(f), 0u);
    // The accumulator slots at each (row, column) of D.
    std::vector<std::vector<int>> c_at(f.m * f.n);
    for (int s = 0; s < int(map.c.size()); ++s)
      if (map.c[s].row >= 0) c_at[map.c[s].row * f.n + map.c[s].col].push_back(s);
    std::vector<int> d(f.m * f.n, 0);
    for (size_t j = 0; j < jobs.size(); ++j) {
      // The elements set to 1 (a slot's, or every read slot's), then D = A B over them.
      auto ones = [](const std::vector<Coord>& m, int pick) {
        std::vector<Coord> e;
        for (int s = pick == kAll ? 0 : pick; s < (pick == kAll ? int(m.size()) : pick + 1); ++s)
          if (m[s].row >= 0) e.push_back(m[s]);
        return e;
      };
      const std::vector<Coord> a = ones(map.a, jobs[j].a), b = ones(map.b, jobs[j].b);
      // The one scale of 2: A's (row, k block) or B's (k block, column); {-1, -1} none.
      const int scale_slot = jobs[j].lane * 4 + jobs[j].byte;
      const Coord sa = jobs[j].scale == 1 ? map.sa[scale_slot] : Coord{}, sb = jobs[j].scale == 2 ? map.sb[scale_slot] : Coord{};
      const int block = f.scale.block;
      std::vector<int> touched;
      for (const Coord& x : a)
        for (const Coord& y : b)
          if (x.col == y.row) {
            const int at = x.row * f.n + y.col;
            if (d[at] == 0) touched.push_back(at);
            d[at] += (sa.row == x.row && sa.col == x.col / block ? 2 : 1) * (sb.col == y.col && sb.row == y.row / block ? 2 : 1);
          }
      for (int at : touched) {
        for (int s : c_at[at]) {
          ++out[j].nonzero;
          if (d[at] > (jobs[j].scale ? 2 : 1)) ++out[j].bad;
          if (masks && (jobs[j].scale == 0 || d[at] == 2)) (*masks)[j * mask_words(f) + s / 32] |= 1u << (s % 32);
        }
        d[at] = 0;
      }
    }
    return Status::success();
  };
}

namespace {

// The code in slot `slot` of operand o (x's words): its part of a register, or its bytes of the tile; out of a
// kind::mxf8f6f4 byte, a 6-bit code from bits 5:0 and a 4-bit one from bits 5:2.
uint32_t slot_code(const OperandSlots& o, const std::vector<uint32_t>& words, const Element& e, int slot) {
  uint32_t raw = 0;
  int width = 8 * o.elem_bytes;
  if (o.smem) {
    for (int i = 0; i < o.elem_bytes; ++i) {
      const int byte = slot * o.elem_bytes + i;
      raw |= (words[byte / 4] >> (8 * (byte % 4)) & 0xFFu) << (8 * i);
    }
  } else {
    const RegSlot s = reg_slot(o, slot);
    width = 32 / o.parts;
    raw = words[s.thread * o.regs + s.reg] >> (width * s.part) & ((1ull << width) - 1);
  }
  if (width == 8 && e.bits == 4) return raw >> 2 & 0xFu;
  if (width == 8 && e.bits == 6) return raw & 0x3Fu;
  return raw;
}

// D by slot and sum_k |products| by slot: the model's arithmetic over `map`, with these elements and scale type.
void evaluate(const Family& f, const Map& map, const Element& a_elem, const Element& b_elem, ScaleType scale,
              const Operands& x, std::vector<double>& d, std::vector<double>& mag) {
  const int vec = std::max(1, f.scale.vec), block = f.scale.vec ? f.scale.block : f.k;
  std::vector<double> a(f.m * f.k, 0.0), b(f.k * f.n, 0.0), sa(f.m * vec, 1.0), sb(vec * f.n, 1.0);
  for (int s = 0; s < f.a_slots(); ++s)
    if (map.a[s].row >= 0) a[map.a[s].row * f.k + map.a[s].col] = a_elem.decode(slot_code(f.a, x.a, a_elem, s));
  for (int s = 0; s < f.b_slots(); ++s)
    if (map.b[s].row >= 0) b[map.b[s].row * f.n + map.b[s].col] = b_elem.decode(slot_code(f.b, x.b, b_elem, s));
  if (f.scale.vec)
    for (int s = 0; s < kScaleSlots; ++s) {
      if (map.sa[s].row >= 0) sa[map.sa[s].row * vec + map.sa[s].col] = decode_scale(scale, x.sa[s / 4] >> (8 * (s % 4)) & 0xFFu);
      if (map.sb[s].row >= 0) sb[map.sb[s].row * f.n + map.sb[s].col] = decode_scale(scale, x.sb[s / 4] >> (8 * (s % 4)) & 0xFFu);
    }
  d.assign(f.c_slots(), 0.0), mag.assign(f.c_slots(), 0.0);
  for (int s = 0; s < f.c_slots(); ++s) {
    const Coord c = map.c[s];
    if (c.row < 0) continue;
    for (int k = 0; k < f.k; ++k) {
      const double p = a[c.row * f.k + k] * sa[c.row * vec + k / block] * b[k * f.n + c.col] * sb[k / block * f.n + c.col];
      d[s] += p, mag[s] += std::abs(p);
    }
  }
}

// A random finite code of e in its container (a register part, or a tile element).
uint32_t random_code(const OperandSlots& o, const Element& e, std::mt19937& rng) {
  if (e == kBf16Element)  // sign, a binade of 2^-6 .. 2^6, any significand
    return (rng() & 0x8000u) | uint32_t(127 - 6 + rng() % 13) << 7 | (rng() & 0x7Fu);
  uint32_t code;
  do code = rng() & ((1u << e.bits) - 1);
  while (!std::isfinite(e.decode(code)));
  const int width = o.smem ? 8 * o.elem_bytes : 32 / o.parts;
  return width == 8 && e.bits == 4 ? code << 2 : code;
}

}  // namespace

Operands random_operands(const Family& f, std::mt19937& rng) {
  Operands x;
  auto fill = [&](const OperandSlots& o, const Element& e, std::vector<uint32_t>& words) {
    words.assign(o.words(f.threads), 0u);
    for (int s = 0; s < o.count(f.threads); ++s) {
      const uint32_t code = random_code(o, e, rng);
      if (o.smem) {
        for (int i = 0; i < o.elem_bytes; ++i) {
          const int byte = s * o.elem_bytes + i;
          words[byte / 4] |= (code >> (8 * i) & 0xFFu) << (8 * (byte % 4));
        }
      } else {
        const RegSlot r = reg_slot(o, s);
        words[r.thread * o.regs + r.reg] |= code << (32 / o.parts * r.part);
      }
    }
  };
  fill(f.a, f.a_elem, x.a);
  fill(f.b, f.b_elem, x.b);
  // Scales near 1: UE8M0 2^-4 .. 2^4; UE4M3 2^-3 .. 2^3 with any significand.
  for (int lane = 0; lane < 32; ++lane)
    for (int byte = 0; byte < 4; ++byte) {
      const bool ue4m3 = f.scale.type == ScaleType::UE4M3;
      auto one = [&] { return ue4m3 ? uint32_t(4 + rng() % 7) << 3 | (rng() & 7u) : uint32_t(127 - 4 + rng() % 9); };
      x.sa[lane] |= one() << (8 * byte);
      x.sb[lane] |= one() << (8 * byte);
    }
  return x;
}

std::vector<double> model_values(const Family& f, const Map& map, const Operands& x) {
  std::vector<double> d, mag;
  evaluate(f, map, f.a_elem, f.b_elem, f.scale.type, x, d, mag);
  return d;
}

ValueRunner model_value_runner(Map map) {
  return [map](const Family& f, const std::vector<Operands>& xs, std::vector<float>& d) {
    d.clear();
    for (const Operands& x : xs)
      for (double v : model_values(f, map, x)) d.push_back(float(v));
    return Status::success();
  };
}

double value_bar(const Family& f) {
  const bool fp8_wgmma = f.threads == 128 && f.a.elem_bytes == 1;
  return fp8_wgmma || f.scale.vec ? 0x1p-8 : 0x1p-16;
}

ValueCheck check_values(const Family& f, const ValueRunner& run, int draws, uint32_t seed) {
  ValueCheck out;
  out.bar = value_bar(f);
  std::mt19937 rng(seed);
  std::vector<Operands> xs;
  for (int i = 0; i < draws; ++i) xs.push_back(random_operands(f, rng));
  std::vector<float> got;
  if (const Status st = run(f, xs, got); !st.ok) {
    out.error = "the instruction did not run: " + st.message;
    return out;
  }
  if (got.size() != size_t(draws) * f.c_slots()) {
    out.error = printf_string("%zu values came back, not %d", got.size(), draws * f.c_slots());
    return out;
  }
  const Map lib = library_map(f);
  std::vector<double> want, mag;
  for (int i = 0; i < draws; ++i) {
    evaluate(f, lib, f.a_elem, f.b_elem, f.scale.type, xs[i], want, mag);
    for (int s = 0; s < f.c_slots(); ++s) {
      const double err = std::abs(double(got[size_t(i) * f.c_slots() + s]) - want[s]);
      const double rel = mag[s] > 0 ? err / mag[s] : (err > 0 ? INFINITY : 0.0);
      out.worst = std::isnan(rel) ? INFINITY : std::max(out.worst, rel);
    }
  }
  out.draws = draws;
  return out;
}

void mma_model(const Family& f, const Element& a_elem, const Element& b_elem, ScaleType scale, const WarpRegs& r,
               float (&d)[32][4]) {
  Operands x;
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 4; ++i) x.a.push_back(r.a[t][i]);
    for (int i = 0; i < 2; ++i) x.b.push_back(r.b[t][i]);
    x.sa[t] = r.sa[t], x.sb[t] = r.sb[t];
  }
  std::vector<double> sum, mag;
  evaluate(f, library_map(f), a_elem, b_elem, scale, x, sum, mag);
  for (int s = 0; s < f.c_slots(); ++s) {
    const RegSlot c = reg_slot(f.c, s);
    d[c.thread][c.reg] = float(double(d[c.thread][c.reg]) + sum[s]);
  }
}

Discovery discover(const Family& f, const Runner& run) {
  Discovery d;
  const int na = f.a_slots(), nb = f.b_slots(), nc = f.c_slots(), words = mask_words(f);
  auto fail = [&](std::string what) {
    d.errors.push_back(std::move(what));
    return d;
  };
  auto go = [&](const std::vector<Job>& jobs, std::vector<Result>& res, std::vector<uint32_t>* masks) {
    d.jobs += int(jobs.size());
    const Status st = run(f, jobs, res, masks);
    if (!st.ok) d.errors.push_back("the instruction did not run: " + st.message);
    for (size_t j = 0; j < res.size() && st.ok; ++j)
      if (res[j].bad) {
        d.errors.push_back(printf_string("a one-hot run gave %d accumulator values other than 0 and 1%s (A slot %d, "
                                         "B slot %d; -1: all)", res[j].bad, jobs[j].scale ? " and 2" : "", jobs[j].a,
                                         jobs[j].b));
        break;
      }
    return st.ok && d.errors.empty();
  };

  // Rounds 1 and 2: the slots of a row (of a column) light up the same accumulator slots.
  struct Classes {
    std::vector<int> of_slot;            // class, or -1 (not read)
    std::vector<std::vector<int>> members;
    std::vector<std::vector<uint32_t>> mask;
  };
  auto classes = [&](bool a_side, Classes& cl) {
    const int n = a_side ? na : nb;
    std::vector<Job> jobs;
    for (int s = 0; s < n; ++s) jobs.push_back(a_side ? Job{s, kAll} : Job{kAll, s});
    std::vector<Result> res;
    std::vector<uint32_t> masks;
    if (!go(jobs, res, &masks)) return false;
    std::map<std::vector<uint32_t>, int> index;
    cl.of_slot.assign(n, -1);
    for (int s = 0; s < n; ++s) {
      if (res[s].nonzero == 0) continue;
      std::vector<uint32_t> key(masks.begin() + s * words, masks.begin() + (s + 1) * words);
      auto [it, fresh] = index.emplace(key, int(cl.members.size()));
      if (fresh) {
        cl.members.emplace_back();
        cl.mask.push_back(key);
      }
      cl.of_slot[s] = it->second;
      cl.members[it->second].push_back(s);
    }
    return true;
  };
  Classes rows, cols;
  if (!classes(true, rows) || !classes(false, cols)) return d;
  if (int(rows.members.size()) != f.m)
    return fail(printf_string("A's slots fall into %zu rows, not %d", rows.members.size(), f.m));
  if (int(cols.members.size()) != f.n)
    return fail(printf_string("B's slots fall into %zu columns, not %d", cols.members.size(), f.n));
  for (const auto& r : rows.members)
    if (int(r.size()) != f.k) return fail(printf_string("a row of A has %zu slots, not K = %d", r.size(), f.k));
  for (const auto& c : cols.members)
    if (int(c.size()) != f.k) return fail(printf_string("a column of B has %zu slots, not K = %d", c.size(), f.k));
  // Each accumulator slot lies in exactly one row and one column.
  std::vector<int> c_row(nc, -1), c_col(nc, -1);
  for (int pass = 0; pass < 2; ++pass) {
    const Classes& cl = pass == 0 ? rows : cols;
    std::vector<int>& at = pass == 0 ? c_row : c_col;
    for (int i = 0; i < int(cl.mask.size()); ++i)
      for (int s = 0; s < nc; ++s)
        if (cl.mask[i][s / 32] >> (s % 32) & 1u) {
          if (at[s] >= 0) return fail(printf_string("accumulator slot %d lights up for two %s", s, pass ? "columns" : "rows"));
          at[s] = i;
        }
  }
  for (int s = 0; s < nc; ++s)
    if (c_row[s] < 0 || c_col[s] < 0) return fail(printf_string("accumulator slot %d never lights up", s));

  // Round 3: k. Every A slot against column 0's B slots, every B slot against row 0's A slots.
  const std::vector<int>& b0 = cols.members[0];
  const std::vector<int>& a0 = rows.members[0];
  std::vector<Job> jobs;
  for (int s = 0; s < na; ++s)
    if (rows.of_slot[s] >= 0)
      for (int t : b0) jobs.push_back({s, t});
  for (int t = 0; t < nb; ++t)
    if (cols.of_slot[t] >= 0)
      for (int s : a0) jobs.push_back({s, t});
  std::vector<Result> res;
  if (!go(jobs, res, nullptr)) return d;
  std::vector<int> a_k(na, -1), b_k(nb, -1);
  size_t j = 0;
  for (int s = 0; s < na; ++s) {
    if (rows.of_slot[s] < 0) continue;
    int hits = 0;
    for (int i = 0; i < int(b0.size()); ++i, ++j)
      if (res[j].nonzero) a_k[s] = i, ++hits;
    if (hits != 1) return fail("A " + slot_name(f, f.a, s) + printf_string(" meets %d of column 0's B slots, not 1", hits));
  }
  for (int t = 0; t < nb; ++t) {
    if (cols.of_slot[t] < 0) continue;
    int hits = 0;
    for (int s : a0)
      if (res[j++].nonzero) b_k[t] = a_k[s], ++hits;
    if (hits != 1) return fail("B " + slot_name(f, f.b, t) + printf_string(" meets %d of row 0's A slots, not 1", hits));
  }

  // Each (row, k), (k, column) and (row, column) is one slot's.
  auto one_each = [&](const char* op, const OperandSlots& o, int n, auto key, int cols) {
    std::vector<int> at(f.m * f.k + f.k * f.n + f.m * f.n, -1);
    for (int s = 0; s < n; ++s) {
      const Coord c = key(s);
      if (c.row < 0) continue;
      int& x = at[c.row * cols + c.col];
      if (x >= 0) {
        d.errors.push_back(std::string(op) + " " + slot_name(f, o, x) + " and " + slot_name(f, o, s) + " hold one element");
        return false;
      }
      x = s;
    }
    return true;
  };
  if (!one_each("A", f.a, na, [&](int s) { return rows.of_slot[s] < 0 ? Coord{} : Coord{rows.of_slot[s], a_k[s]}; }, f.k) ||
      !one_each("B", f.b, nb, [&](int t) { return cols.of_slot[t] < 0 ? Coord{} : Coord{b_k[t], cols.of_slot[t]}; }, f.n) ||
      !one_each("D", f.c, nc, [&](int s) { return Coord{c_row[s], c_col[s]}; }, f.n))
    return d;

  // Name the classes as the library does (each the name most of its slots have there: a slot out of place
  // does not rename its row), then compare slot by slot.
  const Map lib = library_map(f);
  auto name = [](int classes, auto votes) {
    std::vector<std::map<int, int>> count(classes);
    votes([&](int cl, int name) { ++count[cl][name]; });
    std::vector<int> names(classes);
    for (int i = 0; i < classes; ++i)
      names[i] = std::max_element(count[i].begin(), count[i].end(),
                                  [](const auto& x, const auto& y) { return x.second < y.second; })->first;
    return names;
  };
  const std::vector<int> row_name = name(f.m, [&](auto vote) {
    for (int s = 0; s < na; ++s) if (rows.of_slot[s] >= 0) vote(rows.of_slot[s], lib.a[s].row);
    for (int s = 0; s < nc; ++s) vote(c_row[s], lib.c[s].row);
  });
  const std::vector<int> col_name = name(f.n, [&](auto vote) {
    for (int t = 0; t < nb; ++t) if (cols.of_slot[t] >= 0) vote(cols.of_slot[t], lib.b[t].col);
    for (int s = 0; s < nc; ++s) vote(c_col[s], lib.c[s].col);
  });
  const std::vector<int> k_name = name(f.k, [&](auto vote) {
    for (int s = 0; s < na; ++s) if (a_k[s] >= 0) vote(a_k[s], lib.a[s].col);
    for (int t = 0; t < nb; ++t) if (b_k[t] >= 0) vote(b_k[t], lib.b[t].row);
  });
  auto distinct = [&](std::vector<int> names, const char* what) {
    std::sort(names.begin(), names.end());
    if (std::adjacent_find(names.begin(), names.end()) != names.end() || names.front() < 0)
      d.diffs.push_back(printf_string("the library's map gives two measured %s one name, or none", what));
  };
  distinct(row_name, "rows");
  distinct(col_name, "columns");
  distinct(k_name, "k");
  for (int s = 0; s < na; ++s)
    d.found.a.push_back(rows.of_slot[s] < 0 ? Coord{} : Coord{row_name[rows.of_slot[s]], k_name[a_k[s]]});
  for (int t = 0; t < nb; ++t)
    d.found.b.push_back(cols.of_slot[t] < 0 ? Coord{} : Coord{k_name[b_k[t]], col_name[cols.of_slot[t]]});
  for (int s = 0; s < nc; ++s) d.found.c.push_back({row_name[c_row[s]], col_name[c_col[s]]});
  auto compare = [&](const char* op, const OperandSlots& o, const std::vector<Coord>& found, const std::vector<Coord>& want) {
    for (size_t s = 0; s < found.size(); ++s)
      if (!(found[s] == want[s]))
        d.diffs.push_back(std::string(op) + " " + slot_name(f, o, int(s)) + ": measured " + coord_name(found[s]) +
                          ", the library's " + coord_name(want[s]));
  };
  compare("A", f.a, d.found.a, lib.a);
  compare("B", f.b, d.found.b, lib.b);
  compare("D", f.c, d.found.c, lib.c);
  if (f.scale.vec == 0) return d;

  // Round 4, the scales: a byte of a lane's scale register at 2, against A all ones and each B slot of
  // column 0 (for A's scales; B's: B all ones against each A slot of row 0). Where D comes out 2 is the row
  // (column) the byte scales, at the k of the one-hot slot.
  jobs.clear();
  for (int side = 1; side <= 2; ++side)
    for (int slot = 0; slot < kScaleSlots; ++slot)
      for (int i = 0; i < f.k; ++i)
        jobs.push_back(side == 1 ? Job{kAll, b0[i], 1, slot / 4, slot % 4} : Job{a0[i], kAll, 2, slot / 4, slot % 4});
  std::vector<uint32_t> masks;
  if (!go(jobs, res, &masks)) return d;
  for (int side = 1; side <= 2; ++side) {
    std::vector<Coord>& found = side == 1 ? d.found.sa : d.found.sb;
    for (int slot = 0; slot < kScaleSlots; ++slot) {
      std::vector<int> lines, ks;  // the rows (columns) and the k that came out 2
      for (int i = 0; i < f.k; ++i) {
        const size_t job = (size_t(side - 1) * kScaleSlots + slot) * f.k + i;
        bool hit = false;
        for (int c = 0; c < nc; ++c)
          if (masks[job * words + c / 32] >> (c % 32) & 1u) {
            const int line = side == 1 ? row_name[c_row[c]] : col_name[c_col[c]];
            if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
            hit = true;
          }
        if (hit) ks.push_back(side == 1 ? k_name[b_k[b0[i]]] : k_name[a_k[a0[i]]]);
      }
      std::sort(ks.begin(), ks.end());
      const std::string where = printf_string("%s scale lane %d byte %d", side == 1 ? "A" : "B", slot / 4, slot % 4);
      if (lines.empty()) {
        found.push_back({});
        continue;
      }
      // One row (column), and the k of one block: block consecutive k from a multiple of block.
      const bool one_block = int(ks.size()) == f.scale.block && ks.front() % f.scale.block == 0 &&
                             ks.back() - ks.front() == f.scale.block - 1;
      if (lines.size() != 1 || !one_block) {
        d.errors.push_back(where + printf_string(" scales %zu %s at %zu k (%d-%d), not one at %d consecutive k",
                                                 lines.size(), side == 1 ? "rows" : "columns", ks.size(), ks.front(),
                                                 ks.back(), f.scale.block));
        return d;
      }
      const int kblock = ks.front() / f.scale.block;
      found.push_back(side == 1 ? Coord{lines[0], kblock} : Coord{kblock, lines[0]});
      const Coord want = side == 1 ? lib.sa[slot] : lib.sb[slot];
      if (!(found.back() == want))
        d.diffs.push_back(where + ": measured " + coord_name(found.back()) + ", the library's " + coord_name(want));
    }
    for (int slot = 0; slot < kScaleSlots; ++slot) {
      const Coord want = side == 1 ? lib.sa[slot] : lib.sb[slot];
      if (found[slot].row < 0 && want.row >= 0)
        d.diffs.push_back(printf_string("%s scale lane %d byte %d: measured not read, the library's ", side == 1 ? "A" : "B",
                                        slot / 4, slot % 4) + coord_name(want));
    }
  }
  return d;
}

namespace {

// The slot at each cell of an operand's matrix (rows x cols), -1 where none, -2 where several.
std::vector<int> cells(const std::vector<Coord>& map, int rows, int cols) {
  std::vector<int> at(rows * cols, -1);
  for (int s = 0; s < int(map.size()); ++s) {
    const Coord c = map[s];
    if (c.row < 0 || c.row >= rows || c.col < 0 || c.col >= cols) continue;
    int& x = at[c.row * cols + c.col];
    x = x == -1 ? s : -2;
  }
  return at;
}

struct Panel {
  const char* name;
  const OperandSlots* o;
  const std::vector<Coord>* found;
  const std::vector<Coord>* lib;
  int rows, cols;
  const char* row_axis;
  const char* col_axis;
};

// A lane's scale register: four bytes.
constexpr OperandSlots kScaleRegister = regs(1, 4, 1);

std::vector<Panel> panels(const Family& f, const Map& m, const Map* lib) {
  std::vector<Panel> p = {{"A", &f.a, &m.a, lib ? &lib->a : nullptr, f.m, f.k, "m", "k"},
                          {"B", &f.b, &m.b, lib ? &lib->b : nullptr, f.k, f.n, "k", "n"},
                          {"D", &f.c, &m.c, lib ? &lib->c : nullptr, f.m, f.n, "m", "n"}};
  if (f.scale.vec && m.sa.size() == size_t(kScaleSlots)) {
    p.push_back({"A's scales", &kScaleRegister, &m.sa, lib ? &lib->sa : nullptr, f.m, f.scale.vec, "m", "k block"});
    p.push_back({"B's scales", &kScaleRegister, &m.sb, lib ? &lib->sb : nullptr, f.scale.vec, f.n, "k block", "n"});
  }
  return p;
}

}  // namespace

std::string grids(const Family& f, const Map& m, int max_rows, int max_cols) {
  std::string out;
  for (const Panel& p : panels(f, m, nullptr)) {
    const std::vector<int> at = cells(*p.found, p.rows, p.cols);
    const int rows = max_rows > 0 ? std::min(max_rows, p.rows) : p.rows;
    const int cols = max_cols > 0 ? std::min(max_cols, p.cols) : p.cols;
    const std::string part = rows < p.rows || cols < p.cols ? printf_string(", rows 0-%d, columns 0-%d", rows - 1, cols - 1) : "";
    auto grid = [&](const char* what, auto cell) {
      out += printf_string("%s (%d x %d, %s%s): %s\n  %s\\%s", p.name, p.rows, p.cols,
                           p.o->smem ? "shared memory" : "registers", part.c_str(), what, p.row_axis, p.col_axis);
      for (int c = 0; c < cols; ++c) out += printf_string("%5d", c);
      out += "\n";
      for (int r = 0; r < rows; ++r) {
        out += printf_string("  %4d", r);
        for (int c = 0; c < cols; ++c) {
          const int s = at[r * p.cols + c];
          out += s == -1 ? "    ." : s == -2 ? "    *" : printf_string("%5s", cell(s).c_str());
        }
        out += "\n";
      }
    };
    if (p.o->smem) {
      grid("the 16-byte chunk of the tile that holds it (byte offset / 16)",
           [&](int s) { return printf_string("%d", s * p.o->elem_bytes / 16); });
    } else {
      grid(f.threads == 32 ? "lane" : "thread", [&](int s) { return printf_string("%d", reg_slot(*p.o, s).thread); });
      if (p.o == &kScaleRegister)
        grid("byte of the lane's scale register", [&](int s) { return printf_string("%d", reg_slot(*p.o, s).part); });
      else
        grid(p.o->parts == 1 ? "register" : "register.part", [&](int s) {
          const RegSlot r = reg_slot(*p.o, s);
          return p.o->parts == 1 ? printf_string("%d", r.reg) : printf_string("%d.%d", r.reg, r.part);
        });
    }
    out += "\n";
  }
  return out;
}

std::string svg(const Family& f, const Discovery& d) {
  const Map lib = library_map(f);
  constexpr double kCell = 11, kGap = 40, kTop = 56, kLeft = 16;
  double width = kLeft, height = 0;
  for (const Panel& p : panels(f, d.found, &lib)) {
    width += p.cols * kCell + kGap;
    height = std::max(height, kTop + p.rows * kCell + 24);
  }
  std::string s = printf_string(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"18\" font-size=\"13\" font-weight=\"bold\">%s</text>\n"
      "<text x=\"%.0f\" y=\"34\">%s: measured on the GPU; colour: %s; red outline: the library's map differs%s</text>\n",
      width, height, kLeft, f.ptx, kLeft, d.ok() ? "matches the library's maps" : "DIFFERS from the library's maps",
      f.threads == 32 ? "the lane" : "the thread (hue: lane, lightness: warp)",
      d.errors.empty() ? "" : (" (" + d.errors.front() + ")").c_str());
  double x0 = kLeft;
  for (const Panel& p : panels(f, d.found, &lib)) {
    s += printf_string("<text x=\"%.0f\" y=\"%.0f\">%s (%d x %d, %s; rows %s, columns %s)</text>\n", x0, kTop - 8,
                       p.name, p.rows, p.cols, p.o->smem ? "shared memory" : "registers", p.row_axis, p.col_axis);
    const std::vector<int> at = cells(*p.found, p.rows, p.cols);
    for (int r = 0; r < p.rows; ++r)
      for (int c = 0; c < p.cols; ++c) {
        const int slot = at[r * p.cols + c];
        std::string fill = "#dddddd", title = "no slot";
        if (slot == -2) {
          fill = "#000000", title = "several slots";
        } else if (slot >= 0 && p.o->smem) {
          const int chunk = slot * p.o->elem_bytes / 16;
          fill = printf_string("hsl(%d,60%%,%d%%)", chunk % 8 * 45, 55 + chunk / 8 % 4 * 8);
          title = printf_string("byte %d (chunk %d)", slot * p.o->elem_bytes, chunk);
        } else if (slot >= 0) {
          const RegSlot rs = reg_slot(*p.o, slot);
          fill = printf_string("hsl(%d,65%%,%d%%)", rs.thread % 32 * 45 % 360 + rs.thread % 32 / 8 * 11, 45 + rs.thread / 32 * 10);
          title = printf_string("%s %d, register %d", f.threads == 32 ? "lane" : "thread", rs.thread, rs.reg) +
                  (p.o->parts > 1 ? printf_string(", part %d", rs.part) : "");
        }
        const bool differs = slot >= 0 && !((*p.found)[slot] == (*p.lib)[slot]);
        s += printf_string("<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"%s\" stroke=\"%s\"%s>"
                           "<title>(%d, %d): %s</title></rect>\n",
                           x0 + c * kCell, kTop + r * kCell, kCell, kCell, fill.c_str(), differs ? "red" : "white",
                           differs ? " stroke-width=\"2\"" : "", r, c, title.c_str());
      }
    x0 += p.cols * kCell + kGap;
  }
  return s + "</svg>\n";
}

}  // namespace mxattn::probe
