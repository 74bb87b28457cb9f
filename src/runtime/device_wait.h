#pragma once
// WaitForDevice: waits, with a deadline, for the work issued so far on the calling thread's
// current stream of `device` (LibTorch's default stream, where a trial computes) to finish.
// Not the whole device: other streams (the gradient reducer's NCCL stream) are not waited for.
//
// Why not Tensor::item() or torch::cuda::synchronize(): both block for ever on a kernel that never
// ends (a collective on a dead peer, a hung device). This records an event and polls it: spins
// for a millisecond or two (a short wait is timed to the microsecond, as the profiler needs),
// then sleeps up to 200 us between polls.
//
// A CPU device returns OK at once: LibTorch's CPU operations are done when they return.
// DeadlineExceeded after `timeout`, naming the device, `what` was waited for and how long.
// Thread-safe (streams are per thread).
//
// Example:
//   COHORT_RETURN_IF_ERROR(WaitForDevice(device, absl::Seconds(300), "batch 7's backward pass"));

#include <c10/core/Device.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cohort::runtime {

absl::Status WaitForDevice(const c10::Device& device, absl::Duration timeout,
                           absl::string_view what);

}  // namespace cohort::runtime
