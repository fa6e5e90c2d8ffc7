// mxattn: the command-line tool. Each command lives in its own file (commands.h); CLI11 parses the
// command line (apps/options.h) and writes every command's --help from its options.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"

namespace {

// "mxattn bench quantize": the deepest command the parse reached, to prefix its errors.
std::string command_path(const CLI::App& app) {
  std::string path = app.get_name();
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mxattn::cli;
  CLI::App app("Microscaling block-scaled tensors: formats, their error in attention, GPU benchmarks.", "mxattn");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a repeated option: the last wins
  app.get_formatter()->column_width(26);  // shared by every command's help; explore's runs to ~100 columns
  const std::vector<Command> commands = {formats_command(app), demo_command(app), explore_command(app),
                                         bench_command(app), probe_command(app)};
  if (argc < 2) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: the help of the command named, on stdout, exit status 0
  } catch (const CLI::ParseError& e) {
    const std::string path = command_path(app);
    std::fprintf(stderr, "%s: %s\n(%s --help lists the options)\n", path.c_str(), e.what(), path.c_str());
    return 2;
  }
  for (const Command& c : commands)
    if (*c.app) return c.run();
  std::fprintf(stderr, "mxattn: no command given\n%s", app.help().c_str());  // e.g. `mxattn --` alone
  return 2;
}
