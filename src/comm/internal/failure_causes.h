#pragma once
// FailureCauses: how the members of a group tell each other why a collective failed, through
// the group's rendezvous store, under a transport's own key prefix ("gloo", "nccl"). One
// definition for every transport that can fail mid-collective:
//  * Publish: the first member to fail leaves its cause for the others (best effort: when the
//    store cannot take it, the others stop waiting after kWait and report what they saw).
//  * Await: a member whose connection broke waits up to kWait for that cause, or for the
//    rendezvous' failure notice (a process that died); OK when none is known.
//  * MissingMembers: after a timeout in collective #n, "; waiting for rank 3 (...)": the members
//    that did not time out in the same collective within kWait (never reached it, or are not
//    responding); or that every member timed out in it.
// Thread-compatible: used by its communicator's thread.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "comm/rendezvous.h"
#include "comm/store.h"

namespace cohort::comm::internal {

class FailureCauses {
 public:
  static constexpr absl::Duration kWait = absl::Seconds(1);
  static constexpr absl::Duration kPoll = absl::Milliseconds(50);

  // `group` must outlive this.
  FailureCauses(const Group& group, std::string prefix);

  void Publish(const absl::Status& status);
  absl::Status Await();
  std::string MissingMembers(int64_t op_number);

 private:
  const Group& group_;
  std::shared_ptr<Store> store_;
  const std::string cause_key_, claim_key_, timeout_prefix_;
};

}  // namespace cohort::comm::internal
