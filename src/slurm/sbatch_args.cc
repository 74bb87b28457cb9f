#include "slurm/sbatch_args.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/terminal_text.h"

namespace cohort::slurm {
namespace {

enum class Value { kNone, kRequired, kOptional };

struct SbatchOption {
  absl::string_view name;  // without "--"
  char short_name;         // 0: none
  Value value;
  absl::string_view refusal;  // empty: allowed
};

constexpr absl::string_view kScript = "Cohort writes the batch script";
constexpr absl::string_view kEnv = "Cohort sets the job's environment (the experiment's own)";
constexpr absl::string_view kOutput = "Cohort places the job's input and output";
constexpr absl::string_view kSize =
    "the experiment's resources set the job's nodes, tasks and CPUs";
constexpr absl::string_view kStart = "Cohort must see the job queue and start";
constexpr absl::string_view kAnswer = "it changes sbatch's answer, which Cohort reads";
constexpr absl::string_view kOrder = "Cohort orders its jobs itself";
constexpr absl::string_view kRequeue =
    "Cohort restarts failed trials itself (its jobs are submitted with --no-requeue)";

constexpr SbatchOption kOptions[] = {
    {"account", 'A', Value::kRequired, ""},
    {"acctg-freq", 0, Value::kRequired, ""},
    {"begin", 0, Value::kRequired, ""},
    {"comment", 0, Value::kRequired, ""},
    {"constraint", 'C', Value::kRequired, ""},
    {"contiguous", 0, Value::kNone, ""},
    {"core-spec", 'S', Value::kRequired, ""},
    {"cores-per-socket", 0, Value::kRequired, ""},
    {"cpu-freq", 0, Value::kRequired, ""},
    {"cpus-per-gpu", 0, Value::kRequired, ""},
    {"deadline", 0, Value::kRequired, ""},
    {"delay-boot", 0, Value::kRequired, ""},
    {"distribution", 'm', Value::kRequired, ""},
    {"exclude", 'x', Value::kRequired, ""},
    {"exclusive", 0, Value::kOptional, ""},
    {"extra-node-info", 'B', Value::kRequired, ""},
    {"gpu-bind", 0, Value::kRequired, ""},
    {"gpu-freq", 0, Value::kRequired, ""},
    {"gpus", 'G', Value::kRequired, ""},
    {"gpus-per-node", 0, Value::kRequired, ""},
    {"gpus-per-socket", 0, Value::kRequired, ""},
    {"gpus-per-task", 0, Value::kRequired, ""},
    {"gres", 0, Value::kRequired, ""},
    {"gres-flags", 0, Value::kRequired, ""},
    {"hint", 0, Value::kRequired, ""},
    {"licenses", 'L', Value::kRequired, ""},
    {"mail-type", 0, Value::kRequired, ""},
    {"mail-user", 0, Value::kRequired, ""},
    {"mem", 0, Value::kRequired, ""},
    {"mem-bind", 0, Value::kRequired, ""},
    {"mem-per-cpu", 0, Value::kRequired, ""},
    {"mem-per-gpu", 0, Value::kRequired, ""},
    {"mincpus", 0, Value::kRequired, ""},
    {"network", 0, Value::kRequired, ""},
    {"nice", 0, Value::kOptional, ""},
    {"nodelist", 'w', Value::kRequired, ""},
    {"oversubscribe", 's', Value::kNone, ""},
    {"power", 0, Value::kRequired, ""},
    {"prefer", 0, Value::kRequired, ""},
    {"qos", 'q', Value::kRequired, ""},
    {"reservation", 0, Value::kRequired, ""},
    {"signal", 0, Value::kRequired, ""},
    {"sockets-per-node", 0, Value::kRequired, ""},
    {"spread-job", 0, Value::kNone, ""},
    {"switches", 0, Value::kRequired, ""},
    {"thread-spec", 0, Value::kRequired, ""},
    {"threads-per-core", 0, Value::kRequired, ""},
    {"time", 't', Value::kRequired, ""},
    {"time-min", 0, Value::kRequired, ""},
    {"tmp", 0, Value::kRequired, ""},
    {"use-min-nodes", 0, Value::kNone, ""},
    {"wckey", 0, Value::kRequired, ""},
    // Refused: what Cohort must keep.
    {"wrap", 0, Value::kRequired, kScript},
    {"parsable", 0, Value::kNone, kAnswer},
    {"array", 'a', Value::kRequired, "Cohort runs one job per trial, not job arrays"},
    {"export", 0, Value::kRequired, kEnv},
    {"export-file", 0, Value::kRequired, kEnv},
    {"get-user-env", 0, Value::kOptional, kEnv},
    {"output", 'o', Value::kRequired, kOutput},
    {"error", 'e', Value::kRequired, kOutput},
    {"input", 'i', Value::kRequired, kOutput},
    {"open-mode", 0, Value::kRequired, kOutput},
    {"chdir", 'D', Value::kRequired, "Cohort sets the job's working directory"},
    {"job-name", 'J', Value::kRequired,
     "Cohort names its jobs (it finds them again by name after a restart)"},
    {"nodes", 'N', Value::kRequired, kSize},
    {"ntasks", 'n', Value::kRequired, kSize},
    {"ntasks-per-node", 0, Value::kRequired, kSize},
    {"ntasks-per-core", 0, Value::kRequired, kSize},
    {"ntasks-per-socket", 0, Value::kRequired, kSize},
    {"ntasks-per-gpu", 0, Value::kRequired, kSize},
    {"cpus-per-task", 'c', Value::kRequired, kSize},
    {"partition", 'p', Value::kRequired, "the experiment's slurm.partition sets it"},
    {"hold", 'H', Value::kNone, kStart},
    {"test-only", 0, Value::kNone, "the job would not be submitted"},
    {"wait", 'W', Value::kNone, "sbatch would not return until the job ends"},
    {"dependency", 'd', Value::kRequired, kOrder},
    {"kill-on-invalid-dep", 0, Value::kRequired, kOrder},
    {"requeue", 0, Value::kNone, kRequeue},
    {"no-requeue", 0, Value::kNone, kRequeue},
    {"no-kill", 'k', Value::kOptional, "Cohort must see a node's failure end the job"},
    {"immediate", 'I', Value::kOptional, kStart},
    {"clusters", 'M', Value::kRequired, "Cohort talks to one cluster"},
    {"cluster-constraint", 0, Value::kRequired, "Cohort talks to one cluster"},
    {"uid", 0, Value::kRequired, "the job runs as the master's user"},
    {"gid", 0, Value::kRequired, "the job runs as the master's user"},
    {"quiet", 'Q', Value::kNone, kAnswer},
    {"verbose", 'v', Value::kNone, kAnswer},
    {"help", 'h', Value::kNone, kAnswer},
    {"usage", 0, Value::kNone, kAnswer},
    {"version", 'V', Value::kNone, kAnswer},
};

const SbatchOption* FindLong(absl::string_view name) {
  for (const SbatchOption& o : kOptions) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

const SbatchOption* FindShort(char c) {
  for (const SbatchOption& o : kOptions) {
    if (o.short_name != 0 && o.short_name == c) return &o;
  }
  return nullptr;
}

std::string AllowedList() {
  std::vector<std::string> names;
  for (const SbatchOption& o : kOptions) {
    if (o.refusal.empty()) names.push_back(absl::StrCat("--", o.name));
  }
  return absl::StrJoin(names, ", ");
}

absl::Status Bad(absl::string_view arg, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("sbatch argument '", EscapeControl(arg.substr(0, 200)), "' ", why));
}

absl::Status CheckKnown(absl::string_view arg, const SbatchOption* option) {
  if (option == nullptr) {
    return Bad(
        arg, absl::StrCat("is not one Cohort passes on to sbatch (allowed: ", AllowedList(), ")"));
  }
  if (!option->refusal.empty()) {
    return Bad(arg, absl::StrCat("is refused: ", option->refusal));
  }
  return absl::OkStatus();
}

// "--name" or "--name=value".
absl::Status CheckLong(absl::string_view arg) {
  const size_t eq = arg.find('=');
  const absl::string_view name = arg.substr(2, eq == absl::string_view::npos ? eq : eq - 2);
  const SbatchOption* option = FindLong(name);
  if (absl::Status s = CheckKnown(arg, option); !s.ok()) return s;
  if (eq == absl::string_view::npos) {
    if (option->value != Value::kRequired) return absl::OkStatus();
    return Bad(arg, absl::StrCat("needs a value: --", name, "=VALUE"));
  }
  if (option->value == Value::kNone) return Bad(arg, "takes no value");
  if (eq + 1 == arg.size()) return Bad(arg, "has an empty value");
  return absl::OkStatus();
}

// "-X" (a flag), or "-X" followed by its value in args[*i + 1] (then *i moves past it).
absl::Status CheckShort(const std::vector<std::string>& args, size_t* i) {
  const absl::string_view arg = args[*i];
  if (arg.size() != 2) {
    return Bad(arg, "is not an option Cohort passes on (write \"-X\", \"VALUE\" or --name=VALUE)");
  }
  const SbatchOption* option = FindShort(arg[1]);
  if (absl::Status s = CheckKnown(arg, option); !s.ok()) return s;
  if (option->value != Value::kRequired) return absl::OkStatus();
  if (*i + 1 >= args.size() || args[*i + 1].empty()) {
    return Bad(arg, absl::StrCat("needs a value after it (or --", option->name, "=VALUE)"));
  }
  ++*i;
  return absl::OkStatus();
}

bool HasControl(absl::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

}  // namespace

absl::Status CheckSbatchArgs(const std::vector<std::string>& args) {
  if (args.size() > kMaxSbatchArgs) {
    return absl::InvalidArgumentError(absl::StrCat("too many sbatch arguments: ", args.size(),
                                                   " (at most ", kMaxSbatchArgs, ")"));
  }
  for (const std::string& arg : args) {
    if (arg.size() > kMaxSbatchArgBytes) {
      return Bad(arg, absl::StrCat("is longer than ", kMaxSbatchArgBytes, " bytes"));
    }
    if (HasControl(arg)) return Bad(arg, "holds a control character");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const absl::string_view arg = args[i];
    absl::Status status;
    if (absl::StartsWith(arg, "--") && arg.size() > 2) {
      status = CheckLong(arg);
    } else if (absl::StartsWith(arg, "-") && arg.size() > 1 && arg[1] != '-') {
      status = CheckShort(args, &i);
    } else {
      status = Bad(arg, "is not an option (sbatch would take it as the batch script)");
    }
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace cohort::slurm
