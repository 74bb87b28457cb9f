#include "agent/gpu_pool.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cohort::agent {
namespace {

std::vector<int> Sorted(std::vector<int> gpus) {
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  return gpus;
}

}  // namespace

GpuPool::GpuPool(std::vector<int> gpus) : gpus_(Sorted(std::move(gpus))) {}

absl::StatusOr<std::vector<int>> GpuPool::Take(const std::string& allocation, int count) {
  if (gpus_.empty()) return std::vector<int>();
  MutexLock lock(&mu_);
  if (auto it = held_.find(allocation); it != held_.end()) return it->second;
  std::set<int> busy;
  for (const auto& [id, gpus] : held_) busy.insert(gpus.begin(), gpus.end());
  std::vector<int> taken;
  for (int gpu : gpus_) {
    if (static_cast<int>(taken.size()) == count) break;
    if (!busy.count(gpu)) taken.push_back(gpu);
  }
  if (static_cast<int>(taken.size()) < count) {
    std::vector<int> free_gpus;
    for (int gpu : gpus_) {
      if (!busy.count(gpu)) free_gpus.push_back(gpu);
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "allocation ", allocation, " needs ", count, " GPU slot(s) but only ", free_gpus.size(),
        " of this agent's ", gpus_.size(), " GPUs are free (free: ",
        free_gpus.empty() ? "none" : absl::StrJoin(free_gpus, ","), ")"));
  }
  held_[allocation] = taken;
  return taken;
}

void GpuPool::Release(const std::string& allocation) {
  MutexLock lock(&mu_);
  held_.erase(allocation);
}

}  // namespace cohort::agent
