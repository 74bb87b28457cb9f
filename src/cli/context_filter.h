#pragma once
// Which files of an experiment's context directory `cohort experiment create` uploads to the
// master: everything but what the directory's `.detignore` leaves out (Determined's file name,
// gitignore's syntax, one pattern per line; below, the text after each pattern explains it,
// a pattern line has no trailing comment):
//
//   # a comment; blank lines are skipped, trailing blanks too
//   *.ckpt       a pattern without '/' matches a base name at any depth
//   data/raw     a pattern with '/' matches the path from the context directory (a leading '/'
//                anchors the same way: /notes.txt is the top-level notes.txt only)
//   build/       a trailing '/' matches directories only (and so everything inside them)
//   **/cache     '**' as a whole component matches any number of directories: logs/**,
//   a/**/b       **/cache
//   !keep.ckpt   '!' includes again what an earlier pattern left out; the last matching
//                pattern decides, and nothing inside a left-out directory comes back
//
// '*', '?' and '[...]' match within one path component (fnmatch(3) without FNM_PATHNAME or
// FNM_PERIOD: '*' matches dot files too). "\#" and "\!" begin a pattern with a literal '#' or
// '!'. The top-level `.detignore` itself is always uploaded.
// Thread-compatible value type; Excludes is const and pure.
//
// Example:
//   ContextFilter filter = ContextFilter::Parse("*.ckpt\nbuild/\n!best.ckpt\n");
//   filter.Excludes("runs/a.ckpt", false);   // true
//   filter.Excludes("best.ckpt", false);     // false
//   filter.Excludes("build/x.o", false);     // true: inside build/

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::cli {

// The name of the pattern file in a context directory.
inline constexpr char kDetignoreFile[] = ".detignore";

class ContextFilter {
 public:
  // The patterns of a `.detignore` file's text. Every line is a pattern (none is invalid: an
  // unmatched '[' matches itself); comments and blank lines are skipped.
  static ContextFilter Parse(absl::string_view detignore);

  // Whether `path` is left out: it, or a directory it is inside, is matched last by a pattern
  // without '!'. `path` is relative to the context directory, '/'-separated, without a leading
  // "./"; `is_directory` says whether it names a directory.
  bool Excludes(absl::string_view path, bool is_directory) const;

  // The number of patterns (comments and blank lines not counted).
  size_t size() const { return patterns_.size(); }

 private:
  struct Pattern {
    std::vector<std::string> components;  // anchored: the path's; else the one base-name glob
    bool anchored = false;                // it had a '/' before its end
    bool directories_only = false;        // it ended with '/'
    bool include = false;                 // it began with '!'
  };

  static bool Matches(const Pattern& pattern, const std::vector<absl::string_view>& components,
                      bool is_directory);
  // Whether `path` itself (its parents aside) is left out.
  bool ExcludesItself(const std::vector<absl::string_view>& components, bool is_directory) const;

  std::vector<Pattern> patterns_;
};

// The entries of context directory `dir` to upload: the paths of its files, directories and
// symbolic links (listed, never followed) relative to `dir`, '/'-separated, each directory before
// what it holds, siblings in byte order, without those `dir/.detignore` leaves out (read when
// present; the directories it leaves out are not walked). Errors: `dir` is not a directory
// (InvalidArgument), or it, one of its directories or its .detignore cannot be read, each naming
// the path.
absl::StatusOr<std::vector<std::string>> ContextEntries(const std::string& dir);

}  // namespace cohort::cli
