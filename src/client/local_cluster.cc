#include "client/local_cluster.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"

namespace cohort::client {

std::string LocalClusterDir() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return (fs::path(xdg) / "cohort").string();
  }
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr ? home : "/tmp") / ".local" / "share" / "cohort").string();
}

std::optional<std::string> LocalClusterUrl() {
  std::ifstream in(std::filesystem::path(LocalClusterDir()) / "cluster.json");
  if (!in) return std::nullopt;
  // cluster.json is written by `cohort cluster up` itself, so its nesting is not bounded.
  nlohmann::json cluster = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!cluster.is_object() || !cluster.contains("url") || !cluster["url"].is_string()) {
    return std::nullopt;
  }
  return cluster["url"].get<std::string>();
}

}  // namespace cohort::client
