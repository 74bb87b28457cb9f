#include "common/command_line.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cohort {
namespace {

// A validator of numbers that `ok` accepts; its message says `rule` and what was given.
CLI::Validator NumberRule(bool (*ok)(double), const char* rule, const char* description) {
  return CLI::Validator(
      [ok, rule](std::string& input) -> std::string {
        double value = 0;
        if (absl::SimpleAtod(input, &value) && std::isfinite(value) && ok(value)) return "";
        return absl::StrCat("must be ", rule, ", got ", input);
      },
      description);
}

}  // namespace

std::optional<int> ParseCommandLine(CLI::App& app, const std::string& program, int argc,
                                    const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return UsageError(program, e.what());
  }
  return std::nullopt;
}

int UsageError(const std::string& program, const std::string& what) {
  std::fprintf(stderr, "%s: error: %s\nRun '%s --help' for usage.\n", program.c_str(), what.c_str(),
               program.c_str());
  return kUsageExit;
}

CLI::Validator PositiveNumber() {
  return NumberRule([](double v) { return v > 0; }, "a positive number", "> 0");
}

CLI::Validator NonNegativeNumber() {
  return NumberRule([](double v) { return v >= 0; }, "a number >= 0", ">= 0");
}

}  // namespace cohort
