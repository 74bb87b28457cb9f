#include "agent/undelivered.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "client/master_client.h"
#include "cohort/status.h"
#include "common/json_bounded.h"
#include "common/private_file.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr absl::string_view kDir = "undelivered";

size_t LineBytes(const wire::LogLine& line) { return line.line.size() + 32; }

// The last lines within kMaxKeptLines and kMaxKeptBytes, after a marker when some were cut.
void KeepTail(const std::string& agent_id, std::vector<wire::LogLine>& lines) {
  size_t keep = 0, bytes = 0;
  while (keep < lines.size() && keep + 1 < kMaxKeptLines) {
    const size_t size = LineBytes(lines[lines.size() - 1 - keep]);
    if (bytes + size > kMaxKeptBytes) break;
    bytes += size;
    ++keep;
  }
  const size_t cut = lines.size() - keep;
  if (cut == 0) return;
  lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(cut));
  lines.insert(lines.begin(),
               {-1, absl::StrCat("agent ", agent_id, ": ", cut,
                                 " earlier output line(s) were not delivered (the master was "
                                 "unreachable when the agent stopped; the last ",
                                 keep, " were kept)")});
}

}  // namespace

Json UndeliveredExit::ToJson() const {
  return {{"exit",
           {{"allocation", allocation},
            {"trial_id", trial_id},
            {"token", token},
            {"report", wire::ExitReport{node, status}.ToJson()}}},
          {"logs", wire::LogBatch{trial_id, lines}.ToJson()}};
}

absl::StatusOr<UndeliveredExit> ParseUndeliveredExit(const Json& json, const std::string& context) {
  const auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": ", what));
  };
  if (!json.is_object() || !json.contains("exit") || !json["exit"].is_object() ||
      !json.contains("logs")) {
    return bad("not {\"exit\": {...}, \"logs\": {...}}");
  }
  const Json& exit = json["exit"];
  UndeliveredExit out;
  if (!exit.contains("allocation") || !exit["allocation"].is_string() || !exit.contains("token") ||
      !exit["token"].is_string() || !exit.contains("report")) {
    return bad("\"exit\" needs \"allocation\", \"token\" and \"report\"");
  }
  out.allocation = exit["allocation"].get<std::string>();
  out.token = exit["token"].get<std::string>();
  absl::StatusOr<wire::ExitReport> report = wire::ParseExitReport(exit["report"]);
  if (!report.ok()) return bad(report.status().message());
  out.node = report->node;
  out.status = report->status;
  absl::StatusOr<wire::LogBatch> logs = wire::ParseLogBatch(json["logs"]);
  if (!logs.ok()) return bad(logs.status().message());
  out.trial_id = logs->trial_id;
  out.lines = std::move(logs->lines);
  return out;
}

absl::Status SaveUndelivered(const std::string& work_dir, const std::string& agent_id,
                             UndeliveredExit exit) {
  KeepTail(agent_id, exit.lines);
  const fs::path dir = fs::path(work_dir) / std::string(kDir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("creating ", dir.string(), ": ", ec.message()));
  const std::string path =
      (dir / absl::StrCat(exit.allocation, "-node", exit.node, ".json")).string();
  return WritePrivateFile(path, exit.ToJson().dump(-1, ' ', false, Json::error_handler_t::replace));
}

std::vector<std::pair<std::string, absl::StatusOr<UndeliveredExit>>> ListUndelivered(
    const std::string& work_dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(work_dir) / std::string(kDir), ec)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::pair<std::string, absl::StatusOr<UndeliveredExit>>> out;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    absl::StatusOr<Json> json = ParseJsonBounded<Json>(text);
    out.emplace_back(path, json.ok() ? ParseUndeliveredExit(*json, path)
                                     : absl::StatusOr<UndeliveredExit>(absl::InvalidArgumentError(
                                           absl::StrCat(path, ": ", json.status().message()))));
  }
  return out;
}

absl::Status DeliverUndelivered(const std::string& master_url, const std::string& tls_ca,
                                const UndeliveredExit& exit) {
  client::MasterClient client(master_url, absl::Seconds(30));
  client.set_bearer_token(exit.token);
  client.set_tls_ca_file(tls_ca);
  const std::string base = absl::StrCat("/api/v1/allocations/", exit.allocation);
  if (!exit.lines.empty()) {
    COHORT_RETURN_IF_ERROR(
        client.Post(base + "/logs", wire::LogBatch{exit.trial_id, exit.lines}.ToJson()).status());
  }
  return client.Post(base + "/exit", wire::ExitReport{exit.node, exit.status}.ToJson()).status();
}

}  // namespace cohort::agent
