// `mxattn probe`: the tensor-core instructions' fragment maps measured on the GPU (probe/probe.h), printed as
// grids, drawn as SVG, and held against the maps the kernels use; the exit status says whether they agree.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "mxattn/probe/probe.h"
#include "options.h"

namespace mxattn::cli {
namespace {

constexpr int kValueDraws = 64;  // draws of random operands a family (probe.h check_values)

struct ProbeOptions {
  std::vector<std::string> families;
  std::string svg_dir;
  bool full = false, cpu_model = false;
};

int run_probe(const ProbeOptions& o) {
  std::vector<const probe::Family*> families;
  for (const std::string& name : o.families) families.push_back(probe::find_family(name));
  probe::Runner run;
  probe::ValueRunner run_values;
  if (o.cpu_model) {
    std::printf("CPU model of the library's own maps (a check of the probe itself, not of a GPU)\n\n");
    if (o.families.empty())
      for (const probe::Family& f : probe::families()) families.push_back(&f);
  } else {
#if defined(MXATTN_WITH_CUDA)
    const int cc = gpu_present() ? probe::gpu_compute_capability() : 0;
    if (cc == 0) {
      std::fprintf(stderr, "mxattn probe: no CUDA GPU can be used (--cpu-model runs the probe on a CPU model of "
                           "the library's maps)\n");
      return 1;
    }
    if (o.families.empty()) families = probe::families_for(cc);
    for (const probe::Family* f : families)
      if (!f->runs_on(cc)) {
        std::fprintf(stderr, "mxattn probe: --family %s does not run on this GPU (sm_%d)\n", f->name, cc);
        return 2;
      }
    run = probe::gpu_runner();
    run_values = probe::gpu_value_runner();
#else
    std::fprintf(stderr, "mxattn probe: no CUDA GPU can be used: this mxattn was built without CUDA (--cpu-model "
                         "runs the probe on a CPU model of the library's maps)\n");
    return 1;
#endif
  }
  int differ = 0;
  for (const probe::Family* f : families) {
    const probe::Discovery d = probe::discover(*f, o.cpu_model ? probe::model_runner(probe::library_map(*f)) : run);
    std::printf("== %s: %s\n%d runs; ", f->name, f->ptx, d.jobs);
    if (d.ok()) std::printf("the measured map is the library's (%d A, %d B and %d D slots)\n\n", f->a_slots(),
                            f->b_slots(), f->c_slots());
    for (const std::string& e : d.errors) std::printf("ERROR: %s\n", e.c_str());
    if (!d.diffs.empty()) std::printf("%zu slots DIFFER from the library's map:\n", d.diffs.size());
    for (size_t i = 0; i < d.diffs.size() && i < 32; ++i) std::printf("  %s\n", d.diffs[i].c_str());
    if (d.diffs.size() > 32) std::printf("  ... (%zu more)\n", d.diffs.size() - 32);
    // The values round: random codes (and scales) against the model of the instruction's semantics.
    const probe::Map lib = probe::library_map(*f);
    const probe::ValueCheck v = probe::check_values(*f, o.cpu_model ? probe::model_value_runner(lib) : run_values,
                                                    kValueDraws, 2026);
    if (!v.error.empty()) std::printf("ERROR: values: %s\n", v.error.c_str());
    else
      std::printf("values: %d draws of random codes%s; largest |D - model| / sum |products| %.3g (bar %.3g)%s\n",
                  v.draws, f->scale.vec ? " and scales" : "", v.worst, v.bar,
                  v.ok() ? "" : ": DIFFERS from the model");
    if (!d.ok() || !v.ok()) ++differ;
    if (d.errors.empty()) {
      std::fputs(probe::grids(*f, d.found, o.full ? 0 : 16, o.full ? 0 : 32).c_str(), stdout);
      if (!o.full && (f->m > 16 || f->n > 32 || f->k > 32)) std::printf("(--full prints every row and column)\n\n");
    }
    if (!o.svg_dir.empty()) {
      const std::string path = o.svg_dir + "/" + f->name + ".svg";
      std::ofstream out(path);
      out << probe::svg(*f, d);
      if (!out) {
        std::fprintf(stderr, "mxattn probe: --svg: cannot write %s\n", path.c_str());
        return 2;
      }
      std::printf("wrote %s\n\n", path.c_str());
    }
  }
  std::printf("%zu %s probed: %s\n", families.size(), families.size() == 1 ? "family" : "families",
              differ ? "the library's maps or the model DIFFER from the measured ones"
                     : "every measured map is the library's, every D the model's");
  return differ ? 1 : 0;
}

}  // namespace

Command probe_command(CLI::App& mxattn) {
  CLI::App* app = mxattn.add_subcommand(
      "probe", "measure the tensor cores' fragment maps on the GPU and check the library's against them");
  auto o = std::make_shared<ProbeOptions>();
  std::vector<std::string> names;
  for (const probe::Family& f : probe::families()) names.push_back(f.name);
  add_list(app, "--family", o->families, "instruction families, comma-separated (default: every one the GPU runs)")
      ->check(one_of(names))
      ->type_name("F");
  app->add_option("--svg", o->svg_dir, "write a picture of each family's map to DIR/<family>.svg")->type_name("DIR");
  app->add_flag("--full", o->full, "print every row and column of the grids (default: the first 16 rows, 32 columns)");
  app->add_flag("--cpu-model", o->cpu_model, "probe a CPU model of the library's own maps instead of the GPU");
  app->footer(
      "Each run sets one element of an operand to 1 (the other operand all ones, or one element of it too)\n"
      "and sees which accumulator registers come out 1: rows, columns and k are measured, not assumed.\n"
      "Then it runs each instruction on random codes (and scales) and compares D with a model of its\n"
      "documented semantics over the library's maps.\n"
      "Exit status 1 when a measured map differs from the one the kernels use, or D from the model.");
  return {app, [o] { return run_probe(*o); }};
}

}  // namespace mxattn::cli
