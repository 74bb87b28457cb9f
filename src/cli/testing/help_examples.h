#pragma once
// The example commands that `cohort`'s helps and the README show, as tests find them: the
// subcommands a help lists, every command with a help, and the "cohort ..." lines of a text.
// Test-only, header-only; pure.

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace cohort::cli::testing {

// The names under "Subcommands:" in a help text.
inline std::vector<std::string> SubcommandsOf(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Subcommands:") {
      inside = true;
    } else if (inside && line.rfind("  ", 0) == 0) {
      std::string name = line.substr(2, line.find_first_of(" ,", 2) - 2);
      if (!name.empty()) names.push_back(name);
    } else if (inside) {
      inside = false;
    }
  }
  return names;
}

// Every command `cohort` has help for: "" (the root), each group of the root's help and each
// verb of each group's ("experiment create"). `help(command)` returns `cohort COMMAND --help`.
inline std::vector<std::string> HelpedCommands(
    const std::function<std::string(const std::string&)>& help) {
  std::vector<std::string> commands = {""};
  for (const std::string& group : SubcommandsOf(help(""))) {
    commands.push_back(group);
    for (const std::string& verb : SubcommandsOf(help(group))) {
      commands.push_back(group + " " + verb);
    }
  }
  return commands;
}

// The example commands in a text: each line that, trimmed of a leading "build/bin/", begins
// with "cohort ", without its "  # comment" or "   (note)", split at ";" and "&&" (the README
// joins a few), each trimmed of a leading "build/bin/".
inline std::vector<std::string> ExampleCommands(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos) continue;
    std::string rest = line.substr(start);
    if (rest.rfind("build/bin/", 0) == 0) rest = rest.substr(10);
    if (rest.rfind("cohort ", 0) != 0) continue;
    if (const size_t comment = rest.find("  #"); comment != std::string::npos) rest.resize(comment);
    if (const size_t paren = rest.find("   ("); paren != std::string::npos) rest.resize(paren);
    for (std::string part; !rest.empty();) {
      size_t cut = std::min(rest.find(';'), rest.find("&&"));
      part = rest.substr(0, cut);
      rest = cut == std::string::npos ? "" : rest.substr(cut + (rest[cut] == ';' ? 1 : 2));
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      if (part.rfind("build/bin/", 0) == 0) part = part.substr(10);
      if (part.rfind("cohort ", 0) == 0) out.push_back(part);
    }
  }
  return out;
}

}  // namespace cohort::cli::testing
