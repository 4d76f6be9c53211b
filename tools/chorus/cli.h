// Shared pieces of the `chorus` command-line tool: exit codes, error printing and the
// per-subcommand set-up functions (one file each, thin over the libraries).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace chorus::cli {

// Process exit codes (docs/design.md "CLI contract").
enum class ExitCode : int {
  ok = 0,
  failure = 1,   // a failure was found: invalid program, wrong result, compile error
  usage = 2,     // bad options, unknown names, unparsable input
  internal = 3,  // a bug in chorus
};

// Runs a parsed subcommand; returns the exit code. May throw chorus::UserError.
using Command = std::function<ExitCode()>;

// Each adds its subcommand (with options and --help) to `app` and returns the action to run
// once the command line has been parsed.
Command addAlgorithmsCommand(CLI::App& app);
Command addCompileCommand(CLI::App& app);
Command addVerifyCommand(CLI::App& app);
Command addRunCommand(CLI::App& app);
Command addLaunchCommand(CLI::App& app);
Command addBenchCommand(CLI::App& app);
Command addTuneCommand(CLI::App& app);
Command addTopologyCommand(CLI::App& app);
Command addSimulateCommand(CLI::App& app);
Command addSynthCommand(CLI::App& app);

// Prints "chorus: error: <message>" to stderr.
void printError(std::string_view message);

// Writes `text` to the file `path`, or to standard output when `path` is "-". Throws
// chorus::UserError naming the file when it cannot be written.
void writeTextOutput(const std::string& path, const std::string& text);

}  // namespace chorus::cli
