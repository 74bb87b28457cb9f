#pragma once
// The master's resource pools (docs/design/0020-sharing-a-cluster.md): named groups of agents,
// each scheduled on its own by its own policy. Read from `cohort-master --resource-pools FILE`,
// Determined's master-config shape:
//
//   resource_pools:
//     - pool_name: default
//       description: the CPU machines
//       scheduler:
//         type: priority        # or fair_share
//         preemption: true      # default false
//     - pool_name: big
//       scheduler: {type: fair_share}
//
// The pool `default` always exists (priority, no preemption, unless the file says otherwise):
// agents without --resource-pool and experiments without resources.resource_pool go there.
// Thread-compatible value types; the functions are thread-safe.

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "master/scheduler/scheduler.h"

namespace cohort::master {

struct ResourcePool {
  std::string description;
  PoolSpec spec;
};
using ResourcePools = std::map<std::string, ResourcePool>;

// Just the default pool.
ResourcePools DefaultResourcePools();
// The pools of a --resource-pools file's text (`source` names it in errors, with the field:
// "pools.yaml: resource_pools[1].scheduler.type: must be priority or fair_share, got 'fifo'").
absl::StatusOr<ResourcePools> ParseResourcePools(const std::string& yaml, const std::string& source);
std::set<std::string> PoolNames(const ResourcePools& pools);

}  // namespace cohort::master
