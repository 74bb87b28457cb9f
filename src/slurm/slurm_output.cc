#include "slurm/slurm_output.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/terminal_text.h"

namespace cohort::slurm {
namespace {

struct StateWord {
  absl::string_view word;
  JobState state;
};

// Slurm's long state words (src/common/slurm_protocol_defs.c, job_state_string), each once.
constexpr std::array<StateWord, 25> kStateWords = {{
    {"PENDING", JobState::kPending},           {"CONFIGURING", JobState::kConfiguring},
    {"RUNNING", JobState::kRunning},           {"COMPLETING", JobState::kCompleting},
    {"COMPLETED", JobState::kCompleted},       {"FAILED", JobState::kFailed},
    {"CANCELLED", JobState::kCancelled},       {"TIMEOUT", JobState::kTimeout},
    {"NODE_FAIL", JobState::kNodeFail},        {"PREEMPTED", JobState::kPreempted},
    {"OUT_OF_MEMORY", JobState::kOutOfMemory}, {"BOOT_FAIL", JobState::kBootFail},
    {"DEADLINE", JobState::kDeadline},         {"SUSPENDED", JobState::kSuspended},
    {"REQUEUED", JobState::kPending},          {"REQUEUE_HOLD", JobState::kPending},
    {"REQUEUE_FED", JobState::kPending},       {"RESV_DEL_HOLD", JobState::kPending},
    {"SPECIAL_EXIT", JobState::kPending},      {"SIGNALING", JobState::kRunning},
    {"RESIZING", JobState::kRunning},          {"STAGE_OUT", JobState::kCompleting},
    {"STOPPED", JobState::kSuspended},         {"REVOKED", JobState::kCancelled},
    {"UNKNOWN", JobState::kUnknown},
}};

// The text quoted in an error: control characters escaped, at most 200 bytes.
std::string Quote(absl::string_view text) {
  constexpr size_t kMax = 200;
  std::string quoted = EscapeControl(text.substr(0, kMax));
  if (text.size() > kMax) absl::StrAppend(&quoted, "... (", text.size(), " bytes)");
  return absl::StrCat("'", quoted, "'");
}

// Splits at kFieldSeparator into exactly `count` fields, the last keeping any separators.
std::vector<absl::string_view> SplitFields(absl::string_view line, size_t count) {
  std::vector<absl::string_view> fields;
  while (fields.size() + 1 < count) {
    const size_t at = line.find(kFieldSeparator);
    if (at == absl::string_view::npos) break;
    fields.push_back(line.substr(0, at));
    line.remove_prefix(at + 1);
  }
  fields.push_back(line);
  return fields;
}

bool AllDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// One range inside brackets, "lo-hi" or "n", its numbers appended to `numbers` (each as wide
// as `lo` is written), so that `numbers` holds at most kMaxHostListNames.
absl::Status ExpandRange(absl::string_view range, std::vector<std::string>* numbers) {
  const size_t dash = range.find('-');
  const absl::string_view first = range.substr(0, dash);
  const absl::string_view last = dash == absl::string_view::npos ? first : range.substr(dash + 1);
  uint64_t low = 0, high = 0;
  if (!AllDigits(first) || !AllDigits(last) || first.size() > 18 || last.size() > 18 ||
      !absl::SimpleAtoi(first, &low) || !absl::SimpleAtoi(last, &high) || low > high) {
    return absl::InvalidArgumentError(
        absl::StrCat("node list range ", Quote(range), " is not low-high numbers"));
  }
  if (high - low >= kMaxHostListNames - numbers->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("node list expands to more than ", kMaxHostListNames, " names"));
  }
  for (uint64_t n = low; n <= high; ++n) {
    std::string digits = std::to_string(n);
    if (digits.size() < first.size()) digits.insert(0, first.size() - digits.size(), '0');
    numbers->push_back(std::move(digits));
  }
  return absl::OkStatus();
}

// One name with brackets ("r[1-2]n[01-02]") expanded onto `out`, in order.
absl::Status ExpandName(absl::string_view name, std::vector<std::string>* out) {
  std::vector<std::string> partial = {""};
  while (!name.empty()) {
    const size_t open = name.find('[');
    const size_t close = name.find(']');
    if (open == absl::string_view::npos) {
      if (close != absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("unbalanced ']' in ", Quote(name)));
      }
      for (std::string& p : partial) absl::StrAppend(&p, name);
      break;
    }
    if (close == absl::string_view::npos || close < open) {
      return absl::InvalidArgumentError(absl::StrCat("unbalanced '[' in ", Quote(name)));
    }
    std::vector<std::string> numbers;
    for (absl::string_view range : absl::StrSplit(name.substr(open + 1, close - open - 1), ',')) {
      if (absl::Status s = ExpandRange(range, &numbers); !s.ok()) return s;
    }
    if (partial.size() * numbers.size() + out->size() > kMaxHostListNames) {
      return absl::InvalidArgumentError(
          absl::StrCat("node list expands to more than ", kMaxHostListNames, " names"));
    }
    std::vector<std::string> next;
    for (const std::string& p : partial) {
      for (const std::string& n : numbers) next.push_back(absl::StrCat(p, name.substr(0, open), n));
    }
    partial = std::move(next);
    name.remove_prefix(close + 1);
  }
  for (std::string& p : partial) out->push_back(std::move(p));
  return absl::OkStatus();
}

// Splits a node list at the commas outside brackets.
absl::StatusOr<std::vector<absl::string_view>> SplitHostList(absl::string_view list) {
  std::vector<absl::string_view> names;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '[' && ++depth > 1) break;
    if (list[i] == ']' && --depth < 0) break;
    if (list[i] == ',' && depth == 0) {
      names.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unbalanced brackets in node list ", Quote(list)));
  }
  names.push_back(list.substr(start));
  return names;
}

// "A/I/O/T" (allocated, idle, other, total CPUs).
bool ParseCpuState(absl::string_view text, int* allocated, int* total) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  if (parts.size() != 4) return false;
  std::array<int, 4> values{};
  for (size_t i = 0; i < 4; ++i) {
    if (!AllDigits(parts[i]) || !absl::SimpleAtoi(parts[i], &values[i])) return false;
  }
  *allocated = values[0];
  *total = values[3];
  return true;
}

}  // namespace

bool IsFinished(JobState state) {
  switch (state) {
    case JobState::kCompleted:
    case JobState::kFailed:
    case JobState::kCancelled:
    case JobState::kTimeout:
    case JobState::kNodeFail:
    case JobState::kPreempted:
    case JobState::kOutOfMemory:
    case JobState::kBootFail:
    case JobState::kDeadline:
      return true;
    default:
      return false;
  }
}

std::string_view JobStateName(JobState state) {
  for (const StateWord& w : kStateWords) {
    // The first word of each state is its own.
    if (w.state == state) return std::string_view(w.word.data(), w.word.size());
  }
  return "UNKNOWN";
}

JobState ParseJobState(absl::string_view word) {
  const size_t end = word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
  word = word.substr(0, end);
  for (const StateWord& w : kStateWords) {
    if (w.word == word) return w.state;
  }
  return JobState::kUnknown;
}

absl::StatusOr<std::vector<std::string>> ExpandHostList(absl::string_view list) {
  list = absl::StripAsciiWhitespace(list);
  std::vector<std::string> names;
  if (list.empty() || list == "(null)") return names;
  absl::StatusOr<std::vector<absl::string_view>> parts = SplitHostList(list);
  if (!parts.ok()) return parts.status();
  for (absl::string_view part : *parts) {
    if (part.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("empty name in node list ", Quote(list)));
    }
    if (absl::Status s = ExpandName(part, &names); !s.ok()) return s;
    if (names.size() > kMaxHostListNames) {
      return absl::InvalidArgumentError(
          absl::StrCat("node list expands to more than ", kMaxHostListNames, " names"));
    }
  }
  return names;
}

absl::StatusOr<JobInfo> ParseSqueueLine(absl::string_view line) {
  const std::vector<absl::string_view> f = SplitFields(line, 7);
  if (f.size() != 7) {
    return absl::InvalidArgumentError(
        absl::StrCat("squeue line has ", f.size(), " of 7 fields: ", Quote(line)));
  }
  JobInfo job;
  const absl::string_view id = absl::StripAsciiWhitespace(f[0]);
  if (!AllDigits(id) || !absl::SimpleAtoi(id, &job.id) || job.id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("squeue line's job id ", Quote(id), " is not a positive number"));
  }
  job.state_text = std::string(absl::StripAsciiWhitespace(f[1]));
  job.state = ParseJobState(job.state_text);
  job.reason = std::string(absl::StripAsciiWhitespace(f[2]));
  int wait_status = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(f[3]), &wait_status) && wait_status >= 0) {
    job.exit_code = (wait_status >> 8) & 0xff;  // squeue's exit_code is the raw wait status
    job.exit_signal = wait_status & 0x7f;
  }
  job.time_limit =
      ParseSlurmDuration(absl::StripAsciiWhitespace(f[4])).value_or(absl::InfiniteDuration());
  job.nodes = ExpandHostList(f[5]).value_or(std::vector<std::string>());
  job.name = std::string(f[6]);
  return job;
}

absl::StatusOr<NodeInfo> ParseSinfoLine(absl::string_view line) {
  const std::vector<absl::string_view> f = SplitFields(line, 5);
  if (f.size() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("sinfo line has ", f.size(), " of 5 fields: ", Quote(line)));
  }
  NodeInfo node;
  node.name = std::string(absl::StripAsciiWhitespace(f[0]));
  if (node.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("sinfo line has no node name: ", Quote(line)));
  }
  node.state = absl::AsciiStrToLower(absl::StripAsciiWhitespace(f[1]));
  node.usable = IsUsableNodeState(node.state);
  if (!ParseCpuState(absl::StripAsciiWhitespace(f[2]), &node.cpus_allocated, &node.cpus)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sinfo line's CPUs ", Quote(f[2]), " are not A/I/O/T numbers"));
  }
  absl::string_view partition = absl::StripAsciiWhitespace(f[3]);
  if (absl::EndsWith(partition, "*")) partition.remove_suffix(1);  // the default partition
  if (!partition.empty()) node.partitions.emplace_back(partition);
  const absl::string_view reason = absl::StripAsciiWhitespace(f[4]);
  if (reason != "none" && reason != "(null)") node.reason = std::string(reason);
  return node;
}

bool IsUsableNodeState(absl::string_view state) {
  if (state.find_first_of("*~#%!") != absl::string_view::npos) return false;
  if (absl::StrContains(state, "drain")) return false;
  const size_t end = state.find_first_not_of("abcdefghijklmnopqrstuvwxyz");
  const absl::string_view base = state.substr(0, end);
  return base == "idle" || base == "mixed" || base == "allocated" || base == "completing";
}

absl::StatusOr<int64_t> ParseSbatchAnswer(absl::string_view output) {
  int64_t id = 0;
  int found = 0;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    const absl::string_view number = line.substr(0, line.find(';'));
    int64_t value = 0;
    if (AllDigits(number) && absl::SimpleAtoi(number, &value) && value > 0) {
      id = value;
      ++found;
    }
  }
  if (found != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sbatch's answer holds ", found == 0 ? "no" : "more than one", " job id: ", Quote(output)));
  }
  return id;
}

absl::StatusOr<absl::Duration> ParseSlurmDuration(absl::string_view text) {
  if (text == "UNLIMITED" || text == "INFINITE") return absl::InfiniteDuration();
  const absl::Status bad =
      absl::InvalidArgumentError(absl::StrCat("not a Slurm duration: ", Quote(text)));
  const size_t dash = text.find('-');
  int64_t days = 0;
  if (dash != absl::string_view::npos) {
    if (dash > 6 || !AllDigits(text.substr(0, dash)) ||
        !absl::SimpleAtoi(text.substr(0, dash), &days)) {
      return bad;
    }
    text.remove_prefix(dash + 1);
  }
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() > 3) return bad;
  // Which of hours, minutes, seconds the first part is: with days, "D-H[:M[:S]]"; without,
  // "M", "M:S" or "H:M:S" (Slurm's own rules for --time).
  size_t unit = dash != absl::string_view::npos ? 0 : (parts.size() == 3 ? 0 : 1);
  int64_t values[3] = {0, 0, 0};
  for (absl::string_view part : parts) {
    if (part.size() > 9 || !AllDigits(part) || !absl::SimpleAtoi(part, &values[unit++])) {
      return bad;
    }
  }
  return absl::Hours(24 * days + values[0]) + absl::Minutes(values[1]) + absl::Seconds(values[2]);
}

}  // namespace cohort::slurm
