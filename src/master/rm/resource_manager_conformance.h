#pragma once
// The ResourceManager contract (resource_manager.h) as one suite of tests that runs unchanged
// against every implementation: the agents' today (agents/agent_manager_test.cc), Slurm's
// next. An implementation's test provides a factory of harnesses and instantiates the suite:
//
//   INSTANTIATE_TEST_SUITE_P(Agents, ResourceManagerConformance,
//                            ::testing::Values(&MakeAgentHarness));
//
// A harness owns a fresh manager (reporting to the harness's RecordingEvents) and whatever its
// nodes need (in-process agents and a clock; a slurmctld and its nodes), and drives the nodes
// as the real ones would: join with slots, show what reached them, go silent, leave.
// Test-only.

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "gtest/gtest.h"
#include "master/rm/resource_manager.h"
#include "wire/agent_protocol.h"

namespace cohort::master::rm {

// Events as the master would get them, recorded; NodeLeaving answers `still_running`.
class RecordingEvents : public Events {
 public:
  struct Joined {
    std::string where;
    std::vector<wire::RunningAllocation> claims;
  };
  void NodeJoined(const std::string& where, const std::vector<wire::RunningAllocation>& claims,
                  const std::vector<std::string>& running) override ABSL_LOCKS_EXCLUDED(mu_);
  bool NodeLeaving(const std::string& where) override ABSL_LOCKS_EXCLUDED(mu_);
  void OffersChanged() override ABSL_LOCKS_EXCLUDED(mu_);

  std::vector<Joined> joined() const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::string> leaving() const ABSL_LOCKS_EXCLUDED(mu_);
  int offers_changed() const ABSL_LOCKS_EXCLUDED(mu_);
  void set_still_running(bool running) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable Mutex mu_;
  std::vector<Joined> joined_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> leaving_ ABSL_GUARDED_BY(mu_);
  int offers_changed_ ABSL_GUARDED_BY(mu_) = 0;
  bool still_running_ ABSL_GUARDED_BY(mu_) = false;
};

class ResourceManagerHarness {
 public:
  virtual ~ResourceManagerHarness() = default;
  virtual ResourceManager& manager() = 0;
  RecordingEvents& events() { return events_; }
  // Node `name` comes up with `slots` slots (or again, after a restart of its own or of the
  // master), saying it runs `claims`.
  virtual absl::Status Join(const std::string& name, int slots,
                            const std::vector<wire::RunningAllocation>& claims) = 0;
  // What reached node `name` since the last call, waiting up to `wait` for something.
  virtual absl::StatusOr<std::vector<wire::Action>> Received(const std::string& name,
                                                             absl::Duration wait) = 0;
  // Node `name` stops answering, for long enough that ExpireLost must report it.
  virtual void Silence(const std::string& name) = 0;
  // Node `name` says it is going away (true: it is gone).
  virtual absl::StatusOr<bool> Leave(const std::string& name) = 0;

 private:
  RecordingEvents events_;
};

using HarnessFactory = std::unique_ptr<ResourceManagerHarness> (*)();

class ResourceManagerConformance : public ::testing::TestWithParam<HarnessFactory> {
 protected:
  void SetUp() override {
    harness_ = GetParam()();
    ASSERT_NE(harness_, nullptr);
  }
  ResourceManager& rm() { return harness_->manager(); }

  std::unique_ptr<ResourceManagerHarness> harness_;
};

}  // namespace cohort::master::rm
