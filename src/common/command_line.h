#pragma once
// Command-line parsing that behaves the same in every Cohort program (CLI11 underneath):
//   --help           the help on stdout, exit 0;
//   a bad argument   "PROGRAM: error: WHAT" and "Run 'PROGRAM --help' for usage." on stderr,
//                    exit 2 (kUsageExit), never CLI11's own codes (105-109) or bare messages.
// And validators whose errors name the rule ("--slots: must be a positive number, got -1")
// instead of CLI11's ranges of doubles ("not in range 0.000000 to 1.79e308").
//
// Example:
//   CLI::App app{"cohort-agent: ..."};
//   app.add_option("--slots", slots, "CPU slots")->check(PositiveNumber());
//   if (std::optional<int> exit = ParseCommandLine(app, "cohort-agent", argc, argv)) {
//     return *exit;
//   }

#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"

namespace cohort {

// The exit status of a usage error, in every Cohort program (cli/exit_codes.h's kExitUsage).
inline constexpr int kUsageExit = 2;

// Parses argc/argv into `app`. nullopt: go on; otherwise the status to exit with (0 after
// --help, kUsageExit after a bad argument), having printed what it says above.
std::optional<int> ParseCommandLine(CLI::App& app, const std::string& program, int argc,
                                    const char* const* argv);

// The same message and status for a usage error found after parsing (an option that needs
// another, say): prints "PROGRAM: error: WHAT" and the hint, returns kUsageExit.
int UsageError(const std::string& program, const std::string& what);

// Makes `usage` (without "Usage: ") the one Usage line of `app`'s help, where CLI11 2.1 would
// print its generated "Usage: PROGRAM [OPTIONS] SUBCOMMAND" (a description must then not hold
// one of its own). Its subcommands keep CLI11's. Call before adding subcommands or after: both
// work.
void SetUsage(CLI::App& app, std::string usage);

// A number > 0 (integers and decimals).
CLI::Validator PositiveNumber();
// A number >= 0.
CLI::Validator NonNegativeNumber();

}  // namespace cohort
