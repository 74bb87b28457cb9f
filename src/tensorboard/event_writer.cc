#include "tensorboard/event_writer.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cohort/status.h"
#include "common/net.h"
#include "tensorboard/event.pb.h"

namespace cohort::tensorboard {
namespace {

// How many ".<n>" suffixes Open tries when its file name is taken (writers opened in the same
// second by the same process, or a file left by a process with the same pid).
constexpr int kMaxNameAttempts = 100;

double ToEventTime(absl::Time time) { return absl::ToDoubleSeconds(time - absl::UnixEpoch()); }

// TensorBoard's simple_value is a float. Converting a double beyond float's range is undefined
// behavior in C++, so such values are saturated to an infinity of their sign first.
float ToSimpleValue(double value) {
  if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()) {
    constexpr float kInfinity = std::numeric_limits<float>::infinity();
    return value > 0 ? kInfinity : -kInfinity;
  }
  return static_cast<float>(value);
}

// Creates a new events file in `dir` named for `now`, `hostname` and this process.
absl::StatusOr<std::unique_ptr<RecordWriter>> CreateEventsFile(const std::string& dir,
                                                               absl::Time now,
                                                               const std::string& hostname) {
  std::string base = absl::StrFormat("%s/events.out.tfevents.%010d.%s.%d", dir,
                                     absl::ToUnixSeconds(now), hostname, ::getpid());
  for (int n = 0; n < kMaxNameAttempts; ++n) {
    std::string path = n == 0 ? base : absl::StrCat(base, ".", n);
    absl::StatusOr<std::unique_ptr<RecordWriter>> writer = RecordWriter::Create(path);
    if (!absl::IsAlreadyExists(writer.status())) return writer;
  }
  return absl::AlreadyExistsError(absl::StrCat("creating an events file: ", base, " and ",
                                               kMaxNameAttempts - 1, " suffixed names all exist"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventWriter>> EventWriter::Open(const std::string& dir,
                                                               const EventWriterOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::ErrnoToStatus(error.value(), absl::StrCat("creating directory ", dir));
  }
  absl::Time now = options.clock->Now();
  std::string hostname = options.hostname.empty() ? net::Hostname() : options.hostname;
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> records,
                          CreateEventsFile(dir, now, hostname));
  proto::Event version;
  version.set_wall_time(ToEventTime(now));
  version.set_file_version(std::string(kFileVersion));
  COHORT_RETURN_IF_ERROR(records->Write(version.SerializeAsString()));
  return std::unique_ptr<EventWriter>(new EventWriter(std::move(records)));
}

absl::Status EventWriter::WriteScalar(absl::string_view tag, int64_t step, double value,
                                      absl::Time wall_time) {
  return WriteScalars({{std::string(tag), value}}, step, wall_time);
}

absl::Status EventWriter::WriteScalars(const std::map<std::string, double>& scalars, int64_t step,
                                       absl::Time wall_time) {
  if (scalars.empty()) return absl::OkStatus();
  proto::Event event;
  event.set_wall_time(ToEventTime(wall_time));
  event.set_step(step);
  for (const auto& [tag, value] : scalars) {
    if (tag.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("writing to ", path_, ": empty tag"));
    }
    proto::Summary::Value* summary_value = event.mutable_summary()->add_value();
    summary_value->set_tag(tag);
    summary_value->set_simple_value(ToSimpleValue(value));
  }
  std::string serialized = event.SerializeAsString();
  absl::MutexLock lock(&mutex_);
  return records_->Write(serialized);
}

absl::Status EventWriter::Flush() {
  absl::MutexLock lock(&mutex_);
  return records_->Sync();
}

absl::Status EventWriter::Close() {
  absl::MutexLock lock(&mutex_);
  return records_->Close();
}

}  // namespace cohort::tensorboard
