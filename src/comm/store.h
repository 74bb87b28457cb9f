#pragma once
// Store: the rendezvous key-value store that workers use to find each other (addresses,
// shared-memory segment names, failure notices). Values are byte strings.
// Implementations are thread-safe: one Store may be used from several threads at once.
//
// Example:
//   COHORT_RETURN_IF_ERROR(store.Set("addr/3", my_address));
//   COHORT_ASSIGN_OR_RETURN(std::string peer, store.Get("addr/0", absl::Seconds(30)));

#include <cstdint>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cohort::comm {

class Store {
 public:
  virtual ~Store() = default;

  // Sets `key` to `value`, replacing any earlier value, and wakes waiters on `key`.
  virtual absl::Status Set(absl::string_view key, absl::string_view value) = 0;

  // Returns the value of `key`, waiting up to `timeout` for another client to set it.
  // DeadlineExceeded names the key when it does not appear in time.
  virtual absl::StatusOr<std::string> Get(absl::string_view key, absl::Duration timeout) = 0;

  // Adds `delta` to the integer stored at `key` (absent counts as 0) and returns the new value.
  virtual absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) = 0;

  // Waits until every key exists. DeadlineExceeded lists the keys still missing.
  virtual absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) = 0;

  // Removes `key`; absent keys are not an error.
  virtual absl::Status Delete(absl::string_view key) = 0;
};

// A view of `base` that prefixes every key with `prefix` + "/". Lets several communicators of
// one job share a store without their keys colliding. Does not own `base`.
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);
  absl::Status Set(absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::string> Get(absl::string_view key, absl::Duration timeout) override;
  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta) override;
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override;
  absl::Status Delete(absl::string_view key) override;

 private:
  std::string Key(absl::string_view key) const;
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace cohort::comm
