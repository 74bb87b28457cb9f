#include "comm/internal/gloo_store_adapter.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace cohort::comm::internal {

GlooStoreAdapter::GlooStoreAdapter(std::shared_ptr<comm::Store> store, Options options)
    : store_(std::move(store)), options_(std::move(options)) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  absl::Status status = store_->Set(key, absl::string_view(data.data(), data.size()));
  if (!status.ok()) throw GlooStoreError(std::move(status));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  WaitUntil({key}, absl::Now() + options_.timeout);
  absl::StatusOr<std::string> value = store_->Get(key, options_.poll);
  if (!value.ok()) throw GlooStoreError(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) {
  WaitUntil(keys, absl::Now() + options_.timeout);
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  absl::Duration limit = timeout.count() > 0 ? absl::FromChrono(timeout) : options_.timeout;
  WaitUntil(keys, absl::Now() + limit);
}

void GlooStoreAdapter::WaitUntil(const std::vector<std::string>& keys, absl::Time deadline) {
  while (true) {
    if (options_.interrupted) {
      absl::Status stop = options_.interrupted();
      if (!stop.ok()) throw GlooStoreError(std::move(stop));
    }
    absl::Duration slice = std::min(options_.poll, deadline - absl::Now());
    absl::Status status = store_->Wait(keys, std::max(slice, absl::ZeroDuration()));
    if (status.ok()) return;
    if (status.code() != absl::StatusCode::kDeadlineExceeded || absl::Now() >= deadline) {
      throw GlooStoreError(std::move(status));
    }
  }
}

}  // namespace cohort::comm::internal
