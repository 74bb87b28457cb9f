#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "common/logging.h"
#include "master/http/routes.h"
#include "wire/limits.h"

namespace cohort::master::http {
namespace {

// The most metric rows one answer carries (a page); `limit` may ask for fewer.
constexpr int64_t kMaxMetricPage = 10000;
// The most lines ?tail= asks for (`cohort trial logs --tail N`).
constexpr int64_t kMaxLogTail = 10000;

absl::StatusOr<Reply> Logs(logs::TrialLogs& trial_logs, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> rank, req.QueryInt("rank"));
  if (rank && *rank > (1 << 20)) return absl::InvalidArgumentError("rank must be an integer >= 0");
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> after, req.QueryInt("after"));
  const bool follow = req.raw().has_param("follow") && req.raw().get_param_value("follow") != "0";
  COHORT_ASSIGN_OR_RETURN(absl::Duration wait, req.QuerySeconds("timeout", 20, 60));
  // ?level=warning|error&grep=TEXT&since_ms=&until_ms=: filtered here (logs/line_filter.h).
  logs::LogQuery query;
  if (rank) query.rank = static_cast<int>(*rank);
  query.level = req.raw().get_param_value("level");
  query.grep = req.raw().get_param_value("grep");
  COHORT_ASSIGN_OR_RETURN(query.since_ms, req.QueryInt("since_ms"));
  COHORT_ASSIGN_OR_RETURN(query.until_ms, req.QueryInt("until_ms"));
  COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> tail, req.QueryInt("tail"));
  if (tail) {  // the last lines, at once; a follow goes on from the page's next
    if (*tail < 1 || *tail > kMaxLogTail) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query parameter tail must be an integer in [1, ", kMaxLogTail, "], got ", *tail));
    }
    COHORT_ASSIGN_OR_RETURN(auto last, trial_logs.Tail(id, query, static_cast<int>(*tail)));
    return Reply::Ok(last.ToJson());
  }
  COHORT_ASSIGN_OR_RETURN(auto page, trial_logs.Read(id, query, after.value_or(0),
                                                     follow ? wait : absl::ZeroDuration()));
  return Reply::Ok(page.ToJson());
}

// A checkpoint's directory as a tar.gz, streamed as it is packed (`cohort checkpoint download`).
// The headers say what comes: X-Cohort-Checkpoint-Files and -Bytes (before compression).
absl::StatusOr<Reply> CheckpointDownload(checkpoints::Checkpoints& checkpoints,
                                         const Request& req) {
  const std::string id = req.PathPart(1);
  if (!wire::IsSafeName(id)) {
    return absl::InvalidArgumentError(absl::StrCat("'", id, "' is not a checkpoint id"));
  }
  COHORT_ASSIGN_OR_RETURN(checkpoints::CheckpointFiles files, checkpoints.Files(id));
  Reply reply;
  reply.content_type = "application/gzip";
  reply.headers = {
      {"Content-Disposition", absl::StrCat("attachment; filename=\"", id, ".tar.gz\"")},
      {"X-Cohort-Checkpoint-Files", absl::StrCat(files.entries.size())},
      {"X-Cohort-Checkpoint-Bytes", absl::StrCat(files.bytes)},
      {"X-Cohort-Checkpoint-Trial", absl::StrCat(files.trial_id)},
      {"X-Cohort-Checkpoint-Batch", absl::StrCat(files.steps_completed)}};
  reply.stream = [files = std::move(files)](httplib::DataSink& sink) {
    absl::Status sent = StreamPackedDirectory(
        files.dir, files.entries,
        [&sink](const char* data, size_t size) { return sink.write(data, size); });
    if (!sent.ok()) {
      COHORT_LOG(WARNING) << "download of checkpoint " << files.storage_id
                          << " broke off: " << sent;
    }
    return sent.ok();
  };
  return reply;
}

}  // namespace

void AddTrialRoutes(Router& router, Master& master) {
  router.Get(R"(/api/v1/checkpoints/([^/]+)/download)",
             [&](const Request& req) { return CheckpointDownload(master.checkpoints(), req); });
  router.Get(R"(/api/v1/checkpoints/([^/]+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(wire::CheckpointDescription d,
                            master.checkpoints().Describe(req.PathPart(1)));
    return Reply::Ok(d.ToJson());
  });
  router.Delete(R"(/api/v1/checkpoints/([^/]+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_RETURN_IF_ERROR(master.DeleteCheckpoint(req.PathPart(1), ActorOf(req.caller())));
    return Reply::Done();
  });
  router.Get(R"(/api/v1/trials/(\d+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_ASSIGN_OR_RETURN(auto trial, master.DescribeTrial(id));
    return Reply::Ok(trial.ToJson());
  });
  router.Get(R"(/api/v1/trials/(\d+)/metrics)", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    std::optional<wire::MetricKind> kind;
    if (req.raw().has_param("kind")) {
      absl::StatusOr<wire::MetricKind> parsed =
          wire::ParseMetricKind(req.raw().get_param_value("kind"));
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("query parameter kind: ", parsed.status().message()));
      }
      kind = *parsed;
    }
    COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> after, req.QueryInt("after"));
    COHORT_ASSIGN_OR_RETURN(std::optional<int64_t> limit, req.QueryInt("limit"));
    COHORT_ASSIGN_OR_RETURN(
        auto metrics,
        master.series().TrialMetrics(
            id, kind, after.value_or(0),
            static_cast<int>(std::min<int64_t>(limit.value_or(kMaxMetricPage), kMaxMetricPage))));
    return Reply::Ok(metrics.ToJson());
  });
  // Determined's KillTrial: the trial ends CANCELED; its experiment goes on (Master::KillTrial).
  router.Post(R"(/api/v1/trials/(\d+)/kill)", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_RETURN_IF_ERROR(master.KillTrial(id, ActorOf(req.caller())));
    return Reply::Done();
  });
  router.Get(R"(/api/v1/trials/(\d+)/checkpoints)",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
               COHORT_ASSIGN_OR_RETURN(auto checkpoints, master.checkpoints().OfTrial(id));
               return Reply::Ok(checkpoints.ToJson());
             });
  router.Get(R"(/api/v1/trials/(\d+)/logs)",
             [&](const Request& req) { return Logs(master.trial_logs(), req); },
             {.waits = true});  // with ?follow
}

}  // namespace cohort::master::http
