#pragma once
// ShmTuning: how ShmCommunicator's allreduce runs at each buffer size on this machine, and how
// its waiters wait. Chosen by measuring the candidates when a communicator is set up, read back
// from a per-machine cache of an earlier measurement, or fixed by the environment
// (docs/design/0021-paths-by-measurement.md). This file holds the pure parts: the candidates, the
// choice among measured times, the cache file and the fixed-size form rank 0 broadcasts; the
// measuring itself runs collectives and lives in shm_communicator.cc.
//
// Who decides: group rank 0 alone (its environment, its cache, its clock), and it broadcasts the
// result, so that every rank of a group takes the same path whatever its own environment or
// cache says (ranks on different paths would wait for each other forever).
//
// Environment, read on rank 0:
//   COHORT_COMM_CALIBRATE     auto (default): the cache when it was written on this machine
//                             (same kernel, CPU, core count, rank count, Cohort version), else
//                             measure and write it; force: measure and rewrite the cache;
//                             off: the built-in constants, no measuring, no cache.
//   COHORT_COMM_CACHE_DIR     the cache's directory (default $XDG_CACHE_HOME/cohort, else
//                             $HOME/.cache/cohort; neither set: no cache).
//   COHORT_SHM_CMA_MIN_BYTES  fixes the path instead: single-copy from this many bytes up,
//                             staged below (0: staged always). Wins over COHORT_COMM_CALIBRATE.
// Thread-safe (pure functions; the cache functions touch only the file they are given).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::comm::internal {

enum class ShmPath : uint8_t { kStaged = 0, kCma = 1 };

// One way to run an allreduce.
struct ShmChoice {
  ShmPath path = ShmPath::kStaged;
  // kStaged: bytes of staging slot a round uses (at most the segment's slot); kCma: bytes of a
  // peer's piece read per process_vm_readv.
  uint32_t chunk_bytes = 1 << 20;
  bool operator==(const ShmChoice& o) const { return path == o.path && chunk_bytes == o.chunk_bytes; }
};
std::string ShmChoiceName(const ShmChoice& choice);  // "staged 1 MiB", "single-copy 256 KiB"

// How a rank waits for a peer at a barrier: spin this many pause instructions, then yield the
// core this many times, then sleep on the futex.
struct ShmWait {
  uint32_t spin_iterations = 1024;
  uint32_t yield_iterations = 1024;
  bool operator==(const ShmWait& o) const {
    return spin_iterations == o.spin_iterations && yield_iterations == o.yield_iterations;
  }
};
std::string ShmWaitName(const ShmWait& wait);  // "spin 1024, yield 1024"

// Buffer sizes fall into classes, each measured at one size; the bounds between classes are the
// geometric midpoints (16 KiB, 256 KiB, 4 MiB).
inline constexpr int kShmSizeClasses = 4;
inline constexpr size_t kShmClassBytes[kShmSizeClasses] = {4 << 10, 64 << 10, 1 << 20, 16 << 20};
int ShmSizeClass(size_t bytes);

enum class ShmTuningSource : uint8_t { kConstants = 0, kEnvironment = 1, kMeasured = 2, kCache = 3 };
absl::string_view ShmTuningSourceName(ShmTuningSource source);  // "constants", ...

// One candidate's median time at one size class (size_class -1: the wait policy, measured on
// the 64 KiB class).
struct ShmMeasurement {
  int size_class = 0;
  std::string candidate;
  double seconds = 0;
  bool chosen = false;
};

struct ShmTuning {
  std::array<ShmChoice, kShmSizeClasses> classes{};
  ShmWait wait;
  ShmTuningSource source = ShmTuningSource::kConstants;
  // Rank 0 only (never broadcast): what was measured, how long measuring took, and the cache
  // file read or written ("" when none).
  std::vector<ShmMeasurement> measurements;
  double calibration_seconds = 0;
  std::string cache_path;

  const ShmChoice& For(size_t bytes) const { return classes[ShmSizeClass(bytes)]; }
};

// What the communicator's choice depends on; the cache key is this plus the machine's kernel,
// CPU model and Cohort's version.
struct ShmMachine {
  int ranks = 2;
  bool cma_ok = false;      // every rank can read every peer with process_vm_readv
  int usable_cores = 1;     // CPUs in the affinity mask
  size_t slot_bytes = 1 << 20;  // the segment's staging slot
};

// The constants used before issue 40 and with COHORT_COMM_CALIBRATE=off: staged below 1 MiB,
// single-copy (256 KiB chunks) from 1 MiB when it works and ranks do not outnumber cores;
// waiters spin long unless ranks outnumber cores.
ShmTuning ConstantShmTuning(const ShmMachine& machine);
// COHORT_SHM_CMA_MIN_BYTES: single-copy from `min_bytes` (0: never), whatever the core count.
ShmTuning ShmTuningFromCmaMinBytes(const ShmMachine& machine, int64_t min_bytes);

// The candidates measured for size class `size_class`, the constant's choice first (it stays
// unless another is clearly faster, see PickShmCandidate).
std::vector<ShmChoice> ShmPathCandidates(const ShmMachine& machine, int size_class);
// The wait policies measured, the constant's first.
std::vector<ShmWait> ShmWaitCandidates(const ShmMachine& machine);

// The index of the fastest of `seconds`, where index 0 (the incumbent) keeps its place unless
// another is faster by more than `margin` (0.05: 5%), so that noise does not flip a choice.
size_t PickShmCandidate(const std::vector<double>& seconds, double margin = 0.05);

// The fixed-size form rank 0 broadcasts: either "measure" (no tuning yet) or a tuning.
// A first byte of kShmTuningWireFailure instead says that rank 0 could not decide (its
// environment is invalid); the caller tells the ranks why by other means.
inline constexpr size_t kShmTuningWireBytes = 48;
inline constexpr char kShmTuningWireFailure = 2;
std::string EncodeShmTuning(const ShmTuning* tuning);  // nullptr: "measure"
// Decodes and checks against `machine` (a single-copy choice where single-copy does not work, a
// chunk outside the accepted range: InvalidArgument naming it). nullopt: rank 0 asks to measure.
absl::StatusOr<std::optional<ShmTuning>> DecodeShmTuning(absl::string_view wire,
                                                         const ShmMachine& machine);

enum class ShmCalibrateMode { kAuto, kForce, kOff };
// COHORT_COMM_CALIBRATE; a value other than auto/force/off (or 1/0) is an error naming it.
absl::StatusOr<ShmCalibrateMode> ShmCalibrateModeFromEnv();

// "kernel=...;cpu=...;cores=2;ranks=2;cma=1;slot=1048576;version=0.1.0/1". Reads /proc/cpuinfo
// and uname: compute it once (ShmTuningCacheFor).
std::string ShmMachineKey(const ShmMachine& machine);

// Where a machine's tuning is cached: its key (compared whole when reading) and its file,
// DIR/shm-<hash of the key>.json with DIR from the environment ("" when there is none).
struct ShmTuningCache {
  std::string key;
  std::string path;
};
ShmTuningCache ShmTuningCacheFor(const ShmMachine& machine);

// The tuning the cache file holds for `machine`. NotFound when there is none;
// FailedPrecondition when it was written for another key (a kernel upgrade, another Cohort
// version); InvalidArgument naming the file and field when it is not a valid tuning.
absl::StatusOr<ShmTuning> LoadShmTuning(const ShmTuningCache& cache, const ShmMachine& machine);
// Writes `tuning` (with its measurements) to the cache file atomically, creating the directory.
absl::Status SaveShmTuning(const ShmTuningCache& cache, const ShmTuning& tuning);

// A table of the choice per size class, the measurements behind it and where it came from.
std::string ExplainShmTuning(const ShmTuning& tuning, int ranks);

}  // namespace cohort::comm::internal
