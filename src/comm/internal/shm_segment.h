#pragma once
// ShmSegment: one mapping of a POSIX shared-memory object (shm_open + mmap, MAP_SHARED).
// The creator picks a unique name; peers attach by name; the name is unlinked as soon as every
// peer has attached so that nothing is left in /dev/shm, even when processes crash later: the
// memory lives exactly as long as its last mapping.
// Thread-compatible; move-only. The destructor unmaps (and unlinks if the creator never did).

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace cohort::comm::internal {

class ShmSegment {
 public:
  // Creates a new zero-filled object of `bytes` bytes named "/cohort-shm-<pid>-<random>" and
  // maps it. Errors (no space in /dev/shm, permissions) name the object and the size.
  // Every page is allocated and mapped at once (ResourceExhausted naming /dev/shm when it
  // cannot hold them); Attach maps them populated too.
  static absl::StatusOr<ShmSegment> Create(size_t bytes);
  // Maps the existing object `name` (as returned by name()). NotFound when it is gone (the
  // creator unlinked it or died); FailedPrecondition when it is smaller than `min_bytes`.
  static absl::StatusOr<ShmSegment> Attach(const std::string& name, size_t min_bytes);

  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  // Removes the name; the mapping stays valid. Idempotent; a name already gone is not an error.
  void Unlink();

  char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, char* data, size_t size, bool linked)
      : name_(std::move(name)), data_(data), size_(size), linked_(linked) {}
  void Release();

  std::string name_;
  char* data_ = nullptr;
  size_t size_ = 0;
  bool linked_ = false;  // this process created the name and has not unlinked it yet
};

}  // namespace cohort::comm::internal
