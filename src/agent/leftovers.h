#pragma once
// What an agent leaves behind when it dies without stopping its trials (SIGKILL, a crash, the
// machine's OOM killer), and how its next run finds and stops it.
//
// Every process of an allocation (cohort-launch, its workers, whatever they start) carries
// kWorkDirMarker=<the agent's work directory> in its environment. The launcher gets
// PR_SET_PDEATHSIG (Subprocess) and gives its workers the same, so they die with the agent; a
// process they started themselves (a shell's background job) may outlive them. An agent that
// starts first takes its work directory's lock (common/directory_lock.h) and then stops every
// process that carries its work directory's marker (StopMarked) and whose agent (kOwnerMarker)
// is no longer alive. The marker is read from
// /proc/PID/environ just before the signal, so a pid reused by an unrelated process is never
// signalled. A process that cleared its environment escapes this (docs/reliability.md).
// The same marking with kAllocationMarker lets an AllocationRun stop what its trial left running
// once cohort-launch has exited.
//
// Thread-safe: StopMarked keeps no state (Agent::Run calls it at start, each AllocationRun at
// its end).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cohort::agent {

// The environment variables that mark an allocation's processes, set by the agent for itself
// (not a protocol: nothing else reads them): its work directory, for its next run, and the
// allocation's directory, to stop what a trial leaves running after its launcher exited.
inline constexpr char kWorkDirMarker[] = "COHORT_AGENT_WORK_DIR";
inline constexpr char kAllocationMarker[] = "COHORT_AGENT_ALLOCATION_DIR";
// Which agent process started them: "PID:START" (its start time in clock ticks since boot,
// /proc/PID/stat), so that a process whose agent still runs is never taken for a leftover,
// whatever its work directory's path says (a directory deleted and made again, a second agent
// in another network namespace on the same path).
inline constexpr char kOwnerMarker[] = "COHORT_AGENT_OWNER";

// This process's "PID:START", the value of kOwnerMarker for what it starts.
std::string OwnerTag();
// Process `pid`'s "PID:START" ("PID:" when it is gone).
std::string OwnerTagOf(int pid);
// Whether the process an owner tag names still runs (the same pid with the same start time).
bool OwnerAlive(const std::string& tag);

// Whether process `pid` carries `marker`=`value` in its environment (false when it cannot be
// read: gone, or another user's).
bool CarriesMarker(int pid, const std::string& marker, const std::string& value);

// The processes of this user whose environment holds `marker`=`value` (this process aside),
// SIGKILLed, each logged, and waited for (at most `timeout`; zombies count as gone). A process
// whose kOwnerMarker names another agent that still runs is left alone (and logged): it is that
// agent's, not a leftover. Returns how many were stopped; DeadlineExceeded naming the pids
// still there.
absl::StatusOr<int> StopMarked(const std::string& marker, const std::string& value,
                               absl::Duration timeout);

}  // namespace cohort::agent
