#include "slurm/slurm_client.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "common/private_file.h"
#include "common/terminal_text.h"
#include "slurm/internal/tool_runner.h"

namespace cohort::slurm {
namespace {

using internal::RunTool;
using internal::ToolFailure;
using internal::ToolResult;

// The variables of the master's environment a job gets (then JobSpec::env).
constexpr const char* kJobEnvironment[] = {"PATH", "HOME",   "USER",    "LOGNAME",
                                           "LANG", "LC_ALL", "LC_CTYPE"};
constexpr size_t kMaxJobNameBytes = 200;
constexpr int kMaxLoggedLines = 3;

std::string Fields(std::initializer_list<const char*> names) {
  std::vector<std::string> fields;
  for (const char* name : names) {
    fields.push_back(absl::StrCat(name, ":", absl::string_view(&kFieldSeparator, 1)));
  }
  fields.back().pop_back();  // the last field, free text, runs to the end of the line
  return absl::StrJoin(fields, ",");
}

// The formats slurm_output.h parses.
std::string SqueueFormat() {
  return Fields({"JobID", "State", "Reason", "exit_code", "TimeLimit", "NodeList", "Name"});
}
std::string SinfoFormat() {
  return Fields({"NodeList", "StateLong", "CPUsState", "Partition", "Reason"});
}

// Every non-empty line of `output` that `parse` accepts; the others are counted in *malformed
// and the first few logged.
template <typename T, typename Parse>
std::vector<T> ParseLines(const std::string& output, Parse parse, const char* tool,
                          int* malformed) {
  std::vector<T> values;
  for (absl::string_view line : absl::StrSplit(output, '\n', absl::SkipWhitespace())) {
    absl::StatusOr<T> value = parse(line);
    if (value.ok()) {
      values.push_back(*std::move(value));
      continue;
    }
    if (++*malformed <= kMaxLoggedLines) {
      COHORT_LOG(WARNING) << tool
                          << ": skipped a line Cohort cannot read: " << value.status().message();
    }
  }
  return values;
}

bool Matches(absl::string_view text, absl::string_view allowed_punctuation) {
  return std::all_of(text.begin(), text.end(), [&](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           absl::StrContains(allowed_punctuation, c);
  });
}

bool HasControl(absl::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

absl::Status BadSpec(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("Slurm job ", field, " ", why));
}

absl::Status CheckScript(const std::string& script) {
  if (!absl::StartsWith(script, "#!")) {
    return BadSpec("script", "does not start with \"#!\" (sbatch needs an interpreter line)");
  }
  for (absl::string_view line : absl::StrSplit(script, '\n')) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#SBATCH")) {
      return BadSpec(
          "script", absl::StrCat("holds an sbatch directive ('", EscapeControl(line.substr(0, 100)),
                                 "'): options go through the job's settings"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEnv(const std::map<std::string, std::string>& env) {
  for (const auto& [name, value] : env) {
    const bool identifier = !name.empty() && !absl::ascii_isdigit(name[0]) && Matches(name, "_");
    if (!identifier) {
      return BadSpec("environment", absl::StrCat("variable name '", EscapeControl(name),
                                                 "' is not [A-Za-z_][A-Za-z0-9_]*"));
    }
    if (absl::StartsWith(name, "SLURM_") || absl::StartsWith(name, "SBATCH_")) {
      return BadSpec("environment", absl::StrCat("variable ", name, " is Slurm's own"));
    }
    if (value.find('\0') != std::string::npos) {
      return BadSpec("environment", absl::StrCat("variable ", name, " holds a NUL byte"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSpec(const JobSpec& spec) {
  if (spec.name.empty() || spec.name.size() > kMaxJobNameBytes || !Matches(spec.name, "._-")) {
    return BadSpec("name", absl::StrCat("'", EscapeControl(spec.name.substr(0, 300)),
                                        "' is not 1 to 200 of [A-Za-z0-9._-]"));
  }
  if (!Matches(spec.partition, "._-")) {
    return BadSpec("partition", absl::StrCat("'", EscapeControl(spec.partition.substr(0, 300)),
                                             "' is not [A-Za-z0-9._-]"));
  }
  if (!Matches(spec.gres, "._:,=+-")) {
    return BadSpec("gres", absl::StrCat("'", EscapeControl(spec.gres.substr(0, 300)),
                                        "' is not [A-Za-z0-9._:,=+-]"));
  }
  if (spec.nodes < 1 || spec.tasks_per_node < 1 || spec.cpus_per_task < 0) {
    return BadSpec("size", absl::StrCat("(nodes ", spec.nodes, ", tasks_per_node ",
                                        spec.tasks_per_node, ", cpus_per_task ", spec.cpus_per_task,
                                        "): nodes and tasks_per_node must be at least 1, "
                                        "cpus_per_task at least 0"));
  }
  if (HasControl(spec.work_dir) || HasControl(spec.output)) {
    return BadSpec("work_dir or output", "holds a control character");
  }
  COHORT_RETURN_IF_ERROR(CheckScript(spec.script));
  COHORT_RETURN_IF_ERROR(CheckEnv(spec.env));
  return CheckSbatchArgs(spec.sbatch_args);
}

// The job's environment as --export-file reads it: NAME=value entries, each ended by a NUL.
std::string JobEnvironmentFile(const std::map<std::string, std::string>& env) {
  const absl::string_view end("\0", 1);
  std::string file;
  for (const char* name : kJobEnvironment) {
    const char* value = std::getenv(name);
    if (value != nullptr && env.count(name) == 0) absl::StrAppend(&file, name, "=", value, end);
  }
  for (const auto& [name, value] : env) absl::StrAppend(&file, name, "=", value, end);
  return file;
}

// A private directory (0700) for the files sbatch reads, removed with them when it goes.
class SubmitFiles {
 public:
  SubmitFiles() = default;
  SubmitFiles(const SubmitFiles&) = delete;
  SubmitFiles& operator=(const SubmitFiles&) = delete;
  ~SubmitFiles() {
    if (dir_.empty()) return;
    ::unlink(script().c_str());
    ::unlink(env().c_str());
    ::rmdir(dir_.c_str());
  }

  absl::Status Write(const JobSpec& spec) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/cohort-sbatch-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("cannot make a temporary directory like ", pattern, ": ", strerror(errno)));
    }
    dir_ = pattern;
    COHORT_RETURN_IF_ERROR(WritePrivateFile(script(), spec.script));
    return WritePrivateFile(env(), JobEnvironmentFile(spec.env));
  }
  std::string script() const { return dir_ + "/job.sh"; }
  std::string env() const { return dir_ + "/job.env"; }

 private:
  std::string dir_;
};

std::vector<std::string> SbatchArgs(const JobSpec& spec, const SubmitFiles& files) {
  std::vector<std::string> args = spec.sbatch_args;  // first: Cohort's own options win
  args.insert(args.end(), {"--parsable", "--no-requeue", "--job-name=" + spec.name,
                           absl::StrCat("--nodes=", spec.nodes),
                           absl::StrCat("--ntasks-per-node=", spec.tasks_per_node),
                           "--export-file=" + files.env()});
  if (!spec.partition.empty()) args.push_back("--partition=" + spec.partition);
  if (spec.cpus_per_task > 0) args.push_back(absl::StrCat("--cpus-per-task=", spec.cpus_per_task));
  if (!spec.gres.empty()) args.push_back("--gres=" + spec.gres);
  if (!spec.work_dir.empty()) args.push_back("--chdir=" + spec.work_dir);
  if (!spec.output.empty()) args.push_back("--output=" + spec.output);
  args.push_back(files.script());
  return args;
}

// Whether `tool` is an executable file in one of PATH's directories.
bool InPath(const std::string& tool, const std::string& path) {
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (::access(absl::StrCat(dir, "/", tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// A variable of the tools' environment: options.env's, else the master's.
std::optional<std::string> ToolVariable(const SlurmOptions& options, const std::string& name) {
  if (auto it = options.env.find(name); it != options.env.end()) return it->second;
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// Merges the lines of `sinfo -N` (one per node and partition) into one NodeInfo per node.
std::vector<NodeInfo> MergeNodes(std::vector<NodeInfo> lines) {
  std::vector<NodeInfo> nodes;
  std::map<std::string, size_t> index;
  for (NodeInfo& line : lines) {
    auto [it, added] = index.emplace(line.name, nodes.size());
    if (added) {
      nodes.push_back(std::move(line));
      continue;
    }
    std::vector<std::string>& partitions = nodes[it->second].partitions;
    for (std::string& p : line.partitions) {
      if (std::find(partitions.begin(), partitions.end(), p) == partitions.end()) {
        partitions.push_back(std::move(p));
      }
    }
  }
  return nodes;
}

}  // namespace

SlurmClient::SlurmClient(SlurmOptions options) : options_(std::move(options)) {}

absl::Status SlurmClient::Check() const {
  const std::string sinfo = internal::ToolPath(options_, "sinfo");
  const bool found = options_.bin_dir.empty()
                         ? InPath("sinfo", ToolVariable(options_, "PATH").value_or(""))
                         : ::access(sinfo.c_str(), X_OK) == 0;
  if (!found) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Slurm's tools are missing: no ", sinfo, options_.bin_dir.empty() ? " in PATH" : "",
        ". Install them (Debian: apt-get install "
        "slurm-wlm; for tests scripts/install.sh --test), or name their directory in bin_dir"));
  }
  if (std::optional<std::string> conf = ToolVariable(options_, "SLURM_CONF")) {
    if (::access(conf->c_str(), R_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat("SLURM_CONF names ", *conf,
                                                        ", which cannot be read (", strerror(errno),
                                                        "): set it to the cluster's slurm.conf"));
    }
  }
  absl::StatusOr<ToolResult> run = RunTool(options_, "sinfo", {"--version"});
  if (!run.ok()) return absl::FailedPreconditionError(run.status().message());
  if (run->status != 0) {
    return absl::FailedPreconditionError(ToolFailure("sinfo", {"--version"}, *run).message());
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SlurmClient::Submit(const JobSpec& spec) const {
  COHORT_RETURN_IF_ERROR(CheckSpec(spec));
  SubmitFiles files;
  COHORT_RETURN_IF_ERROR(files.Write(spec));
  const std::vector<std::string> args = SbatchArgs(spec, files);
  absl::StatusOr<ToolResult> ran = RunTool(options_, "sbatch", args);
  if (absl::IsDeadlineExceeded(ran.status())) {
    return Annotate(ran.status(), absl::StrCat("the job may have been submitted (look for ",
                                               spec.name, " with JobsNamed)"));
  }
  COHORT_ASSIGN_OR_RETURN(ToolResult run, std::move(ran));
  if (run.status != 0) {
    return ToolFailure("sbatch", args, run, absl::StatusCode::kInvalidArgument);
  }
  absl::StatusOr<int64_t> id = ParseSbatchAnswer(run.output);
  if (!id.ok()) {
    // sbatch said it succeeded: the job may exist without Cohort knowing its id.
    return absl::UnknownError(absl::StrCat(internal::CommandText("sbatch", args), " exited 0 but ",
                                           id.status().message(),
                                           "; the job may have been submitted"));
  }
  return *id;
}

absl::StatusOr<std::vector<JobInfo>> SlurmClient::Jobs(const std::vector<int64_t>& ids) const {
  std::set<int64_t> wanted;
  for (int64_t id : ids) {
    if (id < 1) return absl::InvalidArgumentError(absl::StrCat("Slurm job id ", id, " < 1"));
    wanted.insert(id);
  }
  if (wanted.empty()) return std::vector<JobInfo>();
  const std::vector<std::string> args = {
      "-h", "-t", "all", "-j", absl::StrJoin(wanted, ","), "-O", SqueueFormat()};
  COHORT_ASSIGN_OR_RETURN(ToolResult run, RunTool(options_, "squeue", args));
  if (run.status != 0) {
    // squeue fails when the one job it is asked for is unknown (several: it lists the known).
    if (wanted.size() == 1 && absl::StrContains(run.output, "Invalid job id specified")) {
      return std::vector<JobInfo>();
    }
    return ToolFailure("squeue", args, run);
  }
  int malformed = 0;
  std::vector<JobInfo> jobs;
  for (JobInfo& job : ParseLines<JobInfo>(run.output, ParseSqueueLine, "squeue", &malformed)) {
    if (wanted.erase(job.id) > 0) jobs.push_back(std::move(job));  // asked for, and once
  }
  if (malformed > 0 && !wanted.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "squeue printed ", malformed, " line(s) Cohort cannot read and did not list job(s) ",
        absl::StrJoin(wanted, ","), ": not concluding that Slurm no longer knows them"));
  }
  return jobs;
}

absl::StatusOr<std::vector<JobInfo>> SlurmClient::JobsNamed(const std::string& prefix) const {
  const std::vector<std::string> args = {"-h", "--me", "-t", "all", "-O", SqueueFormat()};
  COHORT_ASSIGN_OR_RETURN(ToolResult run, RunTool(options_, "squeue", args));
  if (run.status != 0) return ToolFailure("squeue", args, run);
  int malformed = 0;
  std::vector<JobInfo> jobs;
  for (JobInfo& job : ParseLines<JobInfo>(run.output, ParseSqueueLine, "squeue", &malformed)) {
    if (!IsFinished(job.state) && absl::StartsWith(job.name, prefix)) {
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

absl::Status SlurmClient::Cancel(int64_t id, std::optional<int> signal) const {
  if (id < 1) return absl::InvalidArgumentError(absl::StrCat("Slurm job id ", id, " < 1"));
  if (signal && (*signal < 1 || *signal > 64)) {
    return absl::InvalidArgumentError(absl::StrCat("signal ", *signal, " is not 1..64"));
  }
  std::vector<std::string> args;
  if (signal) args = {absl::StrCat("--signal=", *signal), "--full"};
  args.push_back(absl::StrCat(id));
  COHORT_ASSIGN_OR_RETURN(ToolResult run, RunTool(options_, "scancel", args));
  if (run.status == 0) return absl::OkStatus();
  // A job that is over (or that Slurm has forgotten) needs no cancelling.
  if (absl::StrContains(run.output, "Invalid job id specified") ||
      absl::StrContains(run.output, "already completing or completed")) {
    return absl::OkStatus();
  }
  return ToolFailure("scancel", args, run);
}

absl::StatusOr<std::vector<NodeInfo>> SlurmClient::Nodes(const std::string& partition) const {
  if (!Matches(partition, "._-")) {
    return absl::InvalidArgumentError(
        absl::StrCat("Slurm partition '", EscapeControl(partition), "' is not [A-Za-z0-9._-]"));
  }
  std::vector<std::string> args = {"-N", "-h", "-O", SinfoFormat()};
  if (!partition.empty()) args.push_back("--partition=" + partition);
  COHORT_ASSIGN_OR_RETURN(ToolResult run, RunTool(options_, "sinfo", args));
  if (run.status != 0) return ToolFailure("sinfo", args, run);
  int malformed = 0;
  std::vector<NodeInfo> nodes =
      MergeNodes(ParseLines<NodeInfo>(run.output, ParseSinfoLine, "sinfo", &malformed));
  if (nodes.empty() && !partition.empty()) {
    return absl::NotFoundError(absl::StrCat("Slurm lists no node in partition '", partition,
                                            "' (is there such a partition?)"));
  }
  return nodes;
}

}  // namespace cohort::slurm
