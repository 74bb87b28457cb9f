#pragma once
// GpuPool: the GPUs an agent offers as slots (one GPU per slot) and which allocation holds
// each. The master counts slots, not GPUs; the agent gives each allocation it starts that many
// free GPUs, which its launcher turns into one CUDA_VISIBLE_DEVICES per worker
// (cohort-launch --gpus), and takes them back when the allocation ends.
// An empty pool is an agent with CPU slots: Take gives no GPUs and never fails.
// Thread-safe.
//
// Example:
//   GpuPool pool({0, 1, 2, 3});
//   COHORT_ASSIGN_OR_RETURN(std::vector<int> gpus, pool.Take("alloc-7", 2));  // {0, 1}
//   ...
//   pool.Release("alloc-7");

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"

namespace cohort::agent {

class GpuPool {
 public:
  explicit GpuPool(std::vector<int> gpus);

  // True for an agent with CPU slots.
  bool empty() const { return gpus_.empty(); }

  // Takes `count` free GPUs for `allocation`, lowest ids first (an allocation that already
  // holds GPUs gets the same ones back). With an empty pool: no GPUs. ResourceExhausted naming
  // the allocation and the free GPUs when fewer than `count` are free (the master placed more
  // slots than the agent has idle).
  absl::StatusOr<std::vector<int>> Take(const std::string& allocation, int count)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Returns the GPUs `allocation` holds to the pool; nothing when it holds none.
  void Release(const std::string& allocation) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::vector<int> gpus_;  // ascending
  Mutex mu_;
  std::map<std::string, std::vector<int>> held_ ABSL_GUARDED_BY(mu_);  // by allocation
};

}  // namespace cohort::agent
