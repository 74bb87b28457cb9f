#pragma once
// TraceEvents: a trial's step timelines (StepProfileRecord, one per rank and profiled
// batch) as a Trace Event Format document, the JSON that Perfetto (ui.perfetto.dev) and
// chrome://tracing open (Google's "Trace Event Format" specification; Horovod's timeline is
// the same kind of file):
//
//   {"displayTimeUnit":"ms",
//    "otherData":{"trial_id":3,"start_unix_seconds":1700000000.1,"truncated":false},
//    "traceEvents":[
//      {"ph":"M","name":"process_name","pid":0,"args":{"name":"rank 0"}},
//      {"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"training"}},
//      {"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":"gradient communication"}},
//      {"ph":"X","name":"backward","cat":"step","pid":0,"tid":0,"ts":1520,"dur":22914,
//       "args":{"batch":12}},
//      {"ph":"X","name":"bucket 0","cat":"gradients","pid":0,"tid":1,"ts":3100,"dur":812,
//       "args":{"batch":12,"bytes":1048576}}, ...]}
//
// One process per rank (sorted by rank), with two threads: the training thread's phases
// (nested: train_batch holds forward, backward, gradient_wait, optimizer_step) and the
// communication thread's gradient buckets beside them, so the overlap of communication with
// the backward pass shows. Times are microseconds after the earliest batch start in the
// document (otherData.start_unix_seconds). Thread-safe (a pure function).

#include <cstdint>
#include <vector>

#include "nlohmann/json.hpp"
#include "wire/step_profile.h"

namespace cohort::wire {

// `truncated`: the records stop short of what was asked for (otherData says so).
nlohmann::json TraceEvents(int64_t trial_id, const std::vector<StepProfileRecord>& records,
                           bool truncated);

}  // namespace cohort::wire
