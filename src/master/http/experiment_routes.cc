#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/http/routes.h"
#include "wire/limits.h"

namespace cohort::master::http {
namespace {

// A `parent` part (an experiment id: a fork) stands in for a missing `config` or `context`.
absl::StatusOr<Reply> CreateExperiment(Master& master, const Request& req) {
  std::optional<std::string> config = req.FormPart("config");
  std::optional<std::string> context_part = req.FormPart("context");
  if (std::optional<std::string> parent = req.FormPart("parent")) {
    int64_t id = 0;
    if (!absl::SimpleAtoi(*parent, &id) || id < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the `parent` part must be an experiment id, got '", parent->substr(0, 40), "'"));
    }
    COHORT_ASSIGN_OR_RETURN(Master::ForkSource source,
                            master.ForkSourceOf(id, ActorOf(req.caller())));
    if (!config) config = std::move(source.config_yaml);
    if (!context_part) context_part = std::move(source.context);
  }
  if (!req.raw().is_multipart_form_data() || !config) {
    return absl::InvalidArgumentError(
        "expected multipart/form-data with a `config` part (YAML) and a `context` part (tar.gz), "
        "or a `parent` part (the experiment to fork) for either");
  }
  std::string context = std::move(context_part).value_or("");
  if (context.size() > wire::kMaxContextBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the context is ", context.size() >> 20,
                                                   " MB; at most ", wire::kMaxContextBytes >> 20,
                                                   " MB"));
  }
  COHORT_ASSIGN_OR_RETURN(int64_t id,
                          master.CreateExperiment(*config, req.FormPart("template").value_or(""),
                                                  std::move(context), ActorOf(req.caller())));
  wire::CreatedExperiment created{id};
  absl::StatusOr<std::vector<std::string>> warnings = master.ExperimentWarnings(id);
  // The experiment exists: warnings that cannot be read are logged, not an error.
  if (warnings.ok()) {
    created.warnings = *std::move(warnings);
  } else {
    COHORT_LOG(WARNING) << "experiment " << id
                        << ": reading its config's warnings: " << warnings.status();
  }
  return Reply::Ok(created.ToJson(), 201);
}

absl::StatusOr<Reply> Context(Master& master, const Request& req) {
  COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
  COHORT_ASSIGN_OR_RETURN(std::string bytes, master.ContextArchive(id));
  return Reply::Bytes(std::move(bytes), "application/gzip");
}

// POST /api/v1/experiments/ID/VERB: the lifecycle's verbs, and archiving.
absl::Status ExperimentVerb(Master& master, int64_t id, const std::string& verb,
                            const Request& req) {
  const Actor actor = ActorOf(req.caller());
  if (verb == "pause") return master.PauseExperiment(id, actor);
  if (verb == "activate") return master.ActivateExperiment(id, actor);
  if (verb == "kill") return master.KillExperiment(id, actor);
  return master.ArchiveExperiment(id, verb == "archive", actor);
}

}  // namespace

void AddExperimentRoutes(Router& router, Master& master) {
  router.Post("/api/v1/experiments",
              [&](const Request& req) { return CreateExperiment(master, req); },
              {.max_body = wire::kMaxContextBytes + (1u << 20)});
  // ?label=L (repeatable): only the experiments that have every label named.
  router.Get("/api/v1/experiments", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(wire::ExperimentList list, master.ListExperiments());
    std::vector<std::string> wanted;
    for (size_t i = 0; i < req.raw().get_param_value_count("label"); ++i) {
      wanted.push_back(req.raw().get_param_value("label", i));
    }
    auto lacks = [&](const wire::ExperimentSummary& e) {
      return std::any_of(wanted.begin(), wanted.end(), [&](const std::string& l) {
        return std::find(e.labels.begin(), e.labels.end(), l) == e.labels.end();
      });
    };
    list.experiments.erase(std::remove_if(list.experiments.begin(), list.experiments.end(), lacks),
                           list.experiments.end());
    return Reply::Ok(list.ToJson());
  });
  router.Patch(R"(/api/v1/experiments/(\d+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
    COHORT_ASSIGN_OR_RETURN(wire::ExperimentPatch patch, wire::ParseExperimentPatch(body));
    COHORT_RETURN_IF_ERROR(master.PatchExperiment(id, patch, ActorOf(req.caller())));
    return Reply::Done();
  });
  router.Get(R"(/api/v1/experiments/(\d+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_ASSIGN_OR_RETURN(auto experiment, master.DescribeExperiment(id, ActorOf(req.caller())));
    return Reply::Ok(experiment.ToJson());
  });
  // Determined's DeleteExperiment: the experiment is DELETING when this returns, gone soon after.
  router.Delete(R"(/api/v1/experiments/(\d+))", [&](const Request& req) -> absl::StatusOr<Reply> {
    COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
    COHORT_RETURN_IF_ERROR(master.DeleteExperiment(id, ActorOf(req.caller())));
    return Reply::Done();
  });
  router.Post(R"(/api/v1/experiments/(\d+)/(pause|activate|kill|archive|unarchive))",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
                COHORT_RETURN_IF_ERROR(ExperimentVerb(master, id, req.PathPart(2), req));
                return Reply::Done();
              });
  // Determined's ContinueExperiment: the ended experiment is ACTIVE again when this returns.
  router.Post(R"(/api/v1/experiments/(\d+)/continue)",
              [&](const Request& req) -> absl::StatusOr<Reply> {
                COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
                COHORT_ASSIGN_OR_RETURN(Json body, req.JsonBody());
                COHORT_ASSIGN_OR_RETURN(wire::ExperimentContinue c,
                                        wire::ParseExperimentContinue(body));
                wire::CreatedExperiment answer{.id = id};
                COHORT_ASSIGN_OR_RETURN(answer.warnings,
                                        master.ContinueExperiment(id, c.override_config,
                                                                  ActorOf(req.caller())));
                return Reply::Ok(answer.ToJson());
              });
  // The trials as one table: hyperparameters beside best and latest validation (issue 38).
  router.Get(R"(/api/v1/experiments/(\d+)/trials)",
             [&](const Request& req) -> absl::StatusOr<Reply> {
               COHORT_ASSIGN_OR_RETURN(int64_t id, req.PathId());
               COHORT_ASSIGN_OR_RETURN(wire::TrialTable table, master.TrialTable(id));
               return Reply::Ok(table.ToJson());
             });
  router.Get(R"(/api/v1/experiments/(\d+)/context)",
             [&](const Request& req) { return Context(master, req); },
             {.require = Require::kAgent});
}

}  // namespace cohort::master::http
