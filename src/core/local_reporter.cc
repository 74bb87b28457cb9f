#include "core/local_reporter.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace cohort::core {
namespace {

namespace fs = std::filesystem;

constexpr auto kProgressInterval = std::chrono::milliseconds(500);

std::atomic<bool> g_preempt_requested{false};

void OnSigterm(int) { g_preempt_requested.store(true, std::memory_order_relaxed); }

}  // namespace

void InstallPreemptionSignalHandler() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction action = {};
  action.sa_handler = OnSigterm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &action, nullptr);
}

namespace {

double Now() { return absl::ToUnixMillis(absl::Now()) / 1000.0; }

}  // namespace

void RequestPreemption() { g_preempt_requested.store(true, std::memory_order_relaxed); }

bool PreemptionSignaled() { return g_preempt_requested.load(std::memory_order_relaxed); }

absl::StatusOr<std::unique_ptr<LocalReporter>> LocalReporter::Create(const std::string& run_dir,
                                                                     bool handle_sigterm) {
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("run directory ", run_dir, ": cannot create it: ", ec.message()));
  }
  std::unique_ptr<LocalReporter> reporter(new LocalReporter(run_dir));
  const std::string path = (fs::path(run_dir) / "metrics.jsonl").string();
  reporter->metrics_.open(path, std::ios::app);
  if (!reporter->metrics_) {
    return absl::UnavailableError(
        absl::StrCat("metrics file ", path, ": cannot open for appending"));
  }
  if (handle_sigterm) InstallPreemptionSignalHandler();
  return reporter;
}

absl::Status LocalReporter::Append(wire::ReportRecord record) {
  record.time = Now();
  metrics_ << record.ToJson().dump() << "\n";
  metrics_.flush();
  if (!metrics_) {
    return absl::UnavailableError(
        absl::StrCat("metrics file ", run_dir_, "/metrics.jsonl: write failed (disk full?)"));
  }
  return absl::OkStatus();
}

absl::Status LocalReporter::ReportMetrics(const std::string& kind, int64_t steps_completed,
                                          const nlohmann::json& metrics) {
  absl::StatusOr<wire::ReportKind> parsed = wire::ParseReportKind(kind);
  if (!parsed.ok() ||
      (*parsed != wire::ReportKind::kTraining && *parsed != wire::ReportKind::kValidation)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics kind '", kind, "': must be training or validation"));
  }
  wire::ReportRecord record;
  record.kind = *parsed;
  record.steps_completed = steps_completed;
  record.metrics = metrics;
  if (record.kind == wire::ReportKind::kTraining) {
    progress_.training = metrics;
    progress_.training_steps_completed = steps_completed;
  } else {
    progress_.validation = metrics;
    progress_.validation_steps_completed = steps_completed;
  }
  return Append(std::move(record));
}

absl::Status LocalReporter::ReportCheckpoint(const std::string& storage_id, const std::string& path,
                                             const nlohmann::json& metadata) {
  wire::ReportRecord record;
  record.kind = wire::ReportKind::kCheckpoint;
  record.storage_id = storage_id;
  record.path = path;
  record.metadata = metadata;
  if (metadata.is_object() && metadata.contains("steps_completed") &&
      metadata["steps_completed"].is_number_integer()) {
    record.steps_completed = metadata["steps_completed"].get<int64_t>();
  }
  progress_.latest_checkpoint = storage_id;
  return Append(std::move(record));
}

absl::Status LocalReporter::ReportProgress(const Progress& progress) {
  progress_.completed = progress.completed;
  progress_.total = progress.total;
  progress_.unit = progress.unit.empty() ? "batches" : progress.unit;
  const auto now = std::chrono::steady_clock::now();
  if (progress.completed < progress.total && now - last_progress_write_ < kProgressInterval) {
    return absl::OkStatus();
  }
  last_progress_write_ = now;
  return WriteProgress();
}

absl::Status LocalReporter::WriteProgress() {
  progress_.time = Now();
  const fs::path final_path = fs::path(run_dir_) / "progress.json";
  const fs::path tmp = fs::path(run_dir_) / ".progress.json.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << progress_.ToJson().dump() << "\n";
    if (!out)
      return absl::UnavailableError(absl::StrCat("progress file ", tmp.string(), ": write failed"));
  }
  std::error_code ec;
  fs::rename(tmp, final_path, ec);  // readers see the old or the new file, never half of one
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("progress file ", final_path.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status LocalReporter::ReportCompleted(double searcher_metric, double length) {
  progress_.searcher_metric = searcher_metric;
  if (absl::Status s = WriteProgress(); !s.ok()) return s;
  wire::ReportRecord record;
  record.kind = wire::ReportKind::kCompleted;
  record.searcher_metric = searcher_metric;
  record.length = length;
  return Append(std::move(record));
}

absl::Status LocalReporter::ReportPreempted() {
  progress_.preempted = true;
  if (absl::Status s = WriteProgress(); !s.ok()) return s;
  wire::ReportRecord record;
  record.kind = wire::ReportKind::kPreempted;
  return Append(std::move(record));
}

bool LocalReporter::PreemptionRequested() { return PreemptionSignaled(); }

}  // namespace cohort::core
