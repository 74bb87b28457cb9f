#pragma once
// OutputShipper: an agent's allocations' output in one post to the master instead of one per
// allocation and kind (POST /api/v1/agents/{id}/outputs, wire::OutputBatch; docs/design/0014,
// "way 2"). Each allocation run hands in an item (its log lines, its reports or its exit, with
// its allocation's token) and waits for that item's answer. Group commit: a caller that finds
// no post on its way posts everything queued and answers each item in it; items handed in
// meanwhile go together in the next post. There is no timer: an agent with one allocation posts
// as often as before, and the runs of a busy agent, which flush on one grid
// (AllocationRunOptions::flush_phase), share a post or two per flush.
//
// An item's answer is the Status its own post would have had: OK, the master's refusal of the
// first part that failed (its HTTP code mapped as MasterClient maps codes: 404 NotFound, 409
// FailedPrecondition, 400 InvalidArgument...), Unavailable when the post did not reach the
// master or it answered 503 (nothing of the item was stored), Unimplemented when the master has
// no such route (an older master: the run posts to its own routes, and so does every later
// Ship). One post holds at most wire::kMaxOutputItems items and about kMaxPostBytes of JSON; a
// bigger queue goes in several.
// Thread-safe; every wait is bounded by the post's timeout.
//
// Example:
//   OutputShipper shipper({.master_url = url, .agent_id = "a1", .secret = secret});
//   absl::Status s = shipper.Ship(wire::AllocationOutput{.allocation = id, .token = token,
//                                                        .logs = batch}, bytes);

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "client/master_client.h"
#include "common/mutex.h"
#include "wire/agent_protocol.h"

namespace cohort::agent {

struct OutputShipperOptions {
  std::string master_url;
  std::string agent_id;
  std::string secret;                          // the cluster's agent secret: the route's credential
  std::string tls_ca_file;                     // AgentOptions::tls_ca_file
  absl::Duration timeout = absl::Seconds(30);  // per post
  // The agent's shutdown: once notified, a post waits at most retry.h's kStoppingTimeout (what
  // it could not deliver, the runs keep for the agent's next start). Null: never.
  const absl::Notification* stop = nullptr;
};

class OutputShipper {
 public:
  // A post's body stays about this small (far below the master's JSON body limit); an item
  // larger on its own goes alone.
  static constexpr size_t kMaxPostBytes = 8u << 20;

  explicit OutputShipper(OutputShipperOptions options);
  OutputShipper(const OutputShipper&) = delete;
  OutputShipper& operator=(const OutputShipper&) = delete;

  // Posts `item` (about `bytes` of JSON) with what other runs hand in meanwhile and returns its
  // answer (see above).
  absl::Status Ship(wire::AllocationOutput item, size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the post in flight now (its items are answered Unavailable); later posts go as ever.
  // Thread-safe: for the agent's shutdown, whose runs would otherwise wait out a post's
  // timeout behind a partition.
  void Abort();
  // Whether the master took the route so far (false after an Unimplemented answer).
  bool supported() const ABSL_LOCKS_EXCLUDED(mu_);
  // Posts made so far (each with one or more items), and items waiting for the next.
  int64_t posts() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t queued() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A caller's item, on its stack. `item` and `bytes` are read by the caller that posts it, once
  // it has taken it from queue_ (TakeBatchLocked) and until it sets `answer`; `answer` is
  // written and read under mu_ (the analysis cannot name the enclosing object's mu_ here).
  struct Pending {
    wire::AllocationOutput item;
    size_t bytes = 0;
    std::optional<absl::Status> answer;
  };
  // Takes the items of the next post from the front of the queue.
  std::vector<Pending*> TakeBatchLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Posts `batch` (no lock held) and returns one answer per item, in order; PostNoThrow turns
  // an exception (out of memory) into an Internal answer for each.
  std::vector<absl::Status> Post(const std::vector<Pending*>& batch) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<absl::Status> PostNoThrow(const std::vector<Pending*>& batch)
      ABSL_LOCKS_EXCLUDED(mu_);

  const OutputShipperOptions options_;
  const std::string path_;
  // Used by the caller that posts (posting_), one at a time, without mu_; Abort() may come
  // from any thread (MasterClient::Abort is thread-safe).
  client::MasterClient client_;
  mutable Mutex mu_;
  CondVar answered_;  // signalled (all) when a post's items are answered
  std::deque<Pending*> queue_ ABSL_GUARDED_BY(mu_);  // callers' own Pending, outliving their wait
  bool posting_ ABSL_GUARDED_BY(mu_) = false;
  bool supported_ ABSL_GUARDED_BY(mu_) = true;
  int64_t posts_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace cohort::agent
