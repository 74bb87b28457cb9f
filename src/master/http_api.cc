#include "master/http_api.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cohort::master {
namespace {

void Reply(httplib::Response& res, const absl::Status& status, const Json& body = Json::object(),
           int ok_code = 200) {
  if (status.ok()) {
    res.status = ok_code;
    res.set_content(body.dump(), "application/json");
    return;
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument: res.status = 400; break;
    case absl::StatusCode::kNotFound: res.status = 404; break;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists: res.status = 409; break;
    case absl::StatusCode::kUnavailable: res.status = 503; break;
    default: res.status = 500;
  }
  std::vector<std::string> lines = absl::StrSplit(status.message(), '\n');
  Json error = {{"error", lines.front()}};
  if (lines.size() > 1) {
    error["errors"] = Json(std::vector<std::string>(lines.begin() + 1, lines.end()));
  }
  res.set_content(error.dump(), "application/json");
}

template <typename T>
void Reply(httplib::Response& res, const absl::StatusOr<T>& result, int ok_code = 200) {
  if (result.ok()) Reply(res, absl::OkStatus(), Json(*result), ok_code);
  else Reply(res, result.status());
}

absl::StatusOr<int64_t> Id(const httplib::Request& req, int index = 1) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(req.matches[index].str(), &id) || id < 1) {
    return absl::InvalidArgumentError(absl::StrCat("'", req.matches[index].str(), "' is not an id"));
  }
  return id;
}

absl::StatusOr<Json> Body(const httplib::Request& req) {
  Json body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return absl::InvalidArgumentError("the request body is not JSON");
  return body;
}

absl::Duration Seconds(const httplib::Request& req, const char* name, double fallback,
                       double max) {
  double seconds = fallback;
  if (req.has_param(name)) (void)absl::SimpleAtod(req.get_param_value(name), &seconds);
  return absl::Seconds(std::clamp(seconds, 0.0, max));
}

}  // namespace

void RegisterRoutes(httplib::Server& server, Master& master) {
  server.set_payload_max_length(kMaxContextBytes + (1u << 20));

  server.Post("/api/v1/experiments", [&](const httplib::Request& req, httplib::Response& res) {
    if (!req.is_multipart_form_data() || !req.has_file("config")) {
      Reply(res, absl::InvalidArgumentError(
                     "expected multipart/form-data with a `config` part (YAML) and a `context` "
                     "part (tar.gz)"));
      return;
    }
    std::string context = req.has_file("context") ? req.get_file_value("context").content : "";
    if (context.size() > kMaxContextBytes) {
      Reply(res, absl::InvalidArgumentError(absl::StrCat(
                     "the context is ", context.size() >> 20, " MB; at most 96 MB")));
      return;
    }
    const std::string tmpl = req.has_file("template") ? req.get_file_value("template").content : "";
    absl::StatusOr<int64_t> id =
        master.CreateExperiment(req.get_file_value("config").content, tmpl, std::move(context));
    if (id.ok()) Reply(res, absl::OkStatus(), Json{{"id", *id}}, 201);
    else Reply(res, id.status());
  });
  server.Get("/api/v1/experiments", [&](const httplib::Request&, httplib::Response& res) {
    Reply(res, master.ListExperiments());
  });
  server.Get(R"(/api/v1/experiments/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<int64_t> id = Id(req);
    if (!id.ok()) return Reply(res, id.status());
    Reply(res, master.DescribeExperiment(*id));
  });
  server.Post(R"(/api/v1/experiments/(\d+)/(pause|activate|kill))",
              [&](const httplib::Request& req, httplib::Response& res) {
                absl::StatusOr<int64_t> id = Id(req);
                if (!id.ok()) return Reply(res, id.status());
                const std::string verb = req.matches[2].str();
                absl::Status s = verb == "pause"      ? master.PauseExperiment(*id)
                                 : verb == "activate" ? master.ActivateExperiment(*id)
                                                      : master.KillExperiment(*id);
                Reply(res, s, Json{{"ok", true}});
              });
  server.Get(R"(/api/v1/experiments/(\d+)/context)",
             [&](const httplib::Request& req, httplib::Response& res) {
               absl::StatusOr<int64_t> id = Id(req);
               if (!id.ok()) return Reply(res, id.status());
               absl::StatusOr<std::string> path = master.ContextPath(*id);
               if (!path.ok()) return Reply(res, path.status());
               std::ifstream in(*path, std::ios::binary);
               std::stringstream bytes;
               bytes << in.rdbuf();
               res.set_content(bytes.str(), "application/gzip");
             });

  server.Get(R"(/api/v1/trials/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<int64_t> id = Id(req);
    if (!id.ok()) return Reply(res, id.status());
    Reply(res, master.DescribeTrial(*id));
  });
  server.Get(R"(/api/v1/trials/(\d+)/metrics)", [&](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<int64_t> id = Id(req);
    if (!id.ok()) return Reply(res, id.status());
    std::optional<std::string> kind;
    if (req.has_param("kind")) kind = req.get_param_value("kind");
    Reply(res, master.TrialMetrics(*id, kind));
  });
  server.Get(R"(/api/v1/trials/(\d+)/checkpoints)",
             [&](const httplib::Request& req, httplib::Response& res) {
               absl::StatusOr<int64_t> id = Id(req);
               if (!id.ok()) return Reply(res, id.status());
               Reply(res, master.TrialCheckpoints(*id));
             });
  server.Get(R"(/api/v1/trials/(\d+)/logs)", [&](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<int64_t> id = Id(req);
    if (!id.ok()) return Reply(res, id.status());
    std::optional<int> rank;
    int64_t after = 0;
    if (req.has_param("rank")) {
      int r = 0;
      if (!absl::SimpleAtoi(req.get_param_value("rank"), &r) || r < 0) {
        return Reply(res, absl::InvalidArgumentError("rank must be an integer >= 0"));
      }
      rank = r;
    }
    if (req.has_param("after")) (void)absl::SimpleAtoi(req.get_param_value("after"), &after);
    const bool follow = req.has_param("follow") && req.get_param_value("follow") != "0";
    Reply(res, master.TrialLogs(*id, rank, after,
                                follow ? Seconds(req, "timeout", 20, 60) : absl::ZeroDuration()));
  });

  server.Get("/api/v1/templates", [&](const httplib::Request&, httplib::Response& res) {
    Reply(res, master.ListTemplates());
  });
  server.Get(R"(/api/v1/templates/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    Reply(res, master.GetTemplate(req.matches[1].str()));
  });
  server.Put(R"(/api/v1/templates/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    Reply(res, master.PutTemplate(req.matches[1].str(), req.body), Json{{"ok", true}});
  });
  server.Delete(R"(/api/v1/templates/([^/]+))",
                [&](const httplib::Request& req, httplib::Response& res) {
                  Reply(res, master.DeleteTemplate(req.matches[1].str()), Json{{"ok", true}});
                });

  server.Post("/api/v1/agents", [&](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Json> body = Body(req);
    if (!body.ok()) return Reply(res, body.status());
    Reply(res, master.RegisterAgent(*body), Json{{"ok", true}});
  });
  server.Get("/api/v1/agents", [&](const httplib::Request&, httplib::Response& res) {
    Reply(res, master.ListAgents());
  });
  server.Post(R"(/api/v1/agents/([^/]+)/heartbeat)",
              [&](const httplib::Request& req, httplib::Response& res) {
                Reply(res, master.Heartbeat(req.matches[1].str()), Json{{"ok", true}});
              });
  server.Post(R"(/api/v1/agents/([^/]+)/(enable|disable))",
              [&](const httplib::Request& req, httplib::Response& res) {
                Reply(res, master.SetAgentEnabled(req.matches[1].str(), req.matches[2].str() == "enable"),
                      Json{{"ok", true}});
              });
  server.Get(R"(/api/v1/agents/([^/]+)/actions)",
             [&](const httplib::Request& req, httplib::Response& res) {
               Reply(res, master.WaitForActions(req.matches[1].str(), Seconds(req, "timeout", 20, 60)));
             });
  server.Get("/api/v1/slots", [&](const httplib::Request&, httplib::Response& res) {
    Reply(res, master.ListSlots());
  });
  server.Get("/api/v1/tasks", [&](const httplib::Request&, httplib::Response& res) {
    Reply(res, master.ListTasks());
  });

  server.Post(R"(/api/v1/allocations/([^/]+)/logs)",
              [&](const httplib::Request& req, httplib::Response& res) {
                absl::StatusOr<Json> body = Body(req);
                if (!body.ok()) return Reply(res, body.status());
                Reply(res, master.AllocationLogs(req.matches[1].str(), *body), Json{{"ok", true}});
              });
  server.Post(R"(/api/v1/allocations/([^/]+)/reports)",
              [&](const httplib::Request& req, httplib::Response& res) {
                absl::StatusOr<Json> body = Body(req);
                if (!body.ok()) return Reply(res, body.status());
                Reply(res, master.AllocationReports(req.matches[1].str(), *body), Json{{"ok", true}});
              });
  server.Post(R"(/api/v1/allocations/([^/]+)/exit)",
              [&](const httplib::Request& req, httplib::Response& res) {
                absl::StatusOr<Json> body = Body(req);
                if (!body.ok()) return Reply(res, body.status());
                if (!body->contains("node") || !body->contains("status")) {
                  return Reply(res, absl::InvalidArgumentError("exit needs {\"node\": K, \"status\": S}"));
                }
                Reply(res, master.AllocationExit(req.matches[1].str(), (*body)["node"].get<int>(),
                                                 (*body)["status"].get<int>()),
                      Json{{"ok", true}});
              });

  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    res.set_content(Json{{"error", absl::StrCat("no such endpoint: ", req.method, " ", req.path)}}.dump(),
                    "application/json");
  });
}

}  // namespace cohort::master
