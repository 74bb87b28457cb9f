#include "cohort/core/distributed_context.h"

#include <cstdint>

#include "cohort/comm/comm_factory.h"
#include "cohort/status.h"
#include "core/progress_beacon.h"

namespace cohort::core {
namespace {

std::string Encode(const nlohmann::json& value) {
  std::vector<uint8_t> bytes = nlohmann::json::to_cbor(value);
  return std::string(bytes.begin(), bytes.end());
}

absl::StatusOr<nlohmann::json> Decode(const std::string& bytes, int from_rank) {
  nlohmann::json value = nlohmann::json::from_cbor(bytes, /*strict=*/true,
                                                   /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::DataLossError(
        absl::StrCat("the value received from rank ", from_rank, " is not valid CBOR"));
  }
  return value;
}

absl::StatusOr<std::vector<nlohmann::json>> DecodeAll(const std::vector<std::string>& parts) {
  std::vector<nlohmann::json> values;
  values.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    COHORT_ASSIGN_OR_RETURN(nlohmann::json v, Decode(parts[i], static_cast<int>(i)));
    values.push_back(std::move(v));
  }
  return values;
}

// Broadcast of a byte string whose length only the root knows: the length first, then the
// bytes.
absl::StatusOr<nlohmann::json> BroadcastValue(comm::Communicator& comm,
                                              const nlohmann::json& value) {
  std::string bytes = comm.rank() == 0 ? Encode(value) : std::string();
  uint64_t length = bytes.size();
  COHORT_RETURN_IF_ERROR(comm.Broadcast(&length, sizeof(length), 0));
  bytes.resize(length);
  if (length > 0) COHORT_RETURN_IF_ERROR(comm.Broadcast(bytes.data(), length, 0));
  if (comm.rank() == 0) return value;
  return Decode(bytes, 0);
}

absl::StatusOr<std::vector<nlohmann::json>> AllgatherValues(comm::Communicator& comm,
                                                            const nlohmann::json& value) {
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> parts, comm.Allgather(Encode(value)));
  return DecodeAll(parts);
}

absl::StatusOr<std::vector<nlohmann::json>> GatherValues(comm::Communicator& comm,
                                                         const nlohmann::json& value) {
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> parts, comm.Gather(Encode(value), 0));
  return DecodeAll(parts);
}

}  // namespace

namespace {

// Tells the beacon (when there is one) that this worker is in collective `name` for as long as
// the object lives.
class CollectiveBeat {
 public:
  CollectiveBeat(ProgressBeacon* beacon, const char* name) : beacon_(beacon), name_(name) {
    if (beacon_ != nullptr) beacon_->EnterCollective(name_);
  }
  ~CollectiveBeat() {
    if (beacon_ != nullptr) beacon_->LeaveCollective(name_);
  }
  CollectiveBeat(const CollectiveBeat&) = delete;
  CollectiveBeat& operator=(const CollectiveBeat&) = delete;

 private:
  ProgressBeacon* beacon_;
  const char* name_;
};

}  // namespace

DistributedContext::DistributedContext(std::shared_ptr<comm::Communicator> world,
                                       std::shared_ptr<comm::Rendezvous> rendezvous,
                                       std::shared_ptr<ProgressBeacon> beacon)
    : world_(std::move(world)), rendezvous_(std::move(rendezvous)), beacon_(std::move(beacon)) {}

absl::StatusOr<comm::Communicator*> DistributedContext::Local() {
  if (cross_size() == 1) return world_.get();
  if (local_ == nullptr) {
    if (rendezvous_ == nullptr) {
      return absl::FailedPreconditionError(
          "the per-machine collectives need the trial's rendezvous, which this context lacks");
    }
    COHORT_ASSIGN_OR_RETURN(local_, comm::CreateLocalCommunicator(rendezvous_, "core-local"));
  }
  return local_.get();
}

absl::StatusOr<comm::Communicator*> DistributedContext::DeviceCommunicator() {
  if (device_ == nullptr) {
    if (rendezvous_ == nullptr) {
      return absl::FailedPreconditionError(
          "the device communicator needs the trial's rendezvous, which this context lacks");
    }
    COHORT_ASSIGN_OR_RETURN(device_, comm::CreateDeviceCommunicator(rendezvous_, "core-device"));
  }
  return device_.get();
}

absl::StatusOr<std::vector<nlohmann::json>> DistributedContext::AllgatherJson(
    const nlohmann::json& value) {
  CollectiveBeat beat(beacon_.get(), "allgather");
  return AllgatherValues(*world_, value);
}

absl::StatusOr<std::vector<nlohmann::json>> DistributedContext::GatherJson(
    const nlohmann::json& value) {
  CollectiveBeat beat(beacon_.get(), "gather");
  return GatherValues(*world_, value);
}

absl::StatusOr<nlohmann::json> DistributedContext::BroadcastJson(const nlohmann::json& value) {
  CollectiveBeat beat(beacon_.get(), "broadcast");
  return BroadcastValue(*world_, value);
}

absl::StatusOr<std::vector<nlohmann::json>> DistributedContext::AllgatherLocalJson(
    const nlohmann::json& value) {
  CollectiveBeat beat(beacon_.get(), "local allgather");
  COHORT_ASSIGN_OR_RETURN(comm::Communicator * local, Local());
  return AllgatherValues(*local, value);
}

absl::StatusOr<std::vector<nlohmann::json>> DistributedContext::GatherLocalJson(
    const nlohmann::json& value) {
  CollectiveBeat beat(beacon_.get(), "local gather");
  COHORT_ASSIGN_OR_RETURN(comm::Communicator * local, Local());
  return GatherValues(*local, value);
}

absl::StatusOr<nlohmann::json> DistributedContext::BroadcastLocalJson(
    const nlohmann::json& value) {
  CollectiveBeat beat(beacon_.get(), "local broadcast");
  COHORT_ASSIGN_OR_RETURN(comm::Communicator * local, Local());
  return BroadcastValue(*local, value);
}

}  // namespace cohort::core
