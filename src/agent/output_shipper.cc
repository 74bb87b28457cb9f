#include "agent/output_shipper.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/retry.h"
#include "common/logging.h"

namespace cohort::agent {

OutputShipper::OutputShipper(OutputShipperOptions options)
    : options_(std::move(options)),
      path_(absl::StrCat("/api/v1/agents/", options_.agent_id, "/outputs")),
      client_(options_.master_url, options_.timeout) {
  client_.set_bearer_token(options_.secret);
  client_.set_tls_ca_file(options_.tls_ca_file);
}

void OutputShipper::Abort() { client_.Abort(); }

bool OutputShipper::supported() const {
  MutexLock lock(&mu_);
  return supported_;
}

int64_t OutputShipper::posts() const {
  MutexLock lock(&mu_);
  return posts_;
}

size_t OutputShipper::queued() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

absl::Status OutputShipper::Ship(wire::AllocationOutput item, size_t bytes) {
  Pending mine{std::move(item), bytes, std::nullopt};
  MutexLock lock(&mu_);
  if (!supported_) return absl::UnimplementedError("the master has no combined output route");
  queue_.push_back(&mine);
  while (!mine.answer) {
    if (posting_) {
      // Another caller's post is on its way: ours goes with the next, or is in this one. The
      // wait ends with that post, which its client's timeout bounds.
      answered_.Wait(&mu_);
      continue;
    }
    posting_ = true;
    const std::vector<Pending*> batch = TakeBatchLocked();
    mu_.Unlock();
    std::vector<absl::Status> answers = PostNoThrow(batch);
    mu_.Lock();
    for (size_t i = 0; i < batch.size(); ++i) batch[i]->answer = std::move(answers[i]);
    posting_ = false;
    ++posts_;
    answered_.SignalAll();
  }
  return *mine.answer;
}

std::vector<OutputShipper::Pending*> OutputShipper::TakeBatchLocked() {
  std::vector<Pending*> batch;
  size_t bytes = 0;
  while (!queue_.empty() && batch.size() < wire::kMaxOutputItems) {
    Pending* next = queue_.front();
    if (!batch.empty() && bytes + next->bytes > kMaxPostBytes) break;
    bytes += next->bytes;
    batch.push_back(next);
    queue_.pop_front();
  }
  return batch;
}

std::vector<absl::Status> OutputShipper::PostNoThrow(const std::vector<Pending*>& batch) {
  // An exception here would leave posting_ set and every other run waiting for good.
  try {
    return Post(batch);
  } catch (const std::exception& e) {
    return std::vector<absl::Status>(
        batch.size(), absl::InternalError(absl::StrCat("posting the agent's output: ", e.what())));
  }
}

std::vector<absl::Status> OutputShipper::Post(const std::vector<Pending*>& batch) {
  wire::OutputBatch body;
  body.items.reserve(batch.size());
  for (const Pending* p : batch) body.items.push_back(p->item);
  client_.set_timeout(RequestTimeout(options_.timeout, options_.stop));
  absl::StatusOr<nlohmann::json> r = client_.Post(path_, body.ToJson());
  absl::StatusOr<wire::OutputResults> results =
      r.ok() ? wire::ParseOutputResults(*r) : absl::StatusOr<wire::OutputResults>(r.status());
  if (results.ok() && results->results.size() != batch.size()) {
    results = absl::InternalError(absl::StrCat("the master answered ", results->results.size(),
                                               " of the ", batch.size(), " items posted"));
  }
  if (!results.ok()) {
    absl::Status whole = results.status();
    if (absl::IsNotFound(whole)) {
      // No such route: a master older than this agent. Each run posts on its own from now on.
      COHORT_LOG(WARNING) << "agent " << options_.agent_id << ": the master has no " << path_
                          << " (" << whole.message()
                          << "); each allocation posts its own output instead";
      MutexLock lock(&mu_);
      supported_ = false;
      whole = absl::UnimplementedError(whole.message());
    }
    return std::vector<absl::Status>(batch.size(), whole);
  }
  std::vector<absl::Status> answers;
  answers.reserve(batch.size());
  for (const wire::OutputResult& result : results->results) {
    const std::string message =
        result.part.empty() ? result.error : absl::StrCat(result.part, ": ", result.error);
    answers.push_back(client::AnswerStatus(options_.master_url, result.code, message));
  }
  return answers;
}

}  // namespace cohort::agent
