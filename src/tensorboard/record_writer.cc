#include "tensorboard/record_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "tensorboard/crc32c.h"

namespace cohort::tensorboard {
namespace {

// Appends the `bytes` low-order bytes of `value`, least significant first.
void AppendLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
}

}  // namespace

std::string EncodeRecord(absl::string_view data) {
  std::string record;
  record.reserve(8 + 4 + data.size() + 4);
  AppendLittleEndian(data.size(), 8, &record);
  AppendLittleEndian(crc32c::Mask(crc32c::Value(record)), 4, &record);
  record.append(data.data(), data.size());
  AppendLittleEndian(crc32c::Mask(crc32c::Value(data)), 4, &record);
  return record;
}

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("creating ", path));
  }
  std::FILE* file = ::fdopen(fd, "wb");
  if (file == nullptr) {
    int error_number = errno;
    ::close(fd);
    return absl::ErrnoToStatus(error_number, absl::StrCat("opening ", path));
  }
  return std::unique_ptr<RecordWriter>(new RecordWriter(path, file));
}

RecordWriter::~RecordWriter() {
  absl::Status status = Close();
  if (!status.ok()) {
    COHORT_LOG(WARNING) << "record writer: " << status;
  }
}

absl::Status RecordWriter::Fail(int error_number, absl::string_view what) {
  error_ = absl::ErrnoToStatus(error_number, absl::StrCat(what, " ", path_));
  return error_;
}

absl::Status RecordWriter::Write(absl::string_view data) {
  if (!error_.ok()) return error_;
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("writing ", path_, ": already closed"));
  }
  std::string record = EncodeRecord(data);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) {
    return Fail(errno, "writing");
  }
  if (std::fflush(file_) != 0) return Fail(errno, "writing");
  return absl::OkStatus();
}

absl::Status RecordWriter::Sync() {
  if (!error_.ok()) return error_;
  if (file_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("syncing ", path_, ": already closed"));
  }
  if (std::fflush(file_) != 0) return Fail(errno, "writing");
  if (::fsync(::fileno(file_)) != 0) return Fail(errno, "syncing");
  return absl::OkStatus();
}

absl::Status RecordWriter::Close() {
  if (file_ == nullptr) return absl::OkStatus();
  absl::Status status = Sync();
  std::FILE* file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0 && status.ok()) {
    status = Fail(errno, "closing");
  }
  return status;
}

}  // namespace cohort::tensorboard
