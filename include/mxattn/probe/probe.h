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
// hardware defines is the classes; the library names them (each class takes the coordinate the library's
// map gives its first slot), and the probe then checks every slot of A, B and D against the library's map.
// Host code: a CPU model of an instruction (model_runner) stands in for the GPU in the tests.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mxattn/api/status.h"

namespace mxattn::probe {

enum class FamilyId { MmaBf16, MmaE4m3, WgmmaBf16Rs, WgmmaBf16Ss, WgmmaE4m3Rs, WgmmaE4m3Ss };

// An operand's slots: registers (regs a thread, parts a register: 2 for 16-bit elements, 4 for 8-bit) or a
// shared-memory tile (rows x row_bytes, K-major, 128-byte swizzle: frag::KMajorTile), element by element.
struct OperandSlots {
  bool smem = false;
  int regs = 0, parts = 0;         // registers
  int rows = 0, row_bytes = 0;     // shared memory
  int elem_bytes = 1;
  int count(int threads) const { return smem ? rows * row_bytes / elem_bytes : threads * regs * parts; }
};

struct Family {
  FamilyId id;
  const char* name;  // the command line's name
  const char* ptx;   // the instruction
  int m, n, k, threads;
  OperandSlots a, b, c;  // c: parts 1 (one FP32 value a register)
  // Shared-memory operands: the instruction reads k-step `kstep` of the tile (bytes 32 kstep .. + 32 of a row).
  int kstep;
  int a_slots() const { return a.count(threads); }
  int b_slots() const { return b.count(threads); }
  int c_slots() const { return c.count(threads); }
};

// The families of sm_90 (H100, H200): mma.sync m16n8k16 BF16 and m16n8k32 E4M3; wgmma m64n64k16 BF16 and
// m64n64k32 E4M3, A from registers and from shared memory.
const std::vector<Family>& sm90_families();
const Family* find_family(const std::string& name);

// A matrix coordinate: A (row m, col k), B (row k, col n), D (row m, col n); {-1, -1}: a slot the
// instruction does not read (shared-memory bytes outside its k-step).
struct Coord {
  int row = -1, col = -1;
  bool operator==(const Coord& o) const { return row == o.row && col == o.col; }
};
struct Map {
  std::vector<Coord> a, b, c;  // by slot
};
// The maps the kernels use, by slot.
Map library_map(const Family& f);

// One run of the instruction: A slot `a` set to 1 (kAll: every A slot), the same for B, the others 0.
inline constexpr int kAll = -1;
struct Job {
  int a, b;
};
// What came out: how many accumulator slots are nonzero, how many hold something other than 0 or 1, and
// (when masks are asked for) which, c_slots() bits a job.
struct Result {
  int nonzero = 0, bad = 0;
};
using Runner = std::function<Status(const Family&, const std::vector<Job>&, std::vector<Result>&,
                                    std::vector<uint32_t>* masks)>;
inline int mask_words(const Family& f) { return (f.c_slots() + 31) / 32; }

// The CPU model of an instruction whose slots sit where `map` says: D = A B over the coordinates.
Runner model_runner(Map map);

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

// The GPU's runner (src/kernels/probe.cu): defined only in a build with CUDA (MXATTN_WITH_CUDA).
Runner gpu_runner();

}  // namespace mxattn::probe
