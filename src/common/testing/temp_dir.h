#pragma once
// TempDir: a fresh directory for one test (or one suite), removed with everything in it when the
// object goes. Test-only (target cohort_testing_support).
//
//   cohort::testing_support::TempDir dir;         // <::testing::TempDir()>/cohort_test_XXXXXX
//   WriteFile(dir.path() + "/config.yaml", ...);
//   TempDir named("checkpoints");                 // <::testing::TempDir()>/checkpoints_XXXXXX

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "gtest/gtest.h"

namespace cohort::testing_support {

class TempDir {
 public:
  // mkdtemp under ::testing::TempDir() ($TEST_TMPDIR, or /tmp); the name starts with `prefix`.
  // Aborts the test program when the directory cannot be made: nothing could run without it.
  explicit TempDir(std::string_view prefix = "cohort_test") {
    std::string pattern = ::testing::TempDir();
    if (pattern.empty() || pattern.back() != '/') pattern += '/';
    pattern.append(prefix.data(), prefix.size());
    pattern += "_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      const int error = errno;
      fprintf(stderr, "TempDir: mkdtemp %s: %s\n", pattern.c_str(), strerror(error));
      abort();
    }
    path_ = std::move(pattern);
  }

  // Removes the tree: symbolic links are removed, not followed; a directory a test made
  // read-only is made writable first.
  ~TempDir() {
    if (path_.empty()) return;  // moved from
    namespace fs = std::filesystem;
    std::error_code error;
    fs::remove_all(path_, error);
    if (!error) return;
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    std::error_code walk;
    for (fs::recursive_directory_iterator it(path_, walk), end; !walk && it != end;
         it.increment(walk)) {
      if (it->is_directory(ignored) && !it->is_symlink(ignored)) {
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
      }
    }
    fs::remove_all(path_, ignored);
  }

  // Movable (the moved-from object owns nothing), not copyable.
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}
  TempDir& operator=(TempDir&& other) noexcept {
    if (this != &other) {
      TempDir doomed(std::move(*this));
      path_ = std::exchange(other.path_, std::string());
    }
    return *this;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory, absolute when ::testing::TempDir() is, without a trailing slash.
  const std::string& path() const { return path_; }

  // path() + "/" + name.
  std::string Join(std::string_view name) const {
    std::string joined = path_;
    joined += '/';
    joined.append(name.data(), name.size());
    return joined;
  }

 private:
  std::string path_;
};

}  // namespace cohort::testing_support
