// `mxattn probe`: the fragment maps of the tensor-core instructions, measured on the GPU and held against
// the maps the kernels use (kernels/attention/fragment.h, kernels/attention/hopper/fragment.h).
//
// The method is the one-hot probe: set one element of an operand to 1 and everything else to 0 (or all
// of the other operand to 1), run the instruction once, and see which accumulator registers come out 1.
// An operand's element is a slot: (thread, register, part) for an operand in registers, an element of the
// tile for an operand in shared memory. Three rounds find the whole map, with no layout assumed:
//   1. each A slot alone, B all ones: the accumulator slots that light up are one row of D; A slots that
//      light up the same set share a row (M rows of K slots each; a slot that lights nothing is not read);
//   2. each B slot alone, A all ones: the same for columns;
//   3. each A slot against each B slot of one column, and each B slot against each A slot of one row:
//      a pair lights D exactly when both hold the same k, which sorts the slots into K classes.
// A matrix product does not change when rows, columns or k are renamed together in A, B and D, so what the
// hardware defines is the classes; the library names them (each class the coordinate most of its slots have
// in the library's map), and the probe then checks every slot of A, B and D against the library's map.
// Block-scaled instructions (sm_120a) add a fourth round, the scale probe: every operand one-hot and
// every scale 1, except one byte of one lane's scale register, which is 2; the accumulators that come out 2
// name the row of A (column of B) and the k that byte scales. (Selectors {byte-id, thread-id} = {0, 0}, as
// the kernels use them: ptx/mma_block_scale.h.) Then the values round (check_values): random codes and scales
// against the CPU model of the instruction's semantics over the library's maps.
// Host code: a CPU model of an instruction (model_runner) stands in for the GPU in the tests.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mxattn/api/status.h"
#include <random>

#include "mxattn/format/element.h"
#include "mxattn/format/scale.h"

namespace mxattn::probe {

// An operand's slots: registers (regs a thread, parts a register: 2 for 16-bit elements, 4 for 8-bit, 8 for
// packed 4-bit) or a shared-memory tile (rows x row_bytes, K-major, swizzled as the kernels' tiles are:
// frag::KMajorTile, 128-byte swizzle for 128-byte rows, 64-byte for 64), element by element.
struct OperandSlots {
  bool smem = false;
  int regs = 0, parts = 0;         // registers
  int rows = 0, row_bytes = 0;     // shared memory
  int elem_bytes = 1;
  int count(int threads) const { return smem ? rows * row_bytes / elem_bytes : threads * regs * parts; }
  // 32-bit words that hold the operand: a thread's registers one after another, or the tile's bytes.
  int words(int threads) const { return smem ? rows * row_bytes / 4 : threads * regs; }
};

// Block scales: `vec` scales a row of A (a column of B) an instruction, each over `block` k; their codes of
// 1 and 2 (UE8M0 127 / 128, UE4M3 0x38 / 0x40). vec 0: not block-scaled.
struct ScaleSpec {
  int vec = 0, block = 0;
  uint32_t one = 0, two = 0;
  ScaleType type = ScaleType::E8M0;
};

// BF16 as an element: E8M7.
inline constexpr Element kBf16Element = Element::minifloat(8, 7, Specials::Ieee);

struct Family {
  const char* name;  // the command line's name
  const char* ptx;   // the instruction
  int m, n, k, threads;
  OperandSlots a, b, c;  // c: parts 1 (one FP32 value a register)
  // Shared-memory operands: the instruction reads k-step `kstep` of the tile (bytes 32 kstep .. + 32 of a row).
  int kstep;
  // The elements of A and B (BF16: kBf16Element). In a byte of kind::mxf8f6f4 a 6-bit code sits in bits 5:0, a
  // 4-bit one in bits 5:2; kind::mxf4nvf4 packs E2M1 nibbles.
  Element a_elem, b_elem;
  uint32_t a_one, b_one;  // an element's code of 1.0 (in its part of the register or tile)
  ScaleSpec scale;
  int sm;           // the GPUs it runs on: sm_80 / 89 and newer (mma.sync), sm_90 only (wgmma), sm_120 (block-scaled)
  bool runs_on(int cc) const { return sm == 90 || sm == 120 ? cc == sm : cc >= sm; }
  int a_slots() const { return a.count(threads); }
  int b_slots() const { return b.count(threads); }
  int c_slots() const { return c.count(threads); }
};

// Every family: mma.sync m16n8k16 BF16 and m16n8k32 E4M3; wgmma (sm_90) m64nNk16 BF16 and m64nNk32 E4M3 at the
// N, swizzle and A source of each wgmma the Hopper kernel issues (S = Q'K'^T from shared memory, N = 64, 128,
// 192, 256; P V'^T with P in registers, N = D, D + 8, and 8 for the row sums; 64-byte rows where the tile is
// 64 bytes wide); the block-scaled mma.sync of sm_120a: m16n8k32 kind::mxf8f6f4 (UE8M0 scales) with each element
// type against itself and E4M3 against each (P V), m16n8k64 kind::mxf4nvf4 with packed E2M1 and UE8M0 (2X) or
// UE4M3 (4X, NVFP4) scales.
const std::vector<Family>& families();
std::vector<const Family*> families_for(int cc);  // those a GPU of compute capability cc (90, 120, ...) runs
const Family* find_family(const std::string& name);

// A matrix coordinate: A (row m, col k), B (row k, col n), D (row m, col n); {-1, -1}: a slot the
// instruction does not read (shared-memory bytes outside its k-step).
struct Coord {
  int row = -1, col = -1;
  bool operator==(const Coord& o) const { return row == o.row && col == o.col; }
};
inline constexpr int kScaleSlots = 32 * 4;
struct Map {
  std::vector<Coord> a, b, c;  // by slot
  // Block-scaled: by scale slot (lane x 4 + byte of the lane's scale register, kScaleSlots), the row of A and k block
  // (k / block) it scales, and the k block and column of B; {-1, -1} where the byte is not read.
  std::vector<Coord> sa, sb;
};
// The maps the kernels use, by slot.
Map library_map(const Family& f);

// One run of the instruction: A slot `a` set to 1 (kAll: every A slot), the same for B, the others 0.
inline constexpr int kAll = -1;
struct Job {
  int a, b;
  int scale = 0;           // block-scaled: 0 every scale 1; 1 (A) or 2 (B): byte `byte` of lane `lane`'s is 2
  int lane = 0, byte = 0;
};
// What came out: how many accumulator slots are nonzero, how many hold something other than 0 and 1 (and 2 in
// a job with a scale of 2), and (when masks are asked for) which are nonzero (jobs with a scale of 2: which
// are 2), c_slots() bits a job.
struct Result {
  int nonzero = 0, bad = 0;
};
using Runner = std::function<Status(const Family&, const std::vector<Job>&, std::vector<Result>&,
                                    std::vector<uint32_t>* masks)>;
inline int mask_words(const Family& f) { return (f.c_slots() + 31) / 32; }

// The CPU model of an instruction whose slots sit where `map` says: D = A B over the coordinates, each
// product times its row's and column's scale of its k.
Runner model_runner(Map map);

// The same model on a warp's real registers, for the kernels' tests: D += sum_k (A x scale_A)(B x scale_B) over
// the library's maps (the scales': selectors {0, 0}), products and sums in FP64, D rounded to FP32. a_elem and
// b_elem: the element types (kind::mxf8f6f4 mixes them; a byte holds a 6-bit code in bits 5:0, a 4-bit one in
// bits 5:2; kind::mxf4nvf4 packs E2M1 nibbles); scale: UE8M0 or UE4M3. A block-scaled family only.
struct WarpRegs {
  uint32_t a[32][4] = {}, b[32][2] = {}, sa[32] = {}, sb[32] = {};
};
void mma_model(const Family& f, const Element& a_elem, const Element& b_elem, ScaleType scale, const WarpRegs& r,
               float (&d)[32][4]);

// The values round (check_values): the instruction on random codes of its elements (finite; block-scaled, random
// scales near 1), against the CPU model of its documented semantics over the library's maps, D = sum_k (A x
// scale_A)(B x scale_B) in FP64. It checks what the one-hot rounds cannot: how a code's bits are read (the
// element types, the bits a 4- or 6-bit code sits in, E8M0 against UE4M3 scales) and that bytes the instruction
// should not read (a tile's other k-steps, random too) do not change D.
struct Operands {
  std::vector<uint32_t> a, b;  // OperandSlots::words
  uint32_t sa[32] = {}, sb[32] = {};
};
Operands random_operands(const Family& f, std::mt19937& rng);
std::vector<double> model_values(const Family& f, const Map& map, const Operands& x);  // by D slot
// D by slot (c_slots a draw) of each draw.
using ValueRunner = std::function<Status(const Family&, const std::vector<Operands>&, std::vector<float>& d)>;
ValueRunner model_value_runner(Map map);  // model_values over `map`: a model of an instruction laid out otherwise
struct ValueCheck {
  int draws = 0;
  double worst = 0;   // the largest |D - model| / sum_k |products| over every D of every draw
  double bar = 0;     // value_bar(f)
  std::string error;  // the instruction did not run
  bool ok() const { return error.empty() && worst <= bar; }
};
// How far D may be from the model. FP32 accumulation of exact products: 2^-16 (on the H200, mma.sync BF16 and
// E4M3 and wgmma BF16 measured at most 2.3e-7, 2^-22). Hopper's FP8 wgmma aligns a k32 step's products to the
// largest and keeps about 13 bits (bench/decode_notes.md), and sm_120's block-scaled accumulation is not
// specified: 2^-8 (the FP8 wgmma measured up to 9.0e-4, 2^-10.1, in two runs of 64 draws). A code read the
// wrong way moves D by a whole product, 1/K of the sum on average.
double value_bar(const Family& f);
ValueCheck check_values(const Family& f, const ValueRunner& run, int draws, uint32_t seed);

struct Discovery {
  Map found;                        // the measured map, its classes named by the library
  std::vector<std::string> errors;  // what could not be made a map (each a sentence)
  std::vector<std::string> diffs;   // slots where the measured map and the library's differ
  int jobs = 0;
  bool ok() const { return errors.empty() && diffs.empty(); }
};
Discovery discover(const Family& f, const Runner& run);

// The measured map as text: per operand, a grid of the matrix whose cells say which thread holds the
// element, and one of its register and part (shared-memory operands: the 16-byte chunk of the tile).
// max_rows / max_cols: 0 for all.
std::string grids(const Family& f, const Map& m, int max_rows, int max_cols);
// The same as an SVG picture: A, B and D side by side, a cell coloured by its thread (lane), slots the
// library places elsewhere outlined in red.
std::string svg(const Family& f, const Discovery& d);

// The GPU's runners (src/kernels/probe.cu; the block-scaled families src/kernels/probe_sm120.cu), and the
// current GPU's compute capability (90, 120, ...; 0 without one). Defined only in a build with CUDA
// (MXATTN_WITH_CUDA).
Runner gpu_runner();
ValueRunner gpu_value_runner();
int gpu_compute_capability();

}  // namespace mxattn::probe
