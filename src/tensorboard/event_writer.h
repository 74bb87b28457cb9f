#pragma once
// EventWriter: writes scalar metrics as a TensorBoard event file, so `tensorboard --logdir DIR`
// draws their curves. One writer owns one new file in DIR,
// events.out.tfevents.<10-digit Unix seconds>.<hostname>.<pid>[.<n>], whose first record is the
// version event ("brain.Event:2") and every later record one Event of scalar summaries
// (TensorFlow's Event and Summary messages, see event.proto; framing in record_writer.h).
//
// Thread-safe: any thread may call any method; calls are serialized, and each call's event is
// written whole, never interleaved with another's.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(std::unique_ptr<EventWriter> writer,
//                           EventWriter::Open(storage_path + "/tensorboard"));
//   COHORT_RETURN_IF_ERROR(writer->WriteScalars(
//       {{"training/loss", 0.31}, {"training/accuracy", 0.9}}, batches, absl::Now()));
//   COHORT_RETURN_IF_ERROR(writer->Close());

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "tensorboard/record_writer.h"

namespace cohort::tensorboard {

struct EventWriterOptions {
  // Gives the time in the file name and in the version record.
  const Clock* clock = &RealClock();
  // The file name's host part; empty: this machine's hostname.
  std::string hostname;
};

class EventWriter {
 public:
  // What the first record of every file says. TensorBoard reads the number after
  // "brain.Event:"; 2 is the current version (what TensorFlow and TensorBoard's writers write).
  static constexpr absl::string_view kFileVersion = "brain.Event:2";

  // Creates `dir` and its parents if missing, creates a new events file in it (never reusing an
  // existing one: a second writer in the same second and process gets a ".<n>" suffix) and
  // writes the version record. Errors name the directory or file and the system's reason.
  static absl::StatusOr<std::unique_ptr<EventWriter>> Open(const std::string& dir,
                                                           const EventWriterOptions& options = {});

  // Closes the file if Close() was not called; an error then is logged, not returned.
  ~EventWriter() = default;
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Writes one event holding the scalar `value` under `tag` (e.g. "validation/accuracy") at
  // `step`. The value is stored as a float, as TensorBoard's simple_value is (a double out of
  // float range becomes an infinity of its sign; NaN stays NaN). The event reaches the operating
  // system before the call returns, so TensorBoard sees it without a Flush. InvalidArgument for an
  // empty tag; after a failed write the file may end in a partial record, and every later call
  // returns that first error (naming the file). FailedPrecondition after Close().
  absl::Status WriteScalar(absl::string_view tag, int64_t step, double value, absl::Time wall_time);

  // Writes one event holding every scalar of `scalars` (tag -> value) at `step`, as WriteScalar
  // does for one. An empty map writes nothing. InvalidArgument, before anything is written, if
  // a tag is empty.
  absl::Status WriteScalars(const std::map<std::string, double>& scalars, int64_t step,
                            absl::Time wall_time);

  // Makes every event written so far durable on disk (fsync). Errors name the file;
  // FailedPrecondition after Close().
  absl::Status Flush();

  // Flushes and closes the file. Later calls return OK; later writes fail.
  absl::Status Close();

  // The events file's full path.
  const std::string& path() const { return path_; }

 private:
  explicit EventWriter(std::unique_ptr<RecordWriter> records)
      : path_(records->path()), records_(std::move(records)) {}

  const std::string path_;
  absl::Mutex mutex_;
  std::unique_ptr<RecordWriter> records_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace cohort::tensorboard
