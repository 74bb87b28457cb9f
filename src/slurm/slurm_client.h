#pragma once
// SlurmClient: the master's only way to talk to Slurm, through Slurm's own command-line tools
// (sbatch, squeue, scancel, sinfo), so that it works with whatever Slurm the cluster runs and
// needs no library of Slurm's at build time. Checked against Debian 12's Slurm 22.05.
//
// Every call runs one tool as a child process (common/subprocess.h) and:
//  * gives it SlurmOptions::timeout; a tool that has not finished by then is killed, and the
//    error (DeadlineExceeded) names the command;
//  * reads at most SlurmOptions::max_output_bytes of its output (stdout and stderr together);
//    more is ResourceExhausted naming the command;
//  * parses what it prints as untrusted text (slurm_output.h): a malformed line is skipped and
//    logged, never a crash;
//  * runs it with a small environment: PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TZ,
//    TMPDIR and SLURM_CONF from the master's, then SlurmOptions::env. Nothing else of the
//    master's environment (its secrets; SQUEUE_*/SBATCH_* variables that would change what
//    the tools do) reaches a tool or a job.
// Errors name the command and quote Slurm's own message: FailedPrecondition when a tool is
// missing or Slurm's configuration cannot be read, Unavailable when the controller cannot be
// reached or a tool fails otherwise, InvalidArgument when Slurm refuses a job (or JobSpec is
// bad before Slurm sees it).
//
// Thread-safe: the client holds only its options; calls may run concurrently (each its own
// processes). Each call blocks for at most about `timeout`.
//
// Example:
//   SlurmClient slurm({.env = {{"SLURM_CONF", "/etc/slurm/slurm.conf"}}});
//   COHORT_RETURN_IF_ERROR(slurm.Check());
//   COHORT_ASSIGN_OR_RETURN(int64_t id, slurm.Submit({.name = "cohort-e1-t3", .nodes = 2,
//                                                     .script = "#!/bin/sh\nsrun agent\n"}));
//   COHORT_ASSIGN_OR_RETURN(std::vector<JobInfo> jobs, slurm.Jobs({id}));

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "slurm/sbatch_args.h"
#include "slurm/slurm_output.h"

namespace cohort::slurm {

// One batch job. Submit checks it before Slurm sees it (see Submit).
struct JobSpec {
  std::string name;                        // --job-name
  std::string partition;                   // --partition (empty: Slurm's default)
  int nodes = 1;                           // --nodes
  int tasks_per_node = 1;                  // --ntasks-per-node
  int cpus_per_task = 0;                   // --cpus-per-task (0: not passed)
  std::string gres;                        // --gres (e.g. "gpu:2"; empty: none)
  std::vector<std::string> sbatch_args;    // the user's extra sbatch arguments (experiment's
                                           // slurm.sbatch_args), checked by CheckSbatchArgs
  std::string script;                      // the batch script's text ("#!/bin/sh\n...")
  std::map<std::string, std::string> env;  // the job's environment, on top of the master's PATH,
                                           // HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE
  std::string work_dir;                    // --chdir (empty: not passed)
  std::string output;                      // --output (empty: Slurm's default)
};

struct SlurmOptions {
  std::string bin_dir;                         // where sbatch etc. are; empty: PATH
  std::map<std::string, std::string> env;      // added to every tool's environment (SLURM_CONF)
  absl::Duration timeout = absl::Seconds(30);  // per tool call
  size_t max_output_bytes = 4 << 20;           // per tool call; more is an error
};

class SlurmClient {
 public:
  explicit SlurmClient(SlurmOptions options);

  // OK when `sinfo --version` runs. Otherwise FailedPrecondition saying what is missing: the
  // tool (install slurm-wlm, or set bin_dir / PATH), or the configuration (SLURM_CONF naming a
  // file that does not exist is caught before Slurm's own 60 s of retries; Slurm's message
  // otherwise). Does not contact the controller.
  absl::Status Check() const;

  // Submits the job with `sbatch --parsable --no-requeue` (a failed trial is Cohort's to
  // restart, not Slurm's) and returns its id. The script and the job's environment go through
  // private temporary files (removed before returning); the environment reaches the job with
  // --export-file, so no value of spec.env is ever in sbatch's own environment.
  // InvalidArgument before running sbatch when: the name is empty, longer than 200 bytes or not
  // [A-Za-z0-9._-]; the partition is not [A-Za-z0-9._-] or the gres not [A-Za-z0-9._:,=+-];
  // nodes or tasks_per_node < 1, or cpus_per_task < 0; the script does not start with "#!" or
  // holds a "#SBATCH" line (options go through JobSpec); an env name is not
  // [A-Za-z_][A-Za-z0-9_]* or starts with SLURM_ or SBATCH_, or a value holds a NUL; work_dir or
  // output hold a control character; sbatch_args fail CheckSbatchArgs. InvalidArgument quoting
  // sbatch when Slurm refuses the job (an unknown partition, an impossible gres).
  // DeadlineExceeded (sbatch did not answer in time) and Unknown (sbatch exited 0 without an
  // id) say that the job may have been submitted: JobsNamed finds it by its name.
  // Note: with Slurm's default EnforcePartLimits=NO, a job that asks more nodes or CPUs than its
  // partition has is accepted and stays PENDING for ever, its reason "PartitionConfig" or
  // "PartitionNodeLimit" (Slurm gives either, and may change from one to the other).
  absl::StatusOr<int64_t> Submit(const JobSpec& spec) const;

  // What Slurm says of these jobs: `squeue -t all`, which lists live jobs and finished ones for
  // the controller's MinJobAge (300 s by default) after they end. A job Slurm no longer knows
  // is absent from the answer (in Slurm's order, each id at most once; ids not asked for are
  // dropped). Unavailable when squeue printed malformed lines and an asked-for job is absent
  // (its absence would not be Slurm's word). An empty `ids` is an empty answer, without squeue.
  absl::StatusOr<std::vector<JobInfo>> Jobs(const std::vector<int64_t>& ids) const;

  // The live (not IsFinished) jobs of the master's user (squeue --me) whose name starts with
  // `prefix`, for re-adoption after a restart. Malformed lines (another job's odd name) are
  // skipped and logged.
  absl::StatusOr<std::vector<JobInfo>> JobsNamed(const std::string& prefix) const;

  // Without a signal: `scancel ID` (Slurm sends SIGCONT and SIGTERM to the job's processes,
  // SIGKILL after KillWait, and the job ends CANCELLED). With one: `scancel --signal=SIG --full
  // ID`, which only signals every process of the job, its batch shell included; the job ends
  // as its script decides. A job already finished or unknown to Slurm is OK. InvalidArgument for
  // an id < 1 or a signal outside 1..64.
  absl::Status Cancel(int64_t id, std::optional<int> signal = std::nullopt) const;

  // Slurm's nodes (`sinfo -N`) in `partition`, or all nodes when it is empty, each once, in
  // Slurm's order, with every partition it is in (of those listed). NotFound when a named
  // partition lists no node (sinfo does not tell an unknown partition from an empty one).
  absl::StatusOr<std::vector<NodeInfo>> Nodes(const std::string& partition) const;

 private:
  SlurmOptions options_;
};

}  // namespace cohort::slurm
