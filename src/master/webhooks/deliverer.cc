#include "master/webhooks/deliverer.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "master/webhooks/signing.h"
#include "master/webhooks/target.h"

namespace cohort::master::webhooks {
namespace {

constexpr int kPerPass = 16;

size_t Discard(char*, size_t size, size_t count, void*) { return size * count; }

int AbortWhenStopping(void* stopping, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(stopping)->load() ? 1 : 0;
}

using Easy = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using Headers = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;
using Pins = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

Headers HeadersFor(const WebhookRow& webhook, const DeliveryRow& delivery, int64_t now_seconds) {
  curl_slist* h = nullptr;
  h = curl_slist_append(h, "Content-Type: application/json");
  h = curl_slist_append(h, "User-Agent: cohort-webhooks");
  h = curl_slist_append(h, absl::StrCat("X-Cohort-Delivery: ", delivery.id).c_str());
  h = curl_slist_append(h, absl::StrCat("X-Cohort-Event: ", delivery.event).c_str());
  h = curl_slist_append(
      h, absl::StrCat("X-Cohort-Signature: ", Signature(webhook.secret, now_seconds, delivery.body))
             .c_str());
  h = curl_slist_append(h, "Expect:");  // no 100-continue round trip
  return Headers(h, curl_slist_free_all);
}

}  // namespace

Deliverer::Deliverer(Database& db, const Clock& clock, DeliveryPolicy policy,
                     std::function<absl::StatusOr<WebhookRow>(int64_t)> find)
    : db_(db), clock_(clock), policy_(policy), find_(std::move(find)) {}

Deliverer::~Deliverer() { Stop(); }

void Deliverer::Start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Deliverer::Stop() {
  stopping_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
}

void Deliverer::Wake() {
  MutexLock lock(&mu_);
  woken_ = true;
  wake_.SignalAll();
}

void Deliverer::Run() {
  while (!stopping_) {
    // A full pass may have left more due: look again at once.
    if (Pass() >= kPerPass) continue;
    MutexLock lock(&mu_);
    const absl::Time deadline = absl::Now() + policy_.poll;
    while (!woken_ && !stopping_) {
      if (wake_.WaitWithDeadline(&mu_, deadline)) break;
    }
    woken_ = false;
  }
}

int Deliverer::Pass() {
  absl::StatusOr<std::vector<DeliveryRow>> due =
      db_.ListDueDeliveries(absl::ToUnixMillis(clock_.Now()), kPerPass);
  if (!due.ok()) {
    COHORT_LOG(WARNING) << "webhooks: reading the delivery queue: " << due.status();
    return 0;
  }
  for (DeliveryRow& d : *due) {
    if (stopping_) break;
    absl::StatusOr<WebhookRow> webhook = find_(d.webhook_id);
    if (!webhook.ok()) continue;  // deleted meanwhile: its rows went with it
    const absl::Status outcome = Send(*webhook, d);
    Record(std::move(d), outcome);
  }
  return static_cast<int>(due->size());
}

absl::Status Deliverer::Send(const WebhookRow& webhook, const DeliveryRow& delivery) {
  absl::StatusOr<Target> target = ResolveTarget(webhook.url, webhook.allow_local);
  if (!target.ok()) return target.status();
  Easy curl(curl_easy_init(), curl_easy_cleanup);
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  Headers headers = HeadersFor(webhook, delivery, absl::ToUnixSeconds(clock_.Now()));
  Pins pins(target->pin.empty() ? nullptr : curl_slist_append(nullptr, target->pin.c_str()),
            curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, target->url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect could lead anywhere
  if (pins != nullptr) curl_easy_setopt(c, CURLOPT_RESOLVE, pins.get());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, delivery.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(delivery.body.size()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(policy_.attempt_timeout)));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Discard);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, AbortWhenStopping);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &stopping_);
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) return absl::UnavailableError(curl_easy_strerror(rc));
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code > 299) return absl::UnavailableError(absl::StrCat("HTTP ", code));
  return absl::OkStatus();
}

void Deliverer::Record(DeliveryRow d, const absl::Status& outcome) {
  const absl::Time now = clock_.Now();
  ++d.attempts;
  if (outcome.ok()) {
    d.state = "DELIVERED";
    d.last_error.clear();
    d.finished_ms = absl::ToUnixMillis(now);
  } else {
    d.last_error = std::string(outcome.message()).substr(0, 1024);
    const absl::Duration backoff =
        std::min(policy_.max_retry,
                 policy_.first_retry * (int64_t{1} << std::min<int64_t>(d.attempts - 1, 20)));
    if (now + backoff - absl::FromUnixMillis(d.created_ms) > policy_.give_up_after) {
      d.state = "FAILED";
      d.finished_ms = absl::ToUnixMillis(now);
      COHORT_LOG(WARNING) << "webhooks: delivery " << d.id << " to webhook " << d.webhook_id
                          << " failed after " << d.attempts << " attempts: " << d.last_error;
    } else {
      d.next_attempt_ms = absl::ToUnixMillis(now + backoff);
    }
  }
  if (absl::Status s = db_.UpdateDelivery(d); !s.ok() && !absl::IsNotFound(s)) {
    COHORT_LOG(WARNING) << "webhooks: recording delivery " << d.id << ": " << s
                        << " (it is sent again)";
  }
}

}  // namespace cohort::master::webhooks
