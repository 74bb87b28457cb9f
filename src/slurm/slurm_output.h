#pragma once
// What Slurm's command-line tools say of jobs and nodes, as values, and the parsers that read
// their text. Slurm's output is untrusted input (a job's name is any text its submitter chose,
// newlines included; an administrator's reason is free text): every parser here is pure,
// bounded, and answers a malformed line with an error, never a crash. Pure; thread-safe.
//
// The formats read are the ones SlurmClient asks for (slurm_client.cc), checked against
// Debian 12's Slurm 22.05:
//   squeue -h -O 'JobID:␟,State:␟,Reason:␟,exit_code:␟,TimeLimit:␟,NodeList:␟,Name:'
//   sinfo -N -h -O 'NodeList:␟,StateLong:␟,CPUsState:␟,Partition:␟,Reason:'
// with ␟ the ASCII unit separator (kFieldSeparator), and the free-text field (a job's name, a
// node's reason) last, so that whatever it holds stays in it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cohort::slurm {

// A job's state, from Slurm's long state word (squeue's %T, scontrol's JobState).
enum class JobState {
  kPending,
  kConfiguring,
  kRunning,
  kCompleting,
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kNodeFail,
  kPreempted,
  kOutOfMemory,
  kBootFail,
  kDeadline,
  kSuspended,
  kUnknown,
};

// True when the job will not run (again): completed, failed, cancelled, timed out, node failure,
// preempted, out of memory, boot failure, deadline. A job that is pending, running, completing
// (its processes are still being stopped), suspended or in an unknown state is not finished.
bool IsFinished(JobState state);
// "PENDING", "RUNNING", ..., "UNKNOWN": Slurm's word for the state.
std::string_view JobStateName(JobState state);
// Slurm's state word (with anything after it, "CANCELLED by 0", ignored) as a JobState. Slurm's
// rarer words map onto the nearest: REQUEUED, REQUEUE_HOLD, REQUEUE_FED, RESV_DEL_HOLD and
// SPECIAL_EXIT (the job waits to run again) to kPending; SIGNALING and RESIZING to kRunning;
// STAGE_OUT to kCompleting; STOPPED to kSuspended; REVOKED to kCancelled. Any other word:
// kUnknown.
JobState ParseJobState(absl::string_view word);

struct JobInfo {
  int64_t id = 0;
  std::string name;
  JobState state = JobState::kUnknown;
  std::string state_text;  // Slurm's word, e.g. "PENDING"
  std::string reason;      // Slurm's reason ("Resources", "Priority", "None", "NodeDown", ...)
  std::vector<std::string> nodes;  // expanded node names, in Slurm's order (empty while pending)
  int exit_code = 0;    // once finished: the batch script's exit status (0 when signalled)
  int exit_signal = 0;  // once finished: the signal that ended the batch script, or 0
  absl::Duration time_limit = absl::InfiniteDuration();  // UNLIMITED (or not said): infinite
};

struct NodeInfo {
  std::string name;
  std::string state;    // Slurm's state lowercase ("idle", "mixed", "allocated", "down*", ...)
  bool usable = false;  // takes jobs: see IsUsableNodeState
  int cpus = 0, cpus_allocated = 0;
  std::vector<std::string> partitions;  // without the default partition's '*'
  std::string reason;                   // why down/drained, when Slurm says (empty: none)
};

// Separates the fields of the lines SlurmClient asks squeue and sinfo for.
inline constexpr char kFieldSeparator = '\x1f';
// The most names one node list may expand to ("n[1-999999999]" is refused, not built).
inline constexpr size_t kMaxHostListNames = 65536;

// Expands a Slurm node list: "n[1-3,5],gpu[01-02],login" -> n1 n2 n3 n5 gpu01 gpu02 login, in
// order, leading zeros kept (a range's width is its first number's). Several brackets in one
// name expand as their product ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). "" and "(null)" are the
// empty list. InvalidArgument naming the problem for an unbalanced bracket, a range that is not
// low-high numbers, or more than kMaxHostListNames names.
absl::StatusOr<std::vector<std::string>> ExpandHostList(absl::string_view list);

// One line of squeue's answer in the format above. InvalidArgument (naming what is wrong) when
// it has too few fields or its id is not a positive number (an array's task, "12_3", included).
// Fields past the id are read leniently: an unknown state word is kUnknown, an unreadable exit
// status is 0, an unreadable node list leaves `nodes` empty, an unreadable time limit is
// infinite.
absl::StatusOr<JobInfo> ParseSqueueLine(absl::string_view line);

// One line of `sinfo -N` in the format above: a node in one partition. InvalidArgument when it
// has too few fields, an empty name, or a CPU count that is not A/I/O/T numbers.
absl::StatusOr<NodeInfo> ParseSinfoLine(absl::string_view line);

// Whether a node in Slurm's long state (lowercase) takes jobs: its base state is idle, mixed,
// allocated or completing, and no flag says it is not responding ('*'), powered down or
// powering ('~', '#', '%', '!'), or draining ("drain" in the word). Down, drained, fail,
// failing, future, inval, maint, reserved, unknown and anything else: false.
bool IsUsableNodeState(absl::string_view state);

// The job id in `sbatch --parsable`'s answer ("123" or "123;cluster" on a line of its own; other
// lines, Slurm's warnings, are ignored). InvalidArgument quoting the answer when no line or
// more than one line is an id.
absl::StatusOr<int64_t> ParseSbatchAnswer(absl::string_view output);

// A Slurm duration: "UNLIMITED", "[days-]hours:minutes:seconds", "minutes:seconds", "minutes".
// UNLIMITED and INFINITE are absl::InfiniteDuration(). InvalidArgument for anything else.
absl::StatusOr<absl::Duration> ParseSlurmDuration(absl::string_view text);

}  // namespace cohort::slurm
