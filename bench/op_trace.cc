#include "bench/op_trace.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace cohort::bench {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// An event's start and duration in microseconds. LibTorch 2.x's KinetoEvent has startNs and
// durationNs where 1.13's (Debian 12) has startUs and durationUs: the first overload is chosen
// where startNs exists, the second (a worse match for the literal 0) otherwise.
template <typename Event>
auto StartAndDurationUs(const Event& e, int) -> decltype(e.startNs(), std::pair<double, double>()) {
  return {e.startNs() / 1e3, e.durationNs() / 1e3};
}
template <typename Event>
std::pair<double, double> StartAndDurationUs(const Event& e, long) {  // NOLINT(runtime/int)
  return {static_cast<double>(e.startUs()), static_cast<double>(e.durationUs())};
}

// The events as Chrome trace "X" events: "cat" is "kernel" for the device's (kernels, copies,
// memsets), "cpu_op" for the host's. Written here rather than by ProfilerResult::save, which
// needs a LibTorch built with Kineto (Debian's is not).
absl::Status WriteTrace(const std::vector<profiler::KinetoEvent>& events, const std::string& path) {
  nlohmann::json trace = {{"traceEvents", nlohmann::json::array()}, {"displayTimeUnit", "ms"}};
  nlohmann::json& out = trace["traceEvents"];
  for (const profiler::KinetoEvent& e : events) {
    const bool device = e.deviceType() != c10::DeviceType::CPU;
    const auto [start_us, duration_us] = StartAndDurationUs(e, 0);
    nlohmann::json event = {{"name", e.name()},
                            {"cat", device ? "kernel" : "cpu_op"},
                            {"ph", "X"},
                            {"ts", start_us},
                            {"dur", duration_us},
                            {"pid", device ? 1 : 0},
                            {"tid", device ? 0 : 1}};
    out.push_back(std::move(event));
  }
  std::ofstream file(path);
  file << trace.dump();
  file.close();
  if (!file) return absl::UnavailableError(absl::StrCat("--op-trace: could not write ", path));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpTrace>> OpTrace::Start(bool cuda) {
  std::set<ActivityType> activities = {ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  const ProfilerConfig config(ProfilerState::KINETO);
  try {
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
  } catch (const c10::Error& e) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--op-trace: LibTorch's profiler would not start: ", e.what_without_backtrace()));
  }
  return std::unique_ptr<OpTrace>(new OpTrace());
}

OpTrace::~OpTrace() {
  if (!active_) return;
  try {
    profiler::disableProfiler();
  } catch (const c10::Error&) {
    // Stopping is all that is left to do; a profiler that will not stop ends with the process.
  }
}

absl::Status OpTrace::StopAndSave(const std::string& path) {
  if (!active_)
    return absl::FailedPreconditionError("--op-trace: the profiler was stopped already");
  active_ = false;
  try {
    std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
    if (result == nullptr) return absl::InternalError("--op-trace: the profiler kept no result");
    return WriteTrace(result->events(), path);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("--op-trace: stopping LibTorch's profiler: ", e.what_without_backtrace()));
  }
}

}  // namespace cohort::bench
