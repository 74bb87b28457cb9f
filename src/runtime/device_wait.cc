#include "runtime/device_wait.h"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace cohort::runtime {
namespace {

constexpr int kSpins = 2000;  // polls before the first sleep: a millisecond or two
constexpr absl::Duration kFirstPause = absl::Microseconds(10);
constexpr absl::Duration kLongestPause = absl::Microseconds(200);

}  // namespace

absl::Status WaitForDevice(const c10::Device& device, absl::Duration timeout,
                           absl::string_view what) {
  if (device.is_cpu()) return absl::OkStatus();
  const c10::impl::VirtualGuardImpl guard(device.type());
  c10::Event done(device.type());
  done.record(guard.getStream(device));
  const absl::Time start = absl::Now();
  absl::Duration pause = kFirstPause;
  for (int polls = 0; !done.query(); ++polls) {
    if (absl::Now() - start >= timeout) {
      return absl::DeadlineExceededError(absl::StrCat(
          "waited ", absl::FormatDuration(timeout), " for ", device.str(), " to finish ", what,
          ", and it has not: a kernel that does not end (a hung device, or a collective waiting "
          "on a dead peer) or far more work than expected"));
    }
    if (polls < kSpins) continue;
    absl::SleepFor(pause);
    pause = std::min(pause * 2, kLongestPause);
  }
  return absl::OkStatus();
}

}  // namespace cohort::runtime
