#include "comm/shm_communicator.h"

#include <immintrin.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "comm/internal/reduce_kernels.h"
#include "comm/internal/shm_layout.h"
#include "comm/internal/shm_segment.h"
#include "comm/internal/shm_sync.h"
#include "comm/internal/shm_tuning.h"
#include "common/env.h"
#include "common/logging.h"

namespace cohort::comm {
namespace {

using internal::PeerProcess;
using internal::ShmLayout;
using internal::ShmSegment;

constexpr uint64_t kMagic = 0x31766873'74726f63;  // "cortshv1"
// Two staging slots per rank: round k writes slot k % 2. A rank writes a slot again only in
// round k + 2, after the barrier of round k + 1, which every rank reaches only once it has
// finished reading round k. So double buffering needs no extra "slot free" handshake.
constexpr int kSlots = 2;
// Bytes of one staging slot (all ranks' pieces of one round). Small enough that a round's
// pieces (size x slot) stay in the shared L3 between being written and being reduced, large
// enough that the two barriers per round are amortized. 1 MiB measured best for 2-4 ranks on
// the reference machine (docs/performance.md); COHORT_SHM_SLOT_BYTES overrides it.
constexpr size_t kDefaultSlotBytes = 1 << 20;
// While peers are not arriving, a waiter sleeps on a futex for at most this long before it
// re-checks for dead peers, failure notices and the deadline.
constexpr absl::Duration kPollInterval = absl::Milliseconds(20);
// After a failure notice from the rendezvous store, how long a waiter keeps waiting for local
// peers that are still alive. A notice often reports a rank that finished its part and then
// exited (for example after its own deadline), which the waiter does not depend on; the grace
// lets the waiter report its own, more precise error (a stall at the deadline). Well under the
// 10 s within which a dead peer must fail the collective.
constexpr absl::Duration kNoticeGrace = absl::Seconds(2);
// The least time the ranks give each other to finish measuring the paths at setup.
constexpr absl::Duration kCalibrationDeadline = absl::Seconds(30);
// Which allreduce path runs at which size (staged through the segment, or single-copy straight
// between the ranks' buffers with cross-memory attach, process_vm_readv), with which chunks, and
// how waiters wait: measured at setup (Tune, Calibrate; internal/shm_tuning.h says who decides
// and how the environment overrides it). Single-copy moves each element across memory about 2.5
// times per rank instead of 4.5, but pays a system call per chunk and page-table walks; which
// wins depends on the machine (docs/design/0021-paths-by-measurement.md).
// What a rank publishes for the others to read back through process_vm_readv at setup.
constexpr uint64_t kCmaProbe = 0x636d612d70726f62;  // "cma-prob"

struct SegmentHeader {
  uint64_t magic;
  uint32_t size;
  uint32_t slots;
  uint64_t slot_bytes;
  uint64_t data_offset;
};

// One per rank, each on its own pair of cache lines (adjacent-line prefetch) so that posting a
// counter never invalidates another rank's line.
struct alignas(128) RankControl {
  // Barriers this rank has reached; compared with wrap-around arithmetic.
  std::atomic<uint32_t> seq;
  // Processes currently sleeping (or about to) on `seq`; a poster makes the futex_wake syscall
  // only when this is non-zero.
  std::atomic<uint32_t> waiters;
  std::atomic<int32_t> pid;  // 0 until the rank attached
  // Cross-memory attach: whether this rank can read every peer (set at setup), and the address
  // (in this rank's own address space) of the buffer of the allreduce in progress.
  std::atomic<int32_t> cma_ok;
  std::atomic<uint64_t> cma_address;
};
static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit words");

constexpr size_t kControlOffset = 128;

size_t RoundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }

size_t DataOffset(int size) { return RoundUp(kControlOffset + size * sizeof(RankControl), 4096); }

// Lets the rendezvous watcher thread wake this communicator's sleeping waiters when a failure
// notice arrives. Outlives the communicator (the rendezvous keeps the callback), so it is
// emptied under the lock when the communicator goes away.
struct FailureWaker {
  std::mutex mu;
  RankControl* controls = nullptr;
  int size = 0;
  void WakeAll() {
    std::lock_guard<std::mutex> lock(mu);
    for (int r = 0; r < size; ++r) internal::FutexWakeAll(&controls[r].seq);
  }
};

// The calibration's buffer: mapped populated (4 ranks faulting in 16 MiB each a page at a time
// took 130 ms on a 2-core VM) and zero-filled by the kernel (no NaNs or denormals slow the
// sums); unmapped when it goes.
class MappedBuffer {
 public:
  static absl::StatusOr<MappedBuffer> Map(size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat("shm calibration: mapping ", bytes, " bytes: ", std::strerror(errno)));
    }
    return MappedBuffer(static_cast<char*>(p), bytes);
  }
  MappedBuffer(MappedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(o.size_) {}
  MappedBuffer& operator=(MappedBuffer&&) = delete;
  ~MappedBuffer() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedBuffer(char* data, size_t size) : data_(data), size_(size) {}
  char* data_;
  size_t size_;
};

}  // namespace

using internal::ShmChoice;
using internal::ShmMachine;
using internal::ShmPath;
using internal::ShmTuning;

class ShmCommunicator::Impl {
 public:
  Impl(Group group, absl::Duration timeout) : group_(std::move(group)), timeout_(timeout) {}
  ~Impl() {
    if (waker_) {
      std::lock_guard<std::mutex> lock(waker_->mu);
      waker_->controls = nullptr;
      waker_->size = 0;
    }
  }

  absl::Status Setup(size_t slot_bytes);

  // Starts collective `op`: fails at once when the communicator is broken or the process knows
  // of a failure; otherwise sets the deadline.
  absl::Status Begin(const char* op);

  // Posts this rank's arrival at the next barrier and waits for every other rank's.
  absl::Status Sync();

  enum class Kind { kAllreduce, kReduceScatter, kAllgatherSlices };
  // The staged path, its rounds using `slot_bytes` (at most the segment's slot) of each slot.
  absl::Status RunPipeline(Kind kind, char* data, size_t count, DataType dtype, ReduceOp op,
                           size_t slot_bytes);
  // Single-copy: peers' pieces read `chunk_bytes` at a time with process_vm_readv.
  absl::Status RunCma(char* data, size_t count, DataType dtype, ReduceOp op, size_t chunk_bytes);
  // The allreduce by `choice`'s path.
  absl::Status RunAllreduce(const ShmChoice& choice, char* data, size_t count, DataType dtype,
                            ReduceOp op);
  // The allreduce by the path tuned for its size.
  absl::Status Allreduce(char* data, size_t count, DataType dtype, ReduceOp op) {
    return RunAllreduce(tuning_.For(count * DataTypeSize(dtype)), data, count, dtype, op);
  }
  const ShmTuning& tuning() const { return tuning_; }
  absl::Status Broadcast(char* data, size_t bytes, int root);
  absl::StatusOr<std::vector<std::string>> Gather(absl::string_view bytes, int root);

  int size() const { return group_.size; }
  int rank() const { return group_.rank; }

 private:
  // Staging slot `round % kSlots` of `rank`.
  char* Slot(int rank, uint64_t round) const {
    return data_ + (static_cast<size_t>(rank) * kSlots + round % kSlots) * slot_bytes_;
  }
  bool Arrived(int r) const {
    return static_cast<int32_t>(controls_[r].seq.load(std::memory_order_acquire) - seq_) >= 0;
  }
  absl::Status WaitSlow(int r);
  absl::Status Fail(absl::Status status);
  // Decides, identically on every rank, whether cross-memory attach works between all ranks.
  absl::Status ProbeCma();
  ShmMachine Machine() const;
  // Sets tuning_ identically on every rank: rank 0's plan (PlanTuning), else a measurement.
  absl::Status Tune();
  // Rank 0: the tuning its environment or cache fixes; nullopt: measure (into cache_).
  absl::StatusOr<std::optional<ShmTuning>> PlanTuning(const ShmMachine& machine);
  // Every rank: times the candidates and adopts rank 0's picks (the wait policy first, on the
  // 64 KiB class, then each size class's path under it).
  absl::StatusOr<ShmTuning> Calibrate(const ShmMachine& machine);
  absl::Status TouchEveryRegion(const ShmMachine& machine, MappedBuffer& buffer);
  absl::Status CalibrateWait(const ShmMachine& machine, char* data);
  absl::Status CalibrateClass(const ShmMachine& machine, int size_class, char* data);
  // Median seconds (meaningful on rank 0) of an allreduce of size class `size_class` for each
  // of `candidates` arms; `arm(i)` sets up candidate i and returns the path to run. Candidates
  // clearly slower after a few rounds stop early (`dropped`), the same on every rank.
  struct Timings {
    std::vector<double> median;
    std::vector<bool> dropped;
  };
  absl::StatusOr<Timings> TimeCandidates(size_t candidates, int size_class,
                                         absl::FunctionRef<ShmChoice(size_t)> arm, char* buffer);
  // Rank 0 marks the candidates whose best time so far is `slower` times the best of all (or
  // worse); every rank adopts its marks.
  absl::Status AgreeOnDropped(const std::vector<std::vector<double>>& times, double slower,
                              std::vector<bool>& dropped);
  // Rank 0 picks among the candidates not dropped and every rank returns its pick.
  absl::StatusOr<size_t> AgreeOnPick(const Timings& timings);
  // Copies `bytes` from rank r's address `remote` into `local`.
  absl::Status ReadPeer(int r, uint64_t remote, char* local, size_t bytes);

  Group group_;
  absl::Duration timeout_;
  std::optional<ShmSegment> segment_;
  RankControl* controls_ = nullptr;
  char* data_ = nullptr;
  size_t slot_bytes_ = 0;
  std::vector<PeerProcess> peers_;
  std::shared_ptr<FailureWaker> waker_;
  // The paths per size and the wait policy (with more ranks than cores a spinning waiter steals
  // the core from the rank it waits for).
  ShmTuning tuning_;
  internal::ShmTuningCache cache_;  // rank 0, when measuring may be cached: set by PlanTuning

  bool cma_ok_ = false;
  uint64_t cma_probe_ = kCmaProbe;
  std::vector<char> cma_chunks_;  // (size - 1) chunks, grown to the largest chunk used

  uint32_t seq_ = 0;     // barriers passed
  uint64_t round_ = 0;   // slot rounds used, across collectives (selects the slot)
  absl::Status broken_;  // first failure; returned by every later call
  const char* op_ = "";
  absl::Time deadline_;
};

absl::Status ShmCommunicator::Impl::Setup(size_t slot_bytes) {
  const int n = group_.size, me = group_.rank;
  std::shared_ptr<Store> store = group_.store();
  const size_t data_offset = DataOffset(n);
  if (me == 0) {
    COHORT_ASSIGN_OR_RETURN(
        ShmSegment segment,
        ShmSegment::Create(data_offset + static_cast<size_t>(n) * kSlots * slot_bytes));
    new (segment.data()) SegmentHeader{kMagic, static_cast<uint32_t>(n), kSlots, slot_bytes,
                                       data_offset};
    for (int r = 0; r < n; ++r) {
      new (segment.data() + kControlOffset + r * sizeof(RankControl)) RankControl{};
    }
    segment_.emplace(std::move(segment));
    COHORT_RETURN_IF_ERROR(store->Set("shm/segment", segment_->name()));
  } else {
    COHORT_ASSIGN_OR_RETURN(std::string name, store->Get("shm/segment", timeout_));
    COHORT_ASSIGN_OR_RETURN(ShmSegment segment, ShmSegment::Attach(name, data_offset));
    SegmentHeader header;
    std::memcpy(&header, segment.data(), sizeof(header));
    if (header.magic != kMagic || header.size != static_cast<uint32_t>(n) ||
        header.slots != kSlots || header.data_offset != data_offset ||
        segment.size() < data_offset + static_cast<size_t>(n) * kSlots * header.slot_bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "shared-memory segment ", name, " was not made for this group of ", n,
          " ranks (different Cohort versions, or a stale rendezvous key?)"));
    }
    slot_bytes = header.slot_bytes;
    segment_.emplace(std::move(segment));
  }
  slot_bytes_ = slot_bytes;
  controls_ = reinterpret_cast<RankControl*>(segment_->data() + kControlOffset);
  data_ = segment_->data() + data_offset;
  controls_[me].pid.store(static_cast<int32_t>(::getpid()), std::memory_order_release);

  // Everyone attached: the creator removes the name, so a crash from here on leaks nothing.
  COHORT_ASSIGN_OR_RETURN(int64_t attached, store->Add("shm/attached", 1));
  if (attached == n) COHORT_RETURN_IF_ERROR(store->Set("shm/ready", "1"));
  absl::StatusOr<std::string> ready = store->Get("shm/ready", timeout_);
  if (me == 0) segment_->Unlink();
  if (!ready.ok()) {
    std::vector<std::string> missing;
    for (int r = 0; r < n; ++r) {
      if (controls_[r].pid.load() == 0) missing.push_back(group_.Name(r));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        "shared-memory setup: timed out after ", absl::FormatDuration(timeout_),
        " waiting for ", missing.empty() ? "the group" : absl::StrJoin(missing, ", "),
        " to attach the segment"));
  }
  for (int r = 0; r < n; ++r) {
    peers_.emplace_back(r == me ? 0 : controls_[r].pid.load(std::memory_order_acquire));
  }

  // Waiting: spin (a barrier is usually reached within microseconds), then sched_yield (free
  // when the core is otherwise idle, and hands the core over when another process, say a
  // peer rank or a compiler, wants it), then sleep on the futex. Until Tune measured how long
  // to spin, the constants (oversubscribed: barely spin).
  tuning_ = internal::ConstantShmTuning(Machine());

  waker_ = std::make_shared<FailureWaker>();
  waker_->controls = controls_;
  waker_->size = n;
  std::weak_ptr<FailureWaker> weak = waker_;
  group_.rendezvous->OnFailure([weak] {
    if (auto waker = weak.lock()) waker->WakeAll();
  });
  COHORT_RETURN_IF_ERROR(ProbeCma());
  return Tune();
}

absl::Status ShmCommunicator::Impl::ProbeCma() {
  const int n = group_.size, me = group_.rank;
  // Whether single-copy is used, and where, is Tune's business; this finds out whether it can
  // be (a single "no" decides for all).
  // Under Yama (ptrace_scope 1) only a declared tracer may read this process; siblings are
  // not ancestors, so declare everyone. EINVAL without Yama: nothing to do.
  ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  controls_[me].cma_address.store(reinterpret_cast<uint64_t>(&cma_probe_),
                                  std::memory_order_release);
  COHORT_RETURN_IF_ERROR(Begin("setup"));
  COHORT_RETURN_IF_ERROR(Sync());
  bool ok = true;
  for (int r = 0; r < n && ok; ++r) {
    if (r == me) continue;
    uint64_t value = 0;
    absl::Status read = ReadPeer(r, controls_[r].cma_address.load(std::memory_order_acquire),
                                 reinterpret_cast<char*>(&value), sizeof(value));
    ok = read.ok() && value == kCmaProbe;
    if (!ok) {
      COHORT_LOG(WARNING) << group_.Name(me) << ": cross-memory attach to " << group_.Name(r)
                          << " is unavailable (" << (read.ok() ? "wrong value" : read.message())
                          << "); allreduces take the staged path at every size (a container "
                             "may need CAP_SYS_PTRACE)";
    }
  }
  controls_[me].cma_ok.store(ok ? 1 : 0, std::memory_order_release);
  COHORT_RETURN_IF_ERROR(Sync());
  cma_ok_ = true;
  for (int r = 0; r < n; ++r) cma_ok_ = cma_ok_ && controls_[r].cma_ok.load() == 1;
  // Nobody may overwrite cma_address (the next collective) before everyone has read the flags.
  COHORT_RETURN_IF_ERROR(Sync());
  return absl::OkStatus();
}

ShmMachine ShmCommunicator::Impl::Machine() const {
  return {group_.size, cma_ok_, internal::UsableCores(), slot_bytes_};
}

absl::Status ShmCommunicator::Impl::Tune() {
  const ShmMachine machine = Machine();
  std::optional<ShmTuning> planned;
  absl::Status plan_status;
  if (rank() == 0) {
    absl::StatusOr<std::optional<ShmTuning>> plan = PlanTuning(machine);
    plan_status = plan.status();
    if (plan.ok()) planned = std::move(*plan);
  }
  std::string wire = internal::EncodeShmTuning(planned ? &*planned : nullptr);
  if (!plan_status.ok()) {  // the peers read why from the store
    wire[0] = internal::kShmTuningWireFailure;
    COHORT_RETURN_IF_ERROR(group_.store()->Set("shm/setup-error", std::string(plan_status.message())));
  }
  COHORT_RETURN_IF_ERROR(Begin("setup"));
  COHORT_RETURN_IF_ERROR(Broadcast(wire.data(), wire.size(), 0));
  if (wire[0] == internal::kShmTuningWireFailure) {
    if (rank() == 0) return plan_status;
    absl::StatusOr<std::string> why = group_.store()->Get("shm/setup-error", timeout_);
    return absl::FailedPreconditionError(absl::StrCat(
        group_.Name(0), " could not choose the allreduce paths: ",
        why.ok() ? *why : std::string(why.status().message())));
  }
  COHORT_ASSIGN_OR_RETURN(std::optional<ShmTuning> decided,
                          internal::DecodeShmTuning(wire, machine));
  if (decided) {
    tuning_ = rank() == 0 ? std::move(*planned) : std::move(*decided);
    return absl::OkStatus();
  }
  COHORT_ASSIGN_OR_RETURN(tuning_, Calibrate(machine));
  if (rank() != 0 || cache_.path.empty()) return absl::OkStatus();
  tuning_.cache_path = cache_.path;
  if (absl::Status saved = internal::SaveShmTuning(cache_, tuning_); !saved.ok()) {
    COHORT_LOG(WARNING) << "shm: keeping the allreduce tuning measured now without caching it ("
                        << saved.message() << "); the next communicator measures again";
    tuning_.cache_path.clear();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ShmTuning>> ShmCommunicator::Impl::PlanTuning(
    const ShmMachine& machine) {
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> min_bytes,
                          env::GetInt("COHORT_SHM_CMA_MIN_BYTES"));
  if (min_bytes) {
    if (*min_bytes < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "COHORT_SHM_CMA_MIN_BYTES=", *min_bytes, " is negative: use 0 to turn single-copy off"));
    }
    return internal::ShmTuningFromCmaMinBytes(machine, *min_bytes);
  }
  COHORT_ASSIGN_OR_RETURN(internal::ShmCalibrateMode mode, internal::ShmCalibrateModeFromEnv());
  if (mode == internal::ShmCalibrateMode::kOff) return internal::ConstantShmTuning(machine);
  cache_ = internal::ShmTuningCacheFor(machine);  // where Tune writes what it measures
  if (mode == internal::ShmCalibrateMode::kAuto && !cache_.path.empty()) {
    absl::StatusOr<ShmTuning> cached = internal::LoadShmTuning(cache_, machine);
    if (cached.ok()) return *cached;
    if (!absl::IsNotFound(cached.status()) && !absl::IsFailedPrecondition(cached.status())) {
      COHORT_LOG(WARNING) << "shm: ignoring the allreduce tuning cache (" << cached.status().message()
                          << "); measuring again";
    }
  }
  return std::nullopt;
}

// Each candidate runs once untimed, then timed rounds interleave the candidates, so that a
// burst of load elsewhere on the machine slows all of them alike. After one timed round rank 0
// drops the candidates 50% slower than the best, after two those 25% slower (they could not
// win), which halves the cost where single-copy is slow. A timed allreduce sits between two
// barriers, both timed: the first absorbs the ranks' skew, which a wait policy that spins a
// time-sliced peer's core away makes long. Dropped candidates' figures are the median of their
// rounds so far.
absl::StatusOr<ShmCommunicator::Impl::Timings> ShmCommunicator::Impl::TimeCandidates(
    size_t candidates, int size_class, absl::FunctionRef<ShmChoice(size_t)> arm, char* buffer) {
  static constexpr int kReps[internal::kShmSizeClasses] = {15, 11, 7, 5};
  const size_t count = internal::kShmClassBytes[size_class] / sizeof(float);
  std::vector<std::vector<double>> times(candidates);
  Timings out;
  out.dropped.assign(candidates, false);
  for (int rep = 0; rep <= kReps[size_class]; ++rep) {
    if (rep == 2) COHORT_RETURN_IF_ERROR(AgreeOnDropped(times, 1.5, out.dropped));
    if (rep == 3) COHORT_RETURN_IF_ERROR(AgreeOnDropped(times, 1.25, out.dropped));
    for (size_t i = 0; i < candidates; ++i) {
      if (out.dropped[i]) continue;
      const ShmChoice choice = arm(i);
      const absl::Time start = absl::Now();
      COHORT_RETURN_IF_ERROR(Sync());
      COHORT_RETURN_IF_ERROR(
          RunAllreduce(choice, buffer, count, DataType::kFloat32, ReduceOp::kSum));
      COHORT_RETURN_IF_ERROR(Sync());
      if (rep > 0) times[i].push_back(absl::ToDoubleSeconds(absl::Now() - start));
    }
  }
  for (std::vector<double>& t : times) {
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    out.median.push_back(t[t.size() / 2]);
  }
  return out;
}

absl::Status ShmCommunicator::Impl::AgreeOnDropped(const std::vector<std::vector<double>>& times,
                                                   double slower, std::vector<bool>& dropped) {
  uint32_t mask = 0;
  if (rank() == 0) {
    auto fastest = [](const std::vector<double>& t) {
      return t.empty() ? std::numeric_limits<double>::infinity()
                       : *std::min_element(t.begin(), t.end());
    };
    double best = std::numeric_limits<double>::infinity();
    for (const std::vector<double>& t : times) best = std::min(best, fastest(t));
    for (size_t i = 0; i < times.size() && i < 32; ++i) {
      if (fastest(times[i]) > slower * best) mask |= uint32_t{1} << i;
    }
  }
  COHORT_RETURN_IF_ERROR(Broadcast(reinterpret_cast<char*>(&mask), sizeof(mask), 0));
  for (size_t i = 0; i < dropped.size() && i < 32; ++i) dropped[i] = (mask >> i) & 1;
  return absl::OkStatus();
}

absl::StatusOr<size_t> ShmCommunicator::Impl::AgreeOnPick(const Timings& timings) {
  std::vector<double> seconds = timings.median;
  for (size_t i = 0; i < seconds.size(); ++i) {
    if (timings.dropped[i]) seconds[i] = std::numeric_limits<double>::infinity();
  }
  uint32_t pick = rank() == 0 ? static_cast<uint32_t>(internal::PickShmCandidate(seconds)) : 0;
  COHORT_RETURN_IF_ERROR(Broadcast(reinterpret_cast<char*>(&pick), sizeof(pick), 0));
  if (pick >= seconds.size()) {
    return Fail(absl::InternalError(absl::StrCat("shm setup: rank 0 picked candidate ", pick,
                                                 " of ", seconds.size())));
  }
  return pick;
}

// The wait policy first (timed on the 64 KiB class, where barriers dominate), then each size
// class's path under it. Every rank runs the same sequence of collectives; only rank 0's clock
// decides, and every pick is broadcast before the next measurement uses it.
absl::StatusOr<ShmTuning> ShmCommunicator::Impl::Calibrate(const ShmMachine& machine) {
  const absl::Time start = absl::Now();
  tuning_ = internal::ConstantShmTuning(machine);  // measured in place: the paths read it
  tuning_.source = internal::ShmTuningSource::kMeasured;
  COHORT_RETURN_IF_ERROR(Begin("calibration"));
  // Measuring takes a fraction of a second, but a loaded machine may stretch it past a short
  // collective timeout; a dead peer is still noticed at once.
  deadline_ = std::max(deadline_, absl::Now() + kCalibrationDeadline);
  absl::StatusOr<MappedBuffer> buffer =
      MappedBuffer::Map(internal::kShmClassBytes[internal::kShmSizeClasses - 1]);
  if (!buffer.ok()) return Fail(buffer.status());
  COHORT_RETURN_IF_ERROR(TouchEveryRegion(machine, *buffer));
  COHORT_RETURN_IF_ERROR(CalibrateWait(machine, buffer->data()));
  for (int c = 0; c < internal::kShmSizeClasses; ++c) {
    COHORT_RETURN_IF_ERROR(CalibrateClass(machine, c, buffer->data()));
    COHORT_LOG(DEBUG) << "shm calibration: " << internal::kShmClassBytes[c] << "-byte class done "
                      << absl::FormatDuration(absl::Now() - start) << " after the start";
  }
  tuning_.calibration_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (rank() != 0) tuning_.measurements.clear();  // other ranks' clocks decided nothing
  return tuning_;
}

// Touches everything the candidates will (the whole buffer, both slots, the single-copy
// scratch) once before timing any: first uses of a region measured 5-30x slower than later
// ones on a 2-core VM (even with the pages populated), and would land on whichever candidate
// comes first (a staged 1 MiB allreduce timed at 6 ms instead of 0.15).
absl::Status ShmCommunicator::Impl::TouchEveryRegion(const ShmMachine& machine,
                                                     MappedBuffer& buffer) {
  const size_t count = buffer.size() / sizeof(float);
  for (const ShmChoice& c : internal::ShmPathCandidates(machine, internal::kShmSizeClasses - 1)) {
    for (int slot = 0; slot < kSlots; ++slot) {
      COHORT_RETURN_IF_ERROR(
          RunAllreduce(c, buffer.data(), count, DataType::kFloat32, ReduceOp::kSum));
    }
  }
  return absl::OkStatus();
}

absl::Status ShmCommunicator::Impl::CalibrateWait(const ShmMachine& machine, char* data) {
  const std::vector<internal::ShmWait> waits = internal::ShmWaitCandidates(machine);
  COHORT_ASSIGN_OR_RETURN(Timings timings, TimeCandidates(waits.size(), 1, [&](size_t i) {
                            tuning_.wait = waits[i];
                            return tuning_.classes[1];
                          }, data));
  COHORT_ASSIGN_OR_RETURN(size_t pick, AgreeOnPick(timings));
  tuning_.wait = waits[pick];
  for (size_t i = 0; i < waits.size(); ++i) {
    tuning_.measurements.push_back(
        {-1, internal::ShmWaitName(waits[i]), timings.median[i], i == pick});
  }
  return absl::OkStatus();
}

absl::Status ShmCommunicator::Impl::CalibrateClass(const ShmMachine& machine, int size_class,
                                                   char* data) {
  const std::vector<ShmChoice> paths = internal::ShmPathCandidates(machine, size_class);
  COHORT_ASSIGN_OR_RETURN(
      Timings timings,
      TimeCandidates(paths.size(), size_class, [&](size_t i) { return paths[i]; }, data));
  COHORT_ASSIGN_OR_RETURN(size_t pick, AgreeOnPick(timings));
  tuning_.classes[size_class] = paths[pick];
  for (size_t i = 0; i < paths.size(); ++i) {
    tuning_.measurements.push_back(
        {size_class, internal::ShmChoiceName(paths[i]), timings.median[i], i == pick});
  }
  return absl::OkStatus();
}

absl::Status ShmCommunicator::Impl::RunAllreduce(const ShmChoice& choice, char* data,
                                                 size_t count, DataType dtype, ReduceOp op) {
  if (choice.path == ShmPath::kCma && cma_ok_) {
    return RunCma(data, count, dtype, op, choice.chunk_bytes);
  }
  return RunPipeline(Kind::kAllreduce, data, count, dtype, op, choice.chunk_bytes);
}

absl::Status ShmCommunicator::Impl::ReadPeer(int r, uint64_t remote, char* local, size_t bytes) {
  while (bytes > 0) {
    struct iovec to = {local, bytes};
    struct iovec from = {reinterpret_cast<void*>(remote), bytes};
    ssize_t got = ::process_vm_readv(peers_[r].pid(), &to, 1, &from, 1, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      const int err = got < 0 ? errno : EIO;
      if (err == ESRCH || peers_[r].Exited()) {
        return absl::UnavailableError(absl::StrCat(
            "shm ", op_, ": ", group_.Name(r), " (pid ", peers_[r].pid(),
            ") exited in the middle of the collective: it died or was killed"));
      }
      return absl::InternalError(absl::StrCat("shm ", op_, ": reading ", bytes, " bytes of ",
                                              group_.Name(r), " with process_vm_readv: ",
                                              std::strerror(err)));
    }
    local += got;
    remote += static_cast<uint64_t>(got);
    bytes -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

// Single-copy allreduce: every rank publishes its buffer's address; rank r sums slice r of all
// buffers into its own (reading the peers' pieces chunk by chunk into cache-sized scratch), and
// after a barrier copies every other slice straight from its owner's buffer. A last barrier keeps
// each buffer untouched until every peer has read it.
absl::Status ShmCommunicator::Impl::RunCma(char* data, size_t count, DataType dtype,
                                           ReduceOp op, size_t chunk_bytes) {
  const int n = group_.size, me = group_.rank;
  const size_t esize = DataTypeSize(dtype);
  if (cma_chunks_.size() < static_cast<size_t>(n - 1) * chunk_bytes) {
    cma_chunks_.resize(static_cast<size_t>(n - 1) * chunk_bytes);
  }
  controls_[me].cma_address.store(reinterpret_cast<uint64_t>(data), std::memory_order_release);
  COHORT_RETURN_IF_ERROR(Sync());
  std::vector<uint64_t> remote(n);
  for (int r = 0; r < n; ++r) remote[r] = controls_[r].cma_address.load(std::memory_order_acquire);

  const size_t begin = internal::ShmSliceBegin(count, n, me);
  const size_t end = internal::ShmSliceBegin(count, n, me + 1);
  const size_t chunk_elems = std::max<size_t>(chunk_bytes / esize, 1);
  const void* srcs[internal::kMaxSumInputs];
  for (size_t at = begin; at < end; at += chunk_elems) {
    const size_t len = std::min(chunk_elems, end - at);
    char* mine = data + at * esize;
    srcs[0] = mine;
    int m = 1;
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      char* scratch = cma_chunks_.data() + static_cast<size_t>(m - 1) * chunk_bytes;
      absl::Status s = ReadPeer(r, remote[r] + at * esize, scratch, len * esize);
      if (!s.ok()) return Fail(s);
      srcs[m++] = scratch;
    }
    internal::SumMany(mine, srcs, n, len, dtype);
    if (op == ReduceOp::kAverage) internal::Divide(mine, len, dtype, n);
  }
  COHORT_RETURN_IF_ERROR(Sync());
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    const size_t r_begin = internal::ShmSliceBegin(count, n, r);
    const size_t r_end = internal::ShmSliceBegin(count, n, r + 1);
    absl::Status s = ReadPeer(r, remote[r] + r_begin * esize, data + r_begin * esize,
                              (r_end - r_begin) * esize);
    if (!s.ok()) return Fail(s);
  }
  return Sync();
}

absl::Status ShmCommunicator::Impl::Fail(absl::Status status) {
  broken_ = status;
  group_.rendezvous->ReportFailure(std::string(status.message()));
  return status;
}

absl::Status ShmCommunicator::Impl::Begin(const char* op) {
  if (!broken_.ok()) return broken_;
  absl::Status failure = group_.rendezvous->failure();
  if (!failure.ok()) {
    broken_ = Annotate(failure, absl::StrCat("shm ", op));
    return broken_;
  }
  op_ = op;
  deadline_ = absl::Now() + timeout_;
  return absl::OkStatus();
}

absl::Status ShmCommunicator::Impl::Sync() {
  const int me = group_.rank;
  ++seq_;
  // seq_cst pairs with the waiter's seq_cst increment of `waiters` followed by its re-read of
  // `seq` (Dekker): either the waiter sees the new value or this thread sees the waiter.
  controls_[me].seq.store(seq_, std::memory_order_seq_cst);
  if (controls_[me].waiters.load(std::memory_order_seq_cst) != 0) {
    internal::FutexWakeAll(&controls_[me].seq);
  }
  for (int r = 0; r < group_.size; ++r) {
    if (r == me || Arrived(r)) continue;
    COHORT_RETURN_IF_ERROR(WaitSlow(r));
  }
  return absl::OkStatus();
}

absl::Status ShmCommunicator::Impl::WaitSlow(int r) {
  for (uint32_t i = 0; i < tuning_.wait.spin_iterations; ++i) {
    _mm_pause();
    if (Arrived(r)) return absl::OkStatus();
  }
  for (uint32_t i = 0; i < tuning_.wait.yield_iterations; ++i) {
    ::sched_yield();
    if (Arrived(r)) return absl::OkStatus();
  }
  absl::Time notice_seen = absl::InfiniteFuture();
  RankControl& peer = controls_[r];
  while (true) {
    const uint32_t seen = peer.seq.load(std::memory_order_acquire);
    if (static_cast<int32_t>(seen - seq_) >= 0) return absl::OkStatus();
    // A peer that has not reached this barrier and has exited never will.
    for (int k = 0; k < group_.size; ++k) {
      if (k == group_.rank || Arrived(k) || !peers_[k].Exited()) continue;
      return Fail(absl::UnavailableError(absl::StrCat(
          "shm ", op_, ": ", group_.Name(k), " (pid ", peers_[k].pid(),
          ") exited in the middle of the collective: it died or was killed")));
    }
    const absl::Time now = absl::Now();
    if (now >= deadline_) {
      std::vector<std::string> missing;
      for (int k = 0; k < group_.size; ++k) {
        if (k != group_.rank && !Arrived(k)) missing.push_back(group_.Name(k));
      }
      return Fail(absl::DeadlineExceededError(absl::StrCat(
          "shm ", op_, " on ", group_.Name(group_.rank), ": deadline of ",
          absl::FormatDuration(timeout_), " exceeded waiting for ", absl::StrJoin(missing, ", "),
          " (stalled or not calling the same collective)")));
    }
    absl::Status failure = group_.rendezvous->failure();
    if (!failure.ok()) {
      notice_seen = std::min(notice_seen, now);
      if (now >= notice_seen + kNoticeGrace) {
        return Fail(Annotate(failure, absl::StrCat("shm ", op_, " waiting for ", group_.Name(r))));
      }
    }
    absl::Duration sleep = std::min(kPollInterval, deadline_ - now);
    peer.waiters.fetch_add(1, std::memory_order_seq_cst);
    if (peer.seq.load(std::memory_order_seq_cst) == seen) internal::FutexWait(&peer.seq, seen, sleep);
    peer.waiters.fetch_sub(1, std::memory_order_relaxed);
  }
}

// One round moves piece k of every rank's slice through the slots:
//   copy-in   each rank stages the pieces other ranks will reduce (its own stays in `data`)
//   barrier
//   reduce    each rank sums its own piece over all ranks in one pass (SumMany)
//   barrier   (allreduce only)
//   copy-out  each rank copies the reduced pieces back into `data`
// Every rank reads and writes each element of `data` once; slot traffic stays in cache.
absl::Status ShmCommunicator::Impl::RunPipeline(Kind kind, char* data, size_t count,
                                                DataType dtype, ReduceOp op, size_t slot_bytes) {
  const int n = group_.size, me = group_.rank;
  const size_t esize = DataTypeSize(dtype);
  const size_t piece_elems = internal::ShmPieceElems(std::min(slot_bytes, slot_bytes_), n, esize);
  const size_t piece_bytes = piece_elems * esize;
  const ShmLayout layout(count, n, piece_elems);
  const void* srcs[internal::kMaxSumInputs];
  for (size_t k = 0; k < layout.rounds(); ++k, ++round_) {
    char* mine = Slot(me, round_);
    if (kind == Kind::kAllgatherSlices) {
      ShmLayout::Piece p = layout.At(k, me);
      std::memcpy(mine + me * piece_bytes, data + p.begin * esize, p.count * esize);
    } else {
      for (int j = 0; j < n; ++j) {
        if (j == me) continue;
        ShmLayout::Piece p = layout.At(k, j);
        std::memcpy(mine + j * piece_bytes, data + p.begin * esize, p.count * esize);
      }
    }
    COHORT_RETURN_IF_ERROR(Sync());
    if (kind != Kind::kAllgatherSlices) {
      ShmLayout::Piece p = layout.At(k, me);
      srcs[0] = data + p.begin * esize;
      int m = 1;
      for (int r = 0; r < n; ++r) {
        if (r != me) srcs[m++] = Slot(r, round_) + me * piece_bytes;
      }
      void* dst = kind == Kind::kAllreduce ? static_cast<void*>(mine + me * piece_bytes)
                                           : static_cast<void*>(data + p.begin * esize);
      internal::SumMany(dst, srcs, n, p.count, dtype);
      if (op == ReduceOp::kAverage) internal::Divide(dst, p.count, dtype, n);
      if (kind == Kind::kReduceScatter) continue;
      COHORT_RETURN_IF_ERROR(Sync());
    }
    for (int j = 0; j < n; ++j) {
      if (kind == Kind::kAllgatherSlices && j == me) continue;
      ShmLayout::Piece p = layout.At(k, j);
      // Plain (cached) stores: measured faster than non-temporal ones here, even at 64 MiB,
      // and the caller usually reads the result right away (docs/performance.md).
      std::memcpy(data + p.begin * esize, Slot(j, round_) + j * piece_bytes, p.count * esize);
    }
  }
  return absl::OkStatus();
}

absl::Status ShmCommunicator::Impl::Broadcast(char* data, size_t bytes, int root) {
  for (size_t offset = 0; offset < bytes; offset += slot_bytes_, ++round_) {
    const size_t len = std::min(slot_bytes_, bytes - offset);
    if (group_.rank == root) std::memcpy(Slot(root, round_), data + offset, len);
    COHORT_RETURN_IF_ERROR(Sync());
    if (group_.rank != root) std::memcpy(data + offset, Slot(root, round_), len);
  }
  return absl::OkStatus();
}

// Each rank streams "<8-byte length><bytes>" through its slot, one slot per round; round 0
// tells everyone how many rounds the longest string needs. root < 0: everyone receives.
absl::StatusOr<std::vector<std::string>> ShmCommunicator::Impl::Gather(absl::string_view bytes,
                                                                       int root) {
  const int n = group_.size, me = group_.rank;
  std::string stream(8, '\0');
  const uint64_t length = bytes.size();
  std::memcpy(stream.data(), &length, 8);
  stream.append(bytes.data(), bytes.size());
  const bool receive = root < 0 || root == me;
  std::vector<std::string> streams(n);
  size_t longest = 0;
  for (size_t round = 0, total_rounds = 1; round < total_rounds; ++round, ++round_) {
    const size_t offset = round * slot_bytes_;
    if (offset < stream.size()) {
      std::memcpy(Slot(me, round_), stream.data() + offset,
                  std::min(slot_bytes_, stream.size() - offset));
    }
    COHORT_RETURN_IF_ERROR(Sync());
    for (int r = 0; r < n; ++r) {
      if (round == 0) {
        uint64_t len;
        std::memcpy(&len, Slot(r, round_), 8);
        longest = std::max<size_t>(longest, len);
        if (receive) streams[r].resize(8 + len);
      }
      if (!receive || r == me || offset >= streams[r].size()) continue;
      std::memcpy(streams[r].data() + offset, Slot(r, round_),
                  std::min(slot_bytes_, streams[r].size() - offset));
    }
    if (round == 0) total_rounds = (8 + longest + slot_bytes_ - 1) / slot_bytes_;
  }
  std::vector<std::string> out;
  if (!receive) return out;
  streams[me] = std::move(stream);
  out.reserve(n);
  for (auto& s : streams) out.push_back(s.substr(8));
  return out;
}

absl::StatusOr<std::unique_ptr<ShmCommunicator>> ShmCommunicator::Create(Group group,
                                                                         absl::Duration timeout) {
  Topology topology = group.rendezvous->topology();
  auto impl = std::make_unique<Impl>(group, timeout);
  if (group.size > internal::kMaxSumInputs) {
    return absl::InvalidArgumentError(absl::StrCat("shm transport supports at most ",
                                                   internal::kMaxSumInputs, " local ranks, got ",
                                                   group.size));
  }
  if (group.size > 1) {
    COHORT_ASSIGN_OR_RETURN(int64_t slot_bytes,
                            env::GetIntOr("COHORT_SHM_SLOT_BYTES", kDefaultSlotBytes));
    if (slot_bytes < 4096) {
      return absl::InvalidArgumentError(absl::StrCat(
          "COHORT_SHM_SLOT_BYTES=", slot_bytes, " is too small: use at least 4096"));
    }
    absl::Status s = impl->Setup(RoundUp(static_cast<size_t>(slot_bytes), 4096));
    if (!s.ok()) return Annotate(s, absl::StrCat(group.Name(group.rank), " creating the shm communicator"));
  }
  return std::unique_ptr<ShmCommunicator>(new ShmCommunicator(std::move(topology), std::move(impl)));
}

ShmCommunicator::ShmCommunicator(Topology topology, std::unique_ptr<Impl> impl)
    : Communicator(std::move(topology)), impl_(std::move(impl)) {}

ShmCommunicator::~ShmCommunicator() = default;

const internal::ShmTuning& ShmCommunicator::tuning() const { return impl_->tuning(); }

size_t ShmCommunicator::SliceBegin(size_t count, int size, int slice) {
  return internal::ShmSliceBegin(count, size, slice);
}

absl::Status ShmCommunicator::Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) {
  COHORT_RETURN_IF_ERROR(impl_->Begin("allreduce"));
  if (count == 0) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("shm allreduce: data is null");
  if (impl_->size() == 1) return absl::OkStatus();  // the average over one rank is the value
  return impl_->Allreduce(static_cast<char*>(data), count, dtype, op);
}

absl::Status ShmCommunicator::ReduceScatter(void* data, size_t count, DataType dtype) {
  COHORT_RETURN_IF_ERROR(impl_->Begin("reduce-scatter"));
  if (count == 0 || impl_->size() == 1) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("shm reduce-scatter: data is null");
  return impl_->RunPipeline(Impl::Kind::kReduceScatter, static_cast<char*>(data), count, dtype,
                            ReduceOp::kSum, SIZE_MAX);
}

absl::Status ShmCommunicator::AllgatherSlices(void* data, size_t count, DataType dtype) {
  COHORT_RETURN_IF_ERROR(impl_->Begin("allgather-slices"));
  if (count == 0 || impl_->size() == 1) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("shm allgather-slices: data is null");
  return impl_->RunPipeline(Impl::Kind::kAllgatherSlices, static_cast<char*>(data), count, dtype,
                            ReduceOp::kSum, SIZE_MAX);
}

absl::Status ShmCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= impl_->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shm broadcast: root ", root, " is not a rank of a group of ", impl_->size()));
  }
  COHORT_RETURN_IF_ERROR(impl_->Begin("broadcast"));
  if (bytes == 0 || impl_->size() == 1) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("shm broadcast: data is null");
  return impl_->Broadcast(static_cast<char*>(data), bytes, root);
}

absl::StatusOr<std::vector<std::string>> ShmCommunicator::Allgather(absl::string_view bytes) {
  COHORT_RETURN_IF_ERROR(impl_->Begin("allgather"));
  if (impl_->size() == 1) return std::vector<std::string>{std::string(bytes)};
  return impl_->Gather(bytes, -1);
}

absl::StatusOr<std::vector<std::string>> ShmCommunicator::Gather(absl::string_view bytes,
                                                                 int root) {
  if (root < 0 || root >= impl_->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shm gather: root ", root, " is not a rank of a group of ", impl_->size()));
  }
  COHORT_RETURN_IF_ERROR(impl_->Begin("gather"));
  if (impl_->size() == 1) return std::vector<std::string>{std::string(bytes)};
  return impl_->Gather(bytes, root);
}

absl::Status ShmCommunicator::Barrier() {
  COHORT_RETURN_IF_ERROR(impl_->Begin("barrier"));
  if (impl_->size() == 1) return absl::OkStatus();
  return impl_->Sync();
}

}  // namespace cohort::comm
