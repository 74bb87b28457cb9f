#pragma once
// CheckSbatchArgs: which of a user's own sbatch arguments (an experiment's slurm.sbatch_args)
// Cohort passes on to sbatch. Cohort owns a job's script, name, size, environment, output and
// working directory, and must see it queue, start and end: an argument that would take one of
// these away is refused with the reason. Pure; thread-safe.
//
// Allowed, and nothing else (each exactly so spelled; sbatch's own abbreviations such as
// "--par" are refused):
//   --account/-A, --acctg-freq, --begin, --comment, --constraint/-C, --contiguous,
//   --core-spec/-S, --cores-per-socket, --cpu-freq, --cpus-per-gpu, --deadline, --delay-boot,
//   --distribution/-m, --exclude/-x, --exclusive[=...], --extra-node-info/-B, --gpu-bind,
//   --gpu-freq, --gpus/-G, --gpus-per-node, --gpus-per-socket, --gpus-per-task, --gres,
//   --gres-flags, --hint, --licenses/-L, --mail-type, --mail-user, --mem, --mem-bind,
//   --mem-per-cpu, --mem-per-gpu, --mincpus, --network, --nice[=...], --nodelist/-w,
//   --oversubscribe/-s, --power, --prefer, --qos/-q, --reservation, --signal,
//   --sockets-per-node, --spread-job, --switches, --thread-spec, --threads-per-core, --time/-t,
//   --time-min, --tmp, --use-min-nodes, --wckey.
// Refused with a reason: --wrap, --parsable, --array/-a, --export, --export-file,
// --get-user-env, --output/-o, --error/-e, --input/-i, --open-mode, --chdir/-D,
// --job-name/-J, --nodes/-N, --ntasks/-n, --ntasks-per-node, --ntasks-per-core,
// --ntasks-per-socket, --ntasks-per-gpu, --cpus-per-task/-c, --partition/-p, --hold/-H,
// --test-only, --wait/-W, --dependency/-d, --kill-on-invalid-dep, --requeue, --no-requeue,
// --no-kill/-k, --immediate/-I, --clusters/-M, --cluster-constraint, --uid, --gid,
// --quiet/-Q, --verbose/-v, --help/-h, --usage, --version/-V; and any other option.
//
// Forms: "--name" (an option without a value, or whose value is optional), "--name=value", and
// the pair "-X", "value" (or "-X" alone for a flag). A long option that needs a value takes it
// after '=' ("--time 10" is refused: "10" would be read as the batch script).
//
// Example:
//   CheckSbatchArgs({"--time=1:00:00", "-q", "high", "--exclusive"});  // OK
//   CheckSbatchArgs({"--array=1-4"});  // InvalidArgument: "... --array ... one job per trial"

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace cohort::slurm {

// The most arguments, and the longest argument, CheckSbatchArgs accepts.
inline constexpr size_t kMaxSbatchArgs = 64;
inline constexpr size_t kMaxSbatchArgBytes = 4096;

// OK when every argument is an allowed option in one of the forms above (values non-empty,
// without control characters). Otherwise InvalidArgument naming the first bad argument and
// why: refused (with the reason), unknown (with the list of allowed options), missing its value,
// not an option at all, too long, or too many arguments.
absl::Status CheckSbatchArgs(const std::vector<std::string>& args);

}  // namespace cohort::slurm
