#pragma once
// RecordWriter: appends records to a new file in the TFRecord framing that TensorBoard's event
// files use. Each record is
//
//   uint64 length          little-endian, the size of data
//   uint32 masked_crc      crc32c::Mask(CRC32C of the 8 length bytes), little-endian
//   byte   data[length]
//   uint32 masked_crc      crc32c::Mask(CRC32C of data), little-endian
//
// Thread-compatible: one owner calls it (EventWriter serializes its callers).

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::tensorboard {

// Returns `data` framed as one record (the layout above).
std::string EncodeRecord(absl::string_view data);

class RecordWriter {
 public:
  // Creates the file `path` (mode 0644) for writing. Fails with AlreadyExists when `path`
  // exists (it is never truncated or appended to), or with the system's reason; errors name
  // the path.
  static absl::StatusOr<std::unique_ptr<RecordWriter>> Create(const std::string& path);

  // Closes the file if Close() was not called; an error then is logged, not returned.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Appends one record and hands it to the operating system (visible to readers at once; not
  // yet durable, see Sync). After a failed write the file may end in a partial record, so every
  // later call returns that first error. FailedPrecondition after Close().
  absl::Status Write(absl::string_view data);

  // Makes what was written durable (fsync). Errors as for Write.
  absl::Status Sync();

  // Syncs and closes the file. Later calls return OK and do nothing; a later Write fails.
  absl::Status Close();

  const std::string& path() const { return path_; }

 private:
  RecordWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}

  // Records the first error (named after `what` and the path) and returns it.
  absl::Status Fail(int error_number, absl::string_view what);

  std::string path_;
  std::FILE* file_;  // null once closed
  absl::Status error_;
};

}  // namespace cohort::tensorboard
