#pragma once
// DistributedContext: who this worker is in its trial and the object collectives of the Core
// API (Determined's core.DistributedContext). Values travel as JSON (CBOR on the wire), so any
// type nlohmann::json can convert (numbers, strings, std::vector, std::map, structs with
// to_json/from_json) can be gathered or broadcast.
//
// Every collective must be called by every worker of the trial (the *Local variants: by every
// worker on this machine) in the same order. Failures (a dead or stalled peer, a value that
// does not convert) come back as a Status naming the rank; nothing hangs past the
// communicator's deadline. Thread-compatible: one thread at a time.
//
// Example, Determined's "distributed increment":
//   COHORT_ASSIGN_OR_RETURN(std::vector<int> all, dist.Allgather(x));
//   int sum = std::accumulate(all.begin(), all.end(), 0);
//   if (dist.is_chief()) { /* report sum */ }

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cohort/comm/communicator.h"
#include "nlohmann/json.hpp"

namespace cohort::comm {
class Rendezvous;  // internal to Cohort; core::Init forms it
}  // namespace cohort::comm

namespace cohort::core {

class ProgressBeacon;  // internal to Cohort: this worker's progress beats for its agent

class DistributedContext {
 public:
  // `world` spans every worker of the trial. `rendezvous` (may be null for a single worker)
  // lets the context form the per-machine group the first time a *Local collective is called.
  // `beacon` (may be null) is told of every collective, for the agent (core::Init sets it).
  DistributedContext(std::shared_ptr<comm::Communicator> world,
                     std::shared_ptr<comm::Rendezvous> rendezvous,
                     std::shared_ptr<ProgressBeacon> beacon = nullptr);

  int rank() const { return world_->rank(); }
  int size() const { return world_->size(); }
  int local_rank() const { return world_->topology().local_rank; }
  int local_size() const { return world_->topology().local_size; }
  int cross_rank() const { return world_->topology().cross_rank; }
  int cross_size() const { return world_->topology().cross_size; }
  bool is_chief() const { return rank() == 0; }
  bool is_local_chief() const { return local_rank() == 0; }

  // Every worker gets every worker's value, indexed by rank.
  absl::StatusOr<std::vector<nlohmann::json>> AllgatherJson(const nlohmann::json& value);
  // The chief gets every worker's value, indexed by rank; the others get an empty vector.
  absl::StatusOr<std::vector<nlohmann::json>> GatherJson(const nlohmann::json& value);
  // Every worker gets the chief's value (the others' `value` is ignored).
  absl::StatusOr<nlohmann::json> BroadcastJson(const nlohmann::json& value);
  // The same within this machine: indexed by local rank, rooted at the local chief.
  absl::StatusOr<std::vector<nlohmann::json>> AllgatherLocalJson(const nlohmann::json& value);
  absl::StatusOr<std::vector<nlohmann::json>> GatherLocalJson(const nlohmann::json& value);
  absl::StatusOr<nlohmann::json> BroadcastLocalJson(const nlohmann::json& value);

  template <typename T>
  absl::StatusOr<std::vector<T>> Allgather(const T& value) {
    return Convert<T>(AllgatherJson(nlohmann::json(value)));
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> Gather(const T& value) {
    return Convert<T>(GatherJson(nlohmann::json(value)));
  }
  template <typename T>
  absl::StatusOr<T> Broadcast(const T& value) {
    return ConvertOne<T>(BroadcastJson(nlohmann::json(value)));
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> AllgatherLocal(const T& value) {
    return Convert<T>(AllgatherLocalJson(nlohmann::json(value)));
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> GatherLocal(const T& value) {
    return Convert<T>(GatherLocalJson(nlohmann::json(value)));
  }
  template <typename T>
  absl::StatusOr<T> BroadcastLocal(const T& value) {
    return ConvertOne<T>(BroadcastLocalJson(nlohmann::json(value)));
  }

  // The trial's communicator, for raw-buffer collectives in host memory (gradients and
  // tensors on the CPU).
  comm::Communicator& communicator() { return *world_; }

  // The job's communicator for GPU memory (NCCL: every rank's buffers on its own GPU), formed
  // over the trial's rendezvous the first time it is asked for; for gradients and model
  // weights on the device (the world communicator above carries host memory). Every rank must
  // ask. FailedPrecondition in a CPU-only build (naming -DCOHORT_CUDA=ON) or without the
  // trial's rendezvous; Unavailable when CUDA or NCCL fail.
  absl::StatusOr<comm::Communicator*> DeviceCommunicator();

 private:
  // The per-machine communicator: the world itself on a single machine, else formed once.
  absl::StatusOr<comm::Communicator*> Local();

  template <typename T>
  absl::StatusOr<T> ConvertOne(absl::StatusOr<nlohmann::json> json) {
    if (!json.ok()) return json.status();
    try {
      return json->template get<T>();
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank(), ": a collective's value ", json->dump().substr(0, 200),
          " does not convert to the requested type: ", e.what()));
    }
  }
  template <typename T>
  absl::StatusOr<std::vector<T>> Convert(absl::StatusOr<std::vector<nlohmann::json>> values) {
    if (!values.ok()) return values.status();
    std::vector<T> out;
    out.reserve(values->size());
    for (const nlohmann::json& v : *values) {
      absl::StatusOr<T> one = ConvertOne<T>(v);
      if (!one.ok()) return one.status();
      out.push_back(*std::move(one));
    }
    return out;
  }

  std::shared_ptr<comm::Communicator> world_;
  std::shared_ptr<comm::Rendezvous> rendezvous_;
  std::shared_ptr<ProgressBeacon> beacon_;
  std::unique_ptr<comm::Communicator> local_;
  std::unique_ptr<comm::Communicator> device_;
};

}  // namespace cohort::core
