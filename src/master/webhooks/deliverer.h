#pragma once
// webhooks::Deliverer: the thread that sends the queued deliveries (docs/design/0023). It reads
// the due ones (each webhook's oldest PENDING one, so a webhook's deliveries go in order), POSTs
// each with libcurl (the target resolved and checked by target.h, pinned to the address checked;
// no redirects; at most DeliveryPolicy::attempt_timeout), signs it (signing.h) and writes the
// outcome: DELIVERED on a 2xx answer, else the attempt counted and the next one due after a
// doubling back-off, FAILED once give_up_after has passed since the event. The error kept is
// the answer's status or curl's words, never the secret or the body.
// Thread-safe: Start and Stop from the owner; Wake from any thread. Stop aborts an attempt in
// flight (curl's progress callback) and returns in well under a second.

#include <atomic>
#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "master/db/database.h"
#include "master/webhooks/webhooks.h"

namespace cohort::master::webhooks {

class Deliverer {
 public:
  // `find` gives a delivery's webhook (NotFound: deleted).
  Deliverer(Database& db, const Clock& clock, DeliveryPolicy policy,
            std::function<absl::StatusOr<WebhookRow>(int64_t)> find);
  ~Deliverer();  // Stop()

  void Start();
  void Stop();
  void Wake();  // a delivery was queued: read the queue now

 private:
  void Run();
  // One pass over the due deliveries; how many it attempted.
  int Pass();
  // One POST; OK for a 2xx answer.
  absl::Status Send(const WebhookRow& webhook, const DeliveryRow& delivery);
  void Record(DeliveryRow delivery, const absl::Status& outcome);

  Database& db_;
  const Clock& clock_;
  const DeliveryPolicy policy_;
  const std::function<absl::StatusOr<WebhookRow>(int64_t)> find_;
  std::atomic<bool> stopping_{false};
  Mutex mu_;
  CondVar wake_;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace cohort::master::webhooks
