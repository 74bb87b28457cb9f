#include "comm/shm_communicator.h"

#include <immintrin.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "comm/internal/reduce_kernels.h"
#include "comm/internal/shm_layout.h"
#include "comm/internal/shm_segment.h"
#include "comm/internal/shm_sync.h"
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
// Allreduces of at least this many bytes copy straight between the ranks' own buffers with
// cross-memory attach (process_vm_readv) instead of staging through the segment: each element
// then crosses memory about 2.5 times per rank instead of 4.5 (docs/performance.md). Smaller
// buffers keep the staged path, whose cost is dominated by its barriers rather than copies.
constexpr size_t kDefaultCmaMinBytes = 1 << 20;
// Bytes of a peer's piece read per process_vm_readv during the reduction: small enough that the
// n-1 copies stay in L2 until they are summed.
constexpr size_t kCmaChunkBytes = 256 << 10;
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
  // Allreduce through process_vm_readv when every rank can use it and the buffer is large.
  bool UseCma(size_t bytes) const { return cma_ok_ && bytes >= cma_min_bytes_; }
  absl::Status RunCma(char* data, size_t count, DataType dtype, ReduceOp op);
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
  // With more ranks than cores a spinning waiter steals the core from the rank it waits for:
  // then waiters yield and sleep almost at once.
  int spin_iterations_ = 0;
  int yield_iterations_ = 0;

  bool cma_ok_ = false;
  size_t cma_min_bytes_ = kDefaultCmaMinBytes;
  uint64_t cma_probe_ = kCmaProbe;
  std::vector<char> cma_chunks_;  // (size - 1) * kCmaChunkBytes

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
  return ProbeCma();
}

absl::Status ShmCommunicator::Impl::ProbeCma() {
  const int n = group_.size, me = group_.rank;
  COHORT_ASSIGN_OR_RETURN(int64_t min_bytes,
                          env::GetIntOr("COHORT_SHM_CMA_MIN_BYTES",
                                        static_cast<int64_t>(kDefaultCmaMinBytes)));
  // 0 disables it (every rank then falls back, since a single "no" decides for all). By
  // default it is also off when ranks outnumber cores: time-sliced ranks reading each other's
  // buffers measured slower than the staged path there (4 ranks on 2 cores, 64 MiB: 2.3 vs
  // 3.1 GB/s); setting the variable turns it on regardless.
  const bool explicitly_set = !env::GetOr("COHORT_SHM_CMA_MIN_BYTES", "").empty();
  const bool wanted = min_bytes > 0 && (explicitly_set || n <= internal::UsableCores());
  cma_min_bytes_ = static_cast<size_t>(std::max<int64_t>(min_bytes, 1));
  // Under Yama (ptrace_scope 1) only a declared tracer may read this process; siblings are
  // not ancestors, so declare everyone. EINVAL without Yama: nothing to do.
  ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  controls_[me].cma_address.store(reinterpret_cast<uint64_t>(&cma_probe_),
                                  std::memory_order_release);
  COHORT_RETURN_IF_ERROR(Begin("setup"));
  COHORT_RETURN_IF_ERROR(Sync());
  bool ok = wanted;
  for (int r = 0; r < n && ok; ++r) {
    if (r == me) continue;
    uint64_t value = 0;
    absl::Status read = ReadPeer(r, controls_[r].cma_address.load(std::memory_order_acquire),
                                 reinterpret_cast<char*>(&value), sizeof(value));
    ok = read.ok() && value == kCmaProbe;
    if (!ok) {
      COHORT_LOG(WARNING) << group_.Name(me) << ": cross-memory attach to " << group_.Name(r)
                          << " is unavailable (" << (read.ok() ? "wrong value" : read.message())
                          << "); large allreduces take the slower staged path (a container "
                             "may need CAP_SYS_PTRACE)";
    }
  }
  controls_[me].cma_ok.store(ok ? 1 : 0, std::memory_order_release);
  COHORT_RETURN_IF_ERROR(Sync());
  cma_ok_ = true;
  for (int r = 0; r < n; ++r) cma_ok_ = cma_ok_ && controls_[r].cma_ok.load() == 1;
  // Nobody may overwrite cma_address (the next collective) before everyone has read the flags.
  COHORT_RETURN_IF_ERROR(Sync());
  if (cma_ok_) cma_chunks_.resize(static_cast<size_t>(n - 1) * kCmaChunkBytes);
  return absl::OkStatus();
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
                                           ReduceOp op) {
  const int n = group_.size, me = group_.rank;
  const size_t esize = DataTypeSize(dtype);
  controls_[me].cma_address.store(reinterpret_cast<uint64_t>(data), std::memory_order_release);
  COHORT_RETURN_IF_ERROR(Sync());
  std::vector<uint64_t> remote(n);
  for (int r = 0; r < n; ++r) remote[r] = controls_[r].cma_address.load(std::memory_order_acquire);

  const size_t begin = internal::ShmSliceBegin(count, n, me);
  const size_t end = internal::ShmSliceBegin(count, n, me + 1);
  const size_t chunk_elems = kCmaChunkBytes / esize;
  const void* srcs[internal::kMaxSumInputs];
  for (size_t at = begin; at < end; at += chunk_elems) {
    const size_t len = std::min(chunk_elems, end - at);
    char* mine = data + at * esize;
    srcs[0] = mine;
    int m = 1;
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      char* scratch = cma_chunks_.data() + static_cast<size_t>(m - 1) * kCmaChunkBytes;
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
  if (impl_->UseCma(count * DataTypeSize(dtype))) {
    return impl_->RunCma(static_cast<char*>(data), count, dtype, op);
  }
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
