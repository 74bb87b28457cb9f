#include "comm/shm_communicator.h"

#include <immintrin.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "comm/internal/reduce_kernels.h"
#include "comm/internal/shm_layout.h"
#include "comm/internal/shm_segment.h"
#include "comm/internal/shm_sync.h"
#include "common/env.h"
#include "common/status_macros.h"

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

}  // namespace

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
  absl::Status RunPipeline(Kind kind, char* data, size_t count, DataType dtype, ReduceOp op);
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

  Group group_;
  absl::Duration timeout_;
  std::optional<ShmSegment> segment_;
  RankControl* controls_ = nullptr;
  char* data_ = nullptr;
  size_t slot_bytes_ = 0;
  std::vector<PeerProcess> peers_;
  std::shared_ptr<FailureWaker> waker_;
  // With more ranks than cores a spinning waiter steals the core from the rank it waits for:
  // then waiters yield and sleep almost at once.
  int spin_iterations_ = 0;
  int yield_iterations_ = 0;

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
  // peer rank or a compiler, wants it), then sleep on the futex. Oversubscribed: barely spin.
  const bool oversubscribed = n > internal::UsableCores();
  spin_iterations_ = oversubscribed ? 64 : 1024;
  yield_iterations_ = oversubscribed ? 16 : 1024;

  waker_ = std::make_shared<FailureWaker>();
  waker_->controls = controls_;
  waker_->size = n;
  std::weak_ptr<FailureWaker> weak = waker_;
  group_.rendezvous->OnFailure([weak] {
    if (auto waker = weak.lock()) waker->WakeAll();
  });
  return absl::OkStatus();
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
  for (int i = 0; i < spin_iterations_; ++i) {
    _mm_pause();
    if (Arrived(r)) return absl::OkStatus();
  }
  for (int i = 0; i < yield_iterations_; ++i) {
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
                                                DataType dtype, ReduceOp op) {
  const int n = group_.size, me = group_.rank;
  const size_t esize = DataTypeSize(dtype);
  const size_t piece_elems = internal::ShmPieceElems(slot_bytes_, n, esize);
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

size_t ShmCommunicator::SliceBegin(size_t count, int size, int slice) {
  return internal::ShmSliceBegin(count, size, slice);
}

absl::Status ShmCommunicator::Allreduce(void* data, size_t count, DataType dtype, ReduceOp op) {
  COHORT_RETURN_IF_ERROR(impl_->Begin("allreduce"));
  if (count == 0) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("shm allreduce: data is null");
  if (impl_->size() == 1) return absl::OkStatus();  // the average over one rank is the value
  return impl_->RunPipeline(Impl::Kind::kAllreduce, static_cast<char*>(data), count, dtype, op);
}

absl::Status ShmCommunicator::ReduceScatter(void* data, size_t count, DataType dtype) {
  COHORT_RETURN_IF_ERROR(impl_->Begin("reduce-scatter"));
  if (count == 0 || impl_->size() == 1) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("shm reduce-scatter: data is null");
  return impl_->RunPipeline(Impl::Kind::kReduceScatter, static_cast<char*>(data), count, dtype,
                            ReduceOp::kSum);
}

absl::Status ShmCommunicator::AllgatherSlices(void* data, size_t count, DataType dtype) {
  COHORT_RETURN_IF_ERROR(impl_->Begin("allgather-slices"));
  if (count == 0 || impl_->size() == 1) return absl::OkStatus();
  if (data == nullptr) return absl::InvalidArgumentError("shm allgather-slices: data is null");
  return impl_->RunPipeline(Impl::Kind::kAllgatherSlices, static_cast<char*>(data), count, dtype,
                            ReduceOp::kSum);
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
