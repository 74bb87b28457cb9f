// scheduler_bench: one scheduling pass (Schedule(ScheduleInput), the pure function the master
// runs off its lock) at the size issue 39 names: 200 agents x 8 slots, 10,000 queued trials of
// 100 experiments, 1,600 running. Policies side by side: the priority scheduler without and
// with preemption (an urgent experiment whose trials need the slots of lower-priority ones),
// fair share, and two pools. Google Benchmark.
//
//   build/bench/scheduler_bench

#include <benchmark/benchmark.h>

#include <string>

#include "master/scheduler/scheduler.h"

namespace cohort::master {
namespace {

constexpr int kAgents = 200;
constexpr int kSlots = 8;
constexpr int kQueued = 10000;
constexpr int kExperiments = 100;

// Every slot busy with 1-slot trials (priority 50); 10,000 more queued (priority 42, or 10
// for the first experiment: urgent). `pools`: agents and experiments alternate between two.
ScheduleInput Cluster(PoolPolicy policy, bool preemption, int pools) {
  ScheduleInput in;
  int64_t seq = 0;
  for (int a = 0; a < kAgents; ++a) {
    AgentState agent{"agent-" + std::to_string(a), kSlots, kSlots, true};
    agent.pool = "pool-" + std::to_string(a % pools);
    in.agents.push_back(agent);
    for (int s = 0; s < kSlots; ++s) {
      RunningTask t;
      t.id = "r" + std::to_string(a * kSlots + s);
      t.experiment_id = 1000 + (a * kSlots + s) % kExperiments;
      t.pool = agent.pool;
      t.priority = 50;
      t.sequence = ++seq;
      t.agents = {{agent.id, 1}};
      in.running.push_back(t);
    }
  }
  for (int i = 0; i < kQueued; ++i) {
    const int64_t e = i % kExperiments;
    TaskRequest t{"q" + std::to_string(i), 1, e == 0 ? 10 : 42, ++seq};
    t.experiment_id = e;
    t.pool = "pool-" + std::to_string(e % pools);
    in.queue.push_back(t);
  }
  for (int p = 0; p < pools; ++p) in.pools["pool-" + std::to_string(p)] = {policy, preemption};
  return in;
}

void Run(benchmark::State& state, const ScheduleInput& in) {
  size_t preempted = 0;
  for (auto _ : state) {
    ScheduleResult r = Schedule(in);
    preempted = r.preemptions.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["preemptions"] = static_cast<double>(preempted);
}

void BM_Priority(benchmark::State& state) { Run(state, Cluster(PoolPolicy::kPriority, false, 1)); }
void BM_PriorityPreemption(benchmark::State& state) {
  Run(state, Cluster(PoolPolicy::kPriority, true, 1));
}
void BM_FairShare(benchmark::State& state) { Run(state, Cluster(PoolPolicy::kFairShare, true, 1)); }
void BM_TwoPools(benchmark::State& state) { Run(state, Cluster(PoolPolicy::kPriority, true, 2)); }

BENCHMARK(BM_Priority)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PriorityPreemption)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FairShare)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TwoPools)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cohort::master

BENCHMARK_MAIN();
