#pragma once
// One pool's scheduling pass (internal to src/master/scheduler): the priority and fair-share
// policies, max_slots and preemption, as scheduler.h states them. Schedule(ScheduleInput)
// splits the input by pool and runs one PoolPass per pool into one ScheduleResult.
// Thread-compatible; pure (no I/O, no clock).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "master/scheduler/scheduler.h"

namespace cohort::master::placing {

// One pool's share of a ScheduleInput (pointers into it: the input outlives the pass).
struct PoolInput {
  std::string name;
  PoolSpec spec;
  std::vector<AgentState> agents;
  std::vector<const TaskRequest*> queue;
  std::vector<const RunningTask*> running;
  const std::map<int64_t, ExperimentShare>* experiments = nullptr;
};

// Schedules `pool` into `out` (placements, waiting reasons, its blocker, preemptions).
void RunPoolPass(const PoolInput& pool, ScheduleResult* out);

// Fair shares of `capacity` slots: each experiment's weight over the weights of those still
// wanting more, no experiment above its `demand` (water-filling). Exposed for tests.
std::map<int64_t, double> FairShares(int capacity, const std::map<int64_t, double>& weights,
                                     const std::map<int64_t, int>& demand);

}  // namespace cohort::master::placing
