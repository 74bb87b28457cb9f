#include "comm/rendezvous.h"

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"

namespace cohort::comm {

absl::StatusOr<std::shared_ptr<Rendezvous>> Rendezvous::Join(const Topology& topology) {
  std::shared_ptr<Rendezvous> r(new Rendezvous());
  r->topology_ = topology;
  net::HostPort address{topology.chief_addr, topology.rendezvous_port};
  if (topology.size == 1 && topology.rendezvous_port == 0) {
    // Alone: host a private store on loopback so every code path is the same.
    COHORT_ASSIGN_OR_RETURN(r->server_, TcpStoreServer::Start("127.0.0.1", 0));
    address = {"127.0.0.1", r->server_->port()};
  } else if (topology.host_store) {
    auto server = TcpStoreServer::Start("", topology.rendezvous_port);
    if (!server.ok()) {
      return Annotate(server.status(),
                      absl::StrCat("rank 0 could not host the rendezvous store on port ",
                                   topology.rendezvous_port,
                                   " (is another job using it? pick another port)"));
    }
    r->server_ = std::move(server).value();
  }
  TcpStore::Options options;
  options.rank = topology.rank;
  options.connect_timeout = topology.rendezvous_timeout;
  auto store = TcpStore::Connect(address, options);
  if (!store.ok()) {
    return Annotate(store.status(), absl::StrCat("rank ", topology.rank, " joining the job"));
  }
  r->store_ = std::move(store).value();
  std::weak_ptr<Rendezvous> weak = r;
  COHORT_ASSIGN_OR_RETURN(
      r->watcher_, FailureWatcher::Start(address, kFailureKey, [weak](const std::string& notice) {
        if (auto self = weak.lock()) self->ReportFailure(notice);
      }));
  return r;
}

Rendezvous::~Rendezvous() {
  watcher_.reset();  // stop watching before the store goes away
  store_.reset();
}

absl::Status Rendezvous::failure() const {
  if (!failed_.load(std::memory_order_acquire)) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return absl::UnavailableError(failure_notice_);
}

void Rendezvous::ReportFailure(const std::string& notice) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.load()) return;
    failure_notice_ = notice;
    failed_.store(true, std::memory_order_release);
    callbacks = callbacks_;
  }
  for (auto& cb : callbacks) cb();
}

void Rendezvous::OnFailure(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.load()) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

std::shared_ptr<Store> Group::store() const {
  return std::make_shared<PrefixStore>(prefix, rendezvous->store());
}

std::string Group::Name(int group_rank) const {
  if (group_rank >= 0 && group_rank < static_cast<int>(global_ranks.size())) {
    return absl::StrCat("rank ", global_ranks[group_rank]);
  }
  return absl::StrCat("rank ", group_rank);
}

}  // namespace cohort::comm
