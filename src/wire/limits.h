#pragma once
// Sizes both ends of the master's REST API agree on. A sender checks before sending (with an
// error that says what to shrink); the master refuses anything larger with 400.

#include <cstddef>

namespace cohort::wire {

// An experiment's context directory, as the tar.gz uploaded with it.
inline constexpr size_t kMaxContextBytes = 96u << 20;
// Any other request body (JSON): log batches, reports, registrations, templates.
inline constexpr size_t kMaxJsonBodyBytes = 16u << 20;

}  // namespace cohort::wire
