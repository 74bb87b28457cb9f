#include "cli/checkpoint_commands.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "cohort/status.h"
#include "common/context_archive.h"
#include "wire/experiment_bodies.h"
#include "wire/limits.h"
#include "wire/states.h"
#include "wire/trial_bodies.h"

namespace cohort::cli {
namespace {

namespace fs = std::filesystem;

struct ListArgs {
  int64_t experiment_id = 0;
  int64_t trial_id = 0;
};

struct Row {
  int64_t trial_id = 0;
  wire::CheckpointEntry checkpoint;
};

// The trials to list: one, or every trial of the experiment.
absl::StatusOr<std::vector<int64_t>> TrialsOf(client::MasterClient& client, const ListArgs& args) {
  if (args.trial_id > 0) return std::vector<int64_t>{args.trial_id};
  COHORT_ASSIGN_OR_RETURN(wire::ExperimentDescription e,
                          GetAs(client, absl::StrCat("/api/v1/experiments/", args.experiment_id),
                                [](const Json& j) { return wire::ParseExperimentDescription(j); }));
  std::vector<int64_t> ids;
  for (const wire::TrialDescription& t : e.trials) ids.push_back(t.id);
  return ids;
}

int ListCheckpoints(const CommandContext& context, const ListArgs& args) {
  if ((args.experiment_id > 0) == (args.trial_id > 0)) {
    return Fail(absl::InvalidArgumentError(
        "name an experiment (`cohort checkpoint list 3`) or a trial (`--trial 7`), not both"));
  }
  client::MasterClient client = context.Client();
  absl::StatusOr<std::vector<int64_t>> trials = TrialsOf(client, args);
  if (!trials.ok()) return Fail(trials.status());
  std::vector<Row> rows;
  for (int64_t trial : *trials) {
    absl::StatusOr<wire::CheckpointList> list = GetAs(
        client, absl::StrCat("/api/v1/trials/", trial, "/checkpoints"), wire::ParseCheckpointList);
    if (!list.ok()) return Fail(list.status());
    for (wire::CheckpointEntry& c : list->checkpoints) rows.push_back({trial, std::move(c)});
  }
  if (context.json()) {
    Json out = Json::array();
    for (const Row& r : rows) {
      Json entry = wire::CheckpointList{{r.checkpoint}}.ToJson()["checkpoints"][0];
      entry["trial_id"] = r.trial_id;
      out.push_back(entry);
    }
    return PrintJson(Json{{"checkpoints", out}});
  }
  if (rows.empty()) {
    std::cout << "no checkpoints yet\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> table;
  for (const Row& r : rows) {
    table.push_back({absl::StrCat(r.trial_id), r.checkpoint.storage_id,
                     absl::StrCat(r.checkpoint.steps_completed), wire::Name(r.checkpoint.state),
                     EmptyAsDash(r.checkpoint.path)});
  }
  PrintTable(std::cout, {"trial", "checkpoint", "batch", "state", "path"}, table);
  return kExitOk;
}

struct DownloadArgs {
  std::string storage_id;
  std::string dir;
};

// "12.3 MB".
std::string Megabytes(int64_t bytes) {
  return absl::StrFormat("%.1f MB", static_cast<double>(bytes) / 1e6);
}

int64_t HeaderInt(const std::map<std::string, std::string>& headers, const std::string& name) {
  int64_t value = 0;
  auto it = headers.find(name);
  return it != headers.end() && absl::SimpleAtoi(it->second, &value) ? value : -1;
}

// Fetches the checkpoint's archive into `archive` with a progress line on a terminal; its
// headers.
absl::StatusOr<std::map<std::string, std::string>> Fetch(const CommandContext& context,
                                                         const std::string& storage_id,
                                                         const std::string& archive) {
  client::MasterClient client = context.Client();
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  absl::Time shown = absl::InfinitePast();
  auto progress = [&](int64_t received) {
    if (!tty || absl::Now() - shown < absl::Milliseconds(200)) return;
    shown = absl::Now();
    std::cerr << "\rdownloading checkpoint " << storage_id << ": " << Megabytes(received)
              << std::flush;
  };
  auto headers = client.Download(absl::StrCat("/api/v1/checkpoints/", storage_id, "/download"),
                                 archive, progress);
  if (tty && shown != absl::InfinitePast()) std::cerr << "\n";
  return headers;
}

// The archive unpacked into a new directory `partial`, then renamed to `dest`: `dest` never
// holds part of a checkpoint.
absl::Status Unpack(const std::string& archive, const fs::path& partial, const fs::path& dest,
                    int64_t announced_bytes) {
  std::error_code ec;
  fs::create_directories(partial, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(partial.string(), ": ", ec.message()));
  ContextArchiveLimits limits;
  // No more than the master said it sends (a checkpoint does not change once written).
  if (announced_bytes >= 0) limits.max_unpacked_bytes = announced_bytes;
  COHORT_RETURN_IF_ERROR(ExtractContextFile(archive, partial.string(), limits));
  if (fs::exists(dest, ec)) fs::remove(dest, ec);  // an empty directory (checked before)
  fs::rename(partial, dest, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("moving the checkpoint into ", dest.string(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

int DescribeCheckpoint(const CommandContext& context, const std::string& id) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::CheckpointDescription> d =
      GetAs(client, absl::StrCat("/api/v1/checkpoints/", id), wire::ParseCheckpointDescription);
  if (!d.ok()) return Fail(d.status());
  if (context.json()) return PrintJson(d->ToJson());
  const wire::CheckpointEntry& c = d->checkpoint;
  PrintTable(
      std::cout, {"field", "value"},
      {{"checkpoint", c.storage_id},
       {"experiment", absl::StrCat(d->experiment_id)},
       {"trial", absl::StrCat(d->trial_id)},
       {"batch", absl::StrCat(c.steps_completed)},
       {"state", wire::Name(c.state)},
       {"path", EmptyAsDash(c.path)},
       {"registered as", d->registered_as.empty() ? "-" : absl::StrJoin(d->registered_as, ", ")},
       {"metadata", c.metadata.is_object() && !c.metadata.empty() ? c.metadata.dump() : "-"}});
  return kExitOk;
}

int DeleteCheckpoint(const CommandContext& context, const std::string& id, bool yes) {
  return DeleteAfterAsking(
      context, yes, "checkpoint " + id,
      absl::StrCat("Delete checkpoint ", id, "'s files? This cannot be undone."),
      absl::StrCat("/api/v1/checkpoints/", id),
      absl::StrCat("checkpoint ", id, ": deleted (its record stays, DELETED)"));
}

void AddDescribeAndDelete(CLI::App* group, CommandContext* context) {
  auto id = std::make_shared<std::string>();
  auto yes = std::make_shared<bool>(false);
  CLI::App* describe = group->add_subcommand(
      "describe", "A checkpoint's experiment, trial, batch, state and the model versions it is");
  describe->add_option("uuid", *id, "Checkpoint id (`cohort checkpoint list`)")->required();
  context->AddJsonFlag(describe);
  context->OnRun(describe, [context, id] { return DescribeCheckpoint(*context, *id); });
  CLI::App* del = group->add_subcommand(
      "delete", "Delete a checkpoint's files (of an ended experiment; its owner or an admin)");
  del->add_option("uuid", *id, "Checkpoint id (`cohort checkpoint list`)")->required();
  del->add_flag("--yes,-y", *yes, "Do not ask for confirmation");
  del->footer(
      "A checkpoint a model version holds is kept: `cohort model delete-version` first.\n"
      "Example:\n  cohort checkpoint delete 5f0c...e1 --yes");
  context->OnRun(del, [context, id, yes] { return DeleteCheckpoint(*context, *id, *yes); });
}

void AddDownload(CLI::App* group, CommandContext* context) {
  auto args = std::make_shared<DownloadArgs>();
  CLI::App* download = group->add_subcommand(
      "download", "Copy a checkpoint's files from the master into a new directory");
  download->add_option("uuid", args->storage_id, "Checkpoint id (`cohort checkpoint list`)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& id) {
            // It becomes part of a file name here and a path on the master: a name, never a path.
            return wire::IsSafeName(id) ? std::string()
                                        : "a checkpoint id " + wire::SafeNameError(id);
          },
          "UUID"));
  download->add_option("dir", args->dir, "Directory to create (or an empty one)")->required();
  download->footer(
      "Example:\n  cohort checkpoint download 5f0c...e1 ./best-model\n"
      "The files arrive as the trial wrote them (model.pt, metadata.json, ...); the directory "
      "is filled only once the whole checkpoint has arrived.");
  context->OnRun(download, [context, args] {
    return DownloadCheckpoint(*context, args->storage_id, args->dir);
  });
}

}  // namespace

void AddCheckpointCommands(CLI::App* root, CommandContext* context) {
  CLI::App* group =
      root->add_subcommand("checkpoint", "Checkpoints: list, describe, download, delete");
  group->alias("c");
  group->require_subcommand(1);
  auto args = std::make_shared<ListArgs>();
  CLI::App* list = group->add_subcommand(
      "list", "An experiment's (or a trial's) checkpoints, kept or deleted by the checkpoint GC");
  list->add_option("experiment", args->experiment_id, "Experiment id");
  list->add_option("--trial", args->trial_id, "Only this trial's checkpoints");
  context->AddJsonFlag(list);
  list->footer("Examples:\n  cohort checkpoint list 3\n  cohort checkpoint list --trial 7 --json");
  context->OnRun(list, [context, args] { return ListCheckpoints(*context, *args); });
  AddDownload(group, context);
  AddDescribeAndDelete(group, context);
}

int DownloadCheckpoint(const CommandContext& context, const std::string& storage_id,
                       const std::string& dir) {
  const DownloadArgs args{storage_id, dir};
  if (absl::Status id = wire::CheckSafeName("checkpoint id", args.storage_id); !id.ok()) {
    return Fail(id);
  }
  const fs::path dest = fs::absolute(args.dir);
  std::error_code ec;
  if (fs::exists(dest, ec) && !(fs::is_directory(dest, ec) && fs::is_empty(dest, ec))) {
    return Fail(absl::AlreadyExistsError(absl::StrCat(
        args.dir,
        " exists and is not an empty directory: name a new one (the checkpoint's files "
        "go directly into it)")));
  }
  fs::create_directories(dest.parent_path(), ec);
  const std::string tag = absl::StrCat(".cohort-download-", args.storage_id, "-", ::getpid());
  const fs::path partial = dest.parent_path() / tag;
  const std::string archive = partial.string() + ".tar.gz";
  absl::StatusOr<std::map<std::string, std::string>> headers =
      Fetch(context, args.storage_id, archive);
  absl::Status unpacked = headers.ok() ? Unpack(archive, partial, dest,
                                                HeaderInt(*headers, "X-Cohort-Checkpoint-Bytes"))
                                       : headers.status();
  fs::remove(archive, ec);
  if (!unpacked.ok()) {
    fs::remove_all(partial, ec);
    return Fail(unpacked);
  }
  std::cout << "checkpoint " << args.storage_id << " (trial "
            << HeaderInt(*headers, "X-Cohort-Checkpoint-Trial") << ", batch "
            << HeaderInt(*headers, "X-Cohort-Checkpoint-Batch")
            << "): " << HeaderInt(*headers, "X-Cohort-Checkpoint-Files") << " files, "
            << Megabytes(HeaderInt(*headers, "X-Cohort-Checkpoint-Bytes")) << " in "
            << dest.string() << "\n";
  return kExitOk;
}

}  // namespace cohort::cli
