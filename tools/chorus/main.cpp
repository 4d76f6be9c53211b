// `chorus`: one CLI with subcommands (docs/design.md "CLI contract"). Parses the command line,
// runs the chosen subcommand and maps errors to exit codes: 2 for usage mistakes, 1 for
// failures found, 3 (with a bug message) for chorus's own internal errors.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli.h"
#include "support/error.h"

namespace chorus::cli {

void printError(std::string_view message) {
  fmt::print(stderr, "chorus: error: {}\n", message);
}

void writeTextOutput(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::ofstream file(path, std::ios::binary);
  if (!file) throw UserError(fmt::format("cannot open '{}' for writing", path));
  file << text;
  file.close();
  if (!file) throw UserError(fmt::format("failed writing '{}'", path));
}

namespace {

ExitCode exitCodeFor(const UserError& error) {
  if (dynamic_cast<const OptionError*>(&error) != nullptr) return ExitCode::usage;
  if (dynamic_cast<const ParseError*>(&error) != nullptr) return ExitCode::usage;
  return ExitCode::failure;
}

int runMain(int argc, char** argv) {
  CLI::App app{"chorus: programmable collective communication (trace, compile, verify, run)",
               "chorus"};
  app.require_subcommand(1);
  const std::vector<std::pair<std::string, Command>> commands = {
      {"algorithms", addAlgorithmsCommand(app)},
      {"compile", addCompileCommand(app)},
      {"verify", addVerifyCommand(app)},
      {"run", addRunCommand(app)},
      {"launch", addLaunchCommand(app)},
      {"bench", addBenchCommand(app)},
      {"tune", addTuneCommand(app)},
      {"topology", addTopologyCommand(app)},
      {"simulate", addSimulateCommand(app)},
      {"synth", addSynthCommand(app)},
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    printError(error.what());
    fmt::print(stderr, "Run 'chorus --help' or 'chorus SUBCOMMAND --help' for usage.\n");
    return static_cast<int>(ExitCode::usage);
  }

  for (const auto& [name, command] : commands) {
    if (!app.get_subcommand(name)->parsed()) continue;
    try {
      return static_cast<int>(command());
    } catch (const UserError& error) {
      printError(error.what());
      return static_cast<int>(exitCodeFor(error));
    }
  }
  printError("no subcommand given; run 'chorus --help'");
  return static_cast<int>(ExitCode::usage);
}

}  // namespace
}  // namespace chorus::cli

int main(int argc, char** argv) {
  try {
    return chorus::cli::runMain(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr,
               "chorus: internal error (this is a bug in chorus; please report it with the "
               "command line): {}\n",
               error.what());
    return static_cast<int>(chorus::cli::ExitCode::internal);
  }
}
