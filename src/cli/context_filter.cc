#include "cli/context_filter.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

bool Glob(const std::string& pattern, absl::string_view name) {
  return ::fnmatch(pattern.c_str(), std::string(name).c_str(), 0) == 0;
}

// Whether pattern components [p, end) match path components [s, end); "**" matches any number
// of components, or at least one as the pattern's last component ("logs/**": what is inside).
bool MatchComponents(const std::vector<std::string>& pattern, size_t p,
                     const std::vector<absl::string_view>& path, size_t s) {
  if (p == pattern.size()) return s == path.size();
  if (pattern[p] == "**") {
    if (p + 1 == pattern.size()) return s < path.size();
    for (size_t k = s; k <= path.size(); ++k) {
      if (MatchComponents(pattern, p + 1, path, k)) return true;
    }
    return false;
  }
  return s < path.size() && Glob(pattern[p], path[s]) &&
         MatchComponents(pattern, p + 1, path, s + 1);
}

std::vector<absl::string_view> Components(absl::string_view path) {
  return absl::StrSplit(path, '/', absl::SkipEmpty());
}

absl::StatusOr<std::string> ReadDetignore(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::string();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path.string()));
  return text.str();
}

// Appends the entries under `dir` (whose path relative to the context is `prefix`) to `out`.
absl::Status Walk(const fs::path& dir, const std::string& prefix, const ContextFilter& filter,
                  std::vector<std::string>* out) {
  std::error_code ec;
  std::vector<std::pair<std::string, bool>> children;  // name, is a directory
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const bool is_directory = it->symlink_status(ec).type() == fs::file_type::directory;
    if (ec) break;
    children.emplace_back(it->path().filename().string(), is_directory);
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot list the context directory ", dir.string(), ": ", ec.message()));
  }
  std::sort(children.begin(), children.end());
  for (const auto& [name, is_directory] : children) {
    const std::string path = prefix.empty() ? name : absl::StrCat(prefix, "/", name);
    if (filter.Excludes(path, is_directory)) continue;
    out->push_back(path);
    if (is_directory) {
      if (absl::Status s = Walk(dir / name, path, filter, out); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

ContextFilter ContextFilter::Parse(absl::string_view detignore) {
  ContextFilter filter;
  for (absl::string_view line : absl::StrSplit(detignore, '\n')) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    if (line.empty() || line.front() == '#') continue;
    Pattern pattern;
    pattern.include = absl::ConsumePrefix(&line, "!");
    pattern.directories_only = absl::ConsumeSuffix(&line, "/");
    pattern.anchored = absl::StrContains(line, '/');
    for (absl::string_view c : Components(line)) pattern.components.emplace_back(c);
    if (pattern.components.empty()) continue;  // "/" or "!": nothing to match
    filter.patterns_.push_back(std::move(pattern));
  }
  return filter;
}

bool ContextFilter::Matches(const Pattern& pattern,
                            const std::vector<absl::string_view>& components, bool is_directory) {
  if (pattern.directories_only && !is_directory) return false;
  if (!pattern.anchored) return Glob(pattern.components.front(), components.back());
  return MatchComponents(pattern.components, 0, components, 0);
}

bool ContextFilter::ExcludesItself(const std::vector<absl::string_view>& components,
                                   bool is_directory) const {
  bool excluded = false;
  for (const Pattern& pattern : patterns_) {
    if (Matches(pattern, components, is_directory)) excluded = !pattern.include;
  }
  return excluded;
}

bool ContextFilter::Excludes(absl::string_view path, bool is_directory) const {
  std::vector<absl::string_view> components = Components(path);
  if (components.empty() || path == kDetignoreFile) return false;
  std::vector<absl::string_view> parent;
  for (size_t i = 0; i + 1 < components.size(); ++i) {
    parent.push_back(components[i]);
    if (ExcludesItself(parent, /*is_directory=*/true)) return true;
  }
  return ExcludesItself(components, is_directory);
}

absl::StatusOr<std::vector<std::string>> ContextEntries(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("context directory ", dir, " does not exist"));
  }
  absl::StatusOr<std::string> detignore = ReadDetignore(fs::path(dir) / kDetignoreFile);
  if (!detignore.ok()) return detignore.status();
  std::vector<std::string> entries;
  if (absl::Status s = Walk(dir, "", ContextFilter::Parse(*detignore), &entries); !s.ok()) {
    return s;
  }
  return entries;
}

}  // namespace cohort::cli
