#include "common/sibling_program.h"

#include <filesystem>

namespace cohort {

std::string SiblingProgram(const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(self.parent_path() / name, ec)) return (self.parent_path() / name).string();
  return name;
}

}  // namespace cohort
