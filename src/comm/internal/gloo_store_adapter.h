#pragma once
// GlooStoreAdapter: a gloo::rendezvous::Store over our Store, so that Gloo's connectFullMesh
// exchanges pair addresses through the job's rendezvous store. Gloo reports errors by
// throwing; the adapter throws GlooStoreError, which carries the Store's absl::Status so the
// caller that catches it (GlooCommunicator::Create) can return the original error.
//
// Every blocking call honours a deadline (the timeout Gloo passes, or the adapter's default)
// and gives up early, in slices of `poll` at most, once `interrupted()` returns an error (a
// peer died while we were still connecting).
//
// Thread-safety: as thread-safe as the underlying Store (ours are thread-safe).

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "comm/store.h"
#include "gloo/rendezvous/store.h"

namespace cohort::comm::internal {

// Thrown by GlooStoreAdapter; what() is status().ToString().
class GlooStoreError : public std::runtime_error {
 public:
  explicit GlooStoreError(absl::Status status)
      : std::runtime_error(status.ToString()), status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  struct Options {
    // Deadline of get() and of wait() without a timeout.
    absl::Duration timeout = absl::Seconds(120);
    // Returns non-OK to abandon a wait (checked at least every `poll`); may be empty.
    std::function<absl::Status()> interrupted;
    absl::Duration poll = absl::Milliseconds(250);
  };

  GlooStoreAdapter(std::shared_ptr<comm::Store> store, Options options);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to Options::timeout for the key to appear.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  // A timeout of zero or less (Gloo's kNoTimeout is 0) means Options::timeout.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  // Waits for `keys` until `deadline`, polling `interrupted`; throws GlooStoreError on failure.
  void WaitUntil(const std::vector<std::string>& keys, absl::Time deadline);

  std::shared_ptr<comm::Store> store_;
  Options options_;
};

}  // namespace cohort::comm::internal
