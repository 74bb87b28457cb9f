#include "common/command_line.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
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

// The option named `name` in `app` or the subcommands parsed so far (the deepest wins).
const CLI::Option* FindParsedOption(CLI::App& app, const std::string& name) {
  const CLI::Option* found = app.get_option_no_throw(name);
  for (CLI::App* sub : app.get_subcommands()) {
    if (const CLI::Option* deeper = FindParsedOption(*sub, name)) found = deeper;
  }
  return found;
}

// CLI11's "Could not convert: id = abc" as "id: expected an integer, got abc"; other
// messages unchanged.
std::string DescribeParseError(CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what();
  constexpr absl::string_view kPrefix = "Could not convert: ";
  const size_t equals = what.find(" = ");
  if (!absl::StartsWith(what, kPrefix) || equals == std::string::npos) return what;
  const std::string name = what.substr(kPrefix.size(), equals - kPrefix.size());
  const std::string value = what.substr(equals + 3);
  const CLI::Option* option = FindParsedOption(app, name);
  const std::string type = option != nullptr ? option->get_type_name() : "";
  const char* expected = type == "INT"     ? "an integer"
                         : type == "UINT"  ? "an integer >= 0"
                         : type == "FLOAT" ? "a number"
                                           : "a valid value";
  return absl::StrCat(name, ": expected ", expected, ", got ", value);
}

}  // namespace

namespace {

class UsageFormatter : public CLI::Formatter {
 public:
  UsageFormatter(const CLI::App* app, std::string usage) : app_(app), usage_(std::move(usage)) {}
  std::string make_usage(const CLI::App* app, std::string name) const override {
    if (app != app_) return CLI::Formatter::make_usage(app, std::move(name));
    return "Usage: " + usage_ + "\n";
  }

 private:
  const CLI::App* app_;
  std::string usage_;
};

}  // namespace

void SetUsage(CLI::App& app, std::string usage) {
  app.formatter(std::make_shared<UsageFormatter>(&app, std::move(usage)));
}

std::optional<int> ParseCommandLine(CLI::App& app, const std::string& program, int argc,
                                    const char* const* argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return UsageError(program, DescribeParseError(app, e));
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
