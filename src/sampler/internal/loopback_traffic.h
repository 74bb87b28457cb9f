#pragma once
// Test helper: traffic on the loopback interface, for tests of the network counters.
// Thread-safe.

#include <cstddef>

namespace cohort::sampler::internal {

// Sends `bytes` over a loopback TCP connection (port chosen by the OS) and reads them back;
// fails the current test (gtest) on error, with a 10 s deadline.
void SendOverLoopback(size_t bytes);

}  // namespace cohort::sampler::internal
