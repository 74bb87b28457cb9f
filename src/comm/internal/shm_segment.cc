#include "comm/internal/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cohort::comm::internal {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

}  // namespace

absl::StatusOr<ShmSegment> ShmSegment::Create(size_t bytes) {
  std::random_device random;
  const uint64_t nonce = (static_cast<uint64_t>(random()) << 32) ^ random();
  std::string name = absl::StrFormat("/cohort-shm-%d-%016x", ::getpid(), nonce);
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("shm_open(", name, ", O_CREAT) failed: ", ErrnoText(errno)));
  }
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(absl::StrCat("could not size shared-memory segment ", name,
                                                     " to ", bytes, " bytes: ", ErrnoText(err),
                                                     " (is /dev/shm full or too small?)"));
  }
  // Allocate every page now: a /dev/shm too small for the segment fails here, naming the cause,
  // instead of killing a rank with SIGBUS in the middle of a collective; and no collective pays
  // a first-touch page fault (a 512 KiB copy into untouched slots measured 1-1.7 ms instead of
  // 30 us on a 2-core VM). EINVAL/EOPNOTSUPP: a file system that cannot, pages come on use.
  if (int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
      err != 0 && err != EINVAL && err != EOPNOTSUPP) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(absl::StrCat(
        "could not allocate the ", bytes, " bytes of shared-memory segment ", name, ": ",
        ErrnoText(err), " (is /dev/shm full or too small? a container may need --shm-size)"));
  }
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (data == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return absl::ResourceExhaustedError(absl::StrCat("could not map shared-memory segment ", name,
                                                     " (", bytes, " bytes): ", ErrnoText(err)));
  }
  return ShmSegment(std::move(name), static_cast<char*>(data), bytes, /*linked=*/true);
}

absl::StatusOr<ShmSegment> ShmSegment::Attach(const std::string& name, size_t min_bytes) {
  int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    int err = errno;
    std::string what = absl::StrCat("shm_open(", name, ") failed: ", ErrnoText(err));
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(what, " (its creator is gone?)"));
    return absl::InternalError(what);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < min_bytes) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat("shared-memory segment ", name, " has ",
                                                      st.st_size, " bytes, expected at least ",
                                                      min_bytes));
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  // Populated: the creator allocated the pages; mapping them all now spares the collectives the
  // minor faults.
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (data == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("could not map shared-memory segment ", name, ": ", ErrnoText(err)));
  }
  return ShmSegment(name, static_cast<char*>(data), bytes, /*linked=*/false);
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)), data_(other.data_), size_(other.size_),
      linked_(other.linked_) {
  other.data_ = nullptr;
  other.linked_ = false;
}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    Release();
    name_ = std::move(other.name_);
    data_ = other.data_;
    size_ = other.size_;
    linked_ = other.linked_;
    other.data_ = nullptr;
    other.linked_ = false;
  }
  return *this;
}

ShmSegment::~ShmSegment() { Release(); }

void ShmSegment::Unlink() {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

void ShmSegment::Release() {
  Unlink();
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
}

}  // namespace cohort::comm::internal
