#include "cli/model_commands.h"

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/checkpoint_commands.h"
#include "cli/exit_codes.h"
#include "cli/table.h"
#include "wire/model_bodies.h"

namespace cohort::cli {
namespace {

std::string ModelPath(const std::string& name) { return absl::StrCat("/api/v1/models/", name); }

// --metadata's text as a JSON object, or InvalidArgument naming the flag.
absl::StatusOr<Json> MetadataFlag(const std::string& text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metadata must be a JSON object, like '{\"dataset\": \"v2\"}', got: ", text));
  }
  return json;
}

// What the verbs that write a model or a version take from their flags.
struct Fields {
  std::string name;
  std::string description;
  std::string comment;
  std::string notes;
  std::vector<std::string> labels;
  std::string metadata;  // JSON text; empty: none given
  bool no_labels = false;
};

void AddLabelAndMetadataFlags(CLI::App* verb, Fields& f) {
  verb->add_option("--label,-l", f.labels, "A label (repeat the flag for more)");
  verb->add_option("--metadata", f.metadata, "A JSON object of metadata, like '{\"k\": 1}'");
}

std::string LabelsCell(const std::vector<std::string>& labels) {
  return labels.empty() ? "-" : absl::StrJoin(labels, ",");
}

int CreateModel(const CommandContext& context, const std::string& name, const Fields& f) {
  wire::NewModel model{name, f.description, f.labels};
  if (!f.metadata.empty()) {
    absl::StatusOr<Json> metadata = MetadataFlag(f.metadata);
    if (!metadata.ok()) return Fail(metadata.status());
    model.metadata = *metadata;
  }
  absl::StatusOr<wire::Model> created =
      ParseAnswer("POST /api/v1/models", context.Client().Post("/api/v1/models", model.ToJson()),
                  wire::ParseModel);
  if (!created.ok()) return Fail(created.status());
  if (context.json()) return PrintJson(created->ToJson());
  std::cout << "model " << created->name << " created (register a checkpoint with `cohort model "
            << "register-version " << created->name << " CHECKPOINT_UUID`)\n";
  return kExitOk;
}

int ListModels(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::ModelList> list = GetAs(client, "/api/v1/models", wire::ParseModelList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::Model& m : list->models) {
    rows.push_back({m.name, std::to_string(m.num_versions), m.owner, FormatTime(m.updated_ms),
                    LabelsCell(m.labels), EmptyAsDash(m.description)});
  }
  PrintTable(std::cout, {"name", "versions", "owner", "updated", "labels", "description"}, rows);
  if (rows.empty()) std::cout << "no models yet: `cohort model create NAME` makes one\n";
  return kExitOk;
}

void PrintVersions(const std::vector<wire::ModelVersion>& versions) {
  std::vector<std::vector<std::string>> rows;
  for (const wire::ModelVersion& v : versions) {
    rows.push_back({std::to_string(v.version), v.checkpoint, EmptyAsDash(v.name), v.registered_by,
                    FormatTime(v.created_ms), LabelsCell(v.labels), EmptyAsDash(v.comment)});
  }
  PrintTable(std::cout,
             {"version", "checkpoint", "name", "registered by", "when", "labels", "comment"}, rows);
}

int DescribeModel(const CommandContext& context, const std::string& name) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::ModelDescription> d =
      GetAs(client, ModelPath(name), wire::ParseModelDescription);
  if (!d.ok()) return Fail(d.status());
  if (context.json()) return PrintJson(d->ToJson());
  const wire::Model& m = d->model;
  PrintTable(std::cout, {"field", "value"},
             {{"name", m.name},
              {"description", EmptyAsDash(m.description)},
              {"owner", m.owner},
              {"created", FormatTime(m.created_ms)},
              {"updated", FormatTime(m.updated_ms)},
              {"labels", LabelsCell(m.labels)},
              {"metadata", m.metadata.empty() ? "-" : m.metadata.dump()}});
  std::cout << "\n";
  if (d->versions.empty()) {
    std::cout << "no versions yet: `cohort model register-version " << m.name
              << " CHECKPOINT_UUID` registers one\n";
    return kExitOk;
  }
  PrintVersions(d->versions);
  return kExitOk;
}

int RegisterVersion(const CommandContext& context, const std::string& model,
                    const std::string& checkpoint, const Fields& f) {
  wire::NewModelVersion v{checkpoint, f.name, f.comment, f.notes, f.labels};
  if (!f.metadata.empty()) {
    absl::StatusOr<Json> metadata = MetadataFlag(f.metadata);
    if (!metadata.ok()) return Fail(metadata.status());
    v.metadata = *metadata;
  }
  const std::string path = ModelPath(model) + "/versions";
  absl::StatusOr<wire::ModelVersion> stored =
      ParseAnswer("POST " + path, context.Client().Post(path, v.ToJson()), wire::ParseModelVersion);
  if (!stored.ok()) return Fail(stored.status());
  if (context.json()) return PrintJson(stored->ToJson());
  std::cout << "checkpoint " << stored->checkpoint << " registered as version " << stored->version
            << " of model " << stored->model << "\n";
  return kExitOk;
}

int UpdateModel(const CommandContext& context, const std::string& name, const Fields& f,
                const CLI::App& verb) {
  wire::ModelPatch patch;
  if (verb.count("--name") > 0) patch.name = f.name;
  if (verb.count("--description") > 0) patch.description = f.description;
  if (f.no_labels) {
    patch.labels.emplace();
  } else if (!f.labels.empty()) {
    patch.labels = f.labels;
  }
  if (!f.metadata.empty()) {
    absl::StatusOr<Json> metadata = MetadataFlag(f.metadata);
    if (!metadata.ok()) return Fail(metadata.status());
    patch.metadata = *metadata;
  }
  if (patch.ToJson().empty()) {
    return Fail(absl::InvalidArgumentError(
        "nothing to change: give --name, --description, --label, --no-labels or --metadata"));
  }
  absl::StatusOr<wire::Model> changed =
      ParseAnswer("PATCH " + ModelPath(name),
                  context.Client().Patch(ModelPath(name), patch.ToJson()), wire::ParseModel);
  if (!changed.ok()) return Fail(changed.status());
  if (context.json()) return PrintJson(changed->ToJson());
  std::cout << "model " << changed->name << " updated\n";
  return kExitOk;
}

// The version NAME[:VERSION] names: that number, else the model's latest.
absl::StatusOr<wire::ModelVersion> ResolveVersion(const CommandContext& context,
                                                  const std::string& spec) {
  const size_t colon = spec.rfind(':');
  const std::string name = spec.substr(0, colon);
  client::MasterClient client = context.Client();
  if (colon != std::string::npos) {
    int64_t number = 0;
    if (!absl::SimpleAtoi(spec.substr(colon + 1), &number) || number < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", spec, "': the version after ':' must be a number >= 1, like resnet:3"));
    }
    return GetAs(client, absl::StrCat(ModelPath(name), "/versions/", number),
                 wire::ParseModelVersion);
  }
  absl::StatusOr<wire::ModelDescription> d =
      GetAs(client, ModelPath(name), wire::ParseModelDescription);
  if (!d.ok()) return d.status();
  if (d->versions.empty()) {
    return absl::NotFoundError(absl::StrCat("model ", name, " has no versions yet: `cohort model ",
                                            "register-version ", name, " CHECKPOINT_UUID`"));
  }
  return d->versions.back();
}

int DownloadVersion(const CommandContext& context, const std::string& spec,
                    const std::string& dir) {
  absl::StatusOr<wire::ModelVersion> v = ResolveVersion(context, spec);
  if (!v.ok()) return Fail(v.status());
  std::cout << "model " << v->model << " version " << v->version << ": ";
  return DownloadCheckpoint(context, v->checkpoint, dir);
}

void AddDownload(CLI::App* model, CommandContext* context) {
  auto spec = std::make_shared<std::string>();
  auto dir = std::make_shared<std::string>();
  CLI::App* sub = model->add_subcommand(
      "download", "Copy a model version's checkpoint from the master into a new directory");
  sub->add_option("model", *spec, "NAME (its latest version) or NAME:VERSION")->required();
  sub->add_option("dir", *dir, "Directory to create (or an empty one)")->required();
  sub->footer(
      "As `checkpoint download`: the files arrive as the trial wrote them, and the directory "
      "is filled only once the whole checkpoint has arrived.\n"
      "Examples:\n  cohort model download resnet ./resnet-latest\n"
      "  cohort model download resnet:2 ./resnet-v2");
  context->OnRun(sub, [context, spec, dir] { return DownloadVersion(*context, *spec, *dir); });
}

void AddCreate(CLI::App* model, CommandContext* context) {
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<Fields>();
  CLI::App* sub = model->add_subcommand("create", "Create a model (a name for what you ship)");
  sub->add_option("name", *name, "Model name: letters, digits, '.', '_' and '-'")->required();
  sub->add_option("--description,-d", f->description, "What the model is");
  AddLabelAndMetadataFlags(sub, *f);
  context->AddJsonFlag(sub, "Print the model created as JSON");
  sub->footer(
      "Example:\n  cohort model create mnist -d 'the Fashion-MNIST classifier' -l vision\n"
      "  cohort checkpoint list 7        # the checkpoints of experiment 7, with their UUIDs\n"
      "  cohort model register-version mnist UUID");
  context->OnRun(sub, [context, name, f] { return CreateModel(*context, *name, *f); });
}

void AddRegisterVersion(CLI::App* model, CommandContext* context) {
  auto name = std::make_shared<std::string>();
  auto checkpoint = std::make_shared<std::string>();
  auto f = std::make_shared<Fields>();
  CLI::App* sub = model->add_subcommand("register-version",
                                        "Register a checkpoint as the model's next version");
  sub->add_option("name", *name, "Model name")->required();
  sub->add_option("checkpoint", *checkpoint, "Checkpoint UUID (`cohort checkpoint list EXP`)")
      ->required();
  sub->add_option("--name", f->name, "The version's name");
  sub->add_option("--comment", f->comment, "A one-line comment");
  sub->add_option("--notes", f->notes, "Longer notes (Markdown)");
  AddLabelAndMetadataFlags(sub, *f);
  context->AddJsonFlag(sub, "Print the version registered as JSON");
  sub->footer(
      "A registered checkpoint is kept: the checkpoint GC and `experiment delete` leave it.\n"
      "Example:\n  cohort model register-version resnet 3f6c9d0e-... --comment 'top-1 0.76'");
  context->OnRun(sub, [context, name, checkpoint, f] {
    return RegisterVersion(*context, *name, *checkpoint, *f);
  });
}

void AddUpdate(CLI::App* model, CommandContext* context) {
  auto name = std::make_shared<std::string>();
  auto f = std::make_shared<Fields>();
  CLI::App* sub = model->add_subcommand("update",
                                        "Rename a model or change its description, "
                                        "labels or metadata");
  sub->add_option("name", *name, "Model name")->required();
  sub->add_option("--name", f->name, "A new name");
  sub->add_option("--description,-d", f->description, "A new description");
  AddLabelAndMetadataFlags(sub, *f);
  sub->add_flag("--no-labels", f->no_labels, "Remove every label")->excludes("--label");
  context->AddJsonFlag(sub, "Print the model as JSON");
  sub->footer(
      "--label replaces the labels; --metadata replaces the metadata.\n"
      "Example:\n  cohort model update resnet --label vision --label prod");
  context->OnRun(sub, [context, name, f, sub] { return UpdateModel(*context, *name, *f, *sub); });
}

void AddDeletes(CLI::App* model, CommandContext* context) {
  auto name = std::make_shared<std::string>();
  auto version = std::make_shared<int64_t>(0);
  auto yes = std::make_shared<bool>(false);
  CLI::App* del = model->add_subcommand("delete", "Delete a model and all its versions");
  del->add_option("name", *name, "Model name")->required();
  del->add_flag("--yes,-y", *yes, "Do not ask for confirmation");
  del->footer("The checkpoints stay; they are the checkpoint GC's again.");
  context->OnRun(del, [context, name, yes] {
    return DeleteAfterAsking(*context, *yes, "model " + *name,
                             absl::StrCat("Delete model ", *name, " and all its versions?"),
                             ModelPath(*name), absl::StrCat("model ", *name, " deleted"));
  });
  CLI::App* del_version = model->add_subcommand("delete-version", "Delete one version");
  del_version->add_option("name", *name, "Model name")->required();
  del_version->add_option("version", *version, "Version number")->required();
  del_version->add_flag("--yes,-y", *yes, "Do not ask for confirmation");
  del_version->footer("Its number is not given again; its checkpoint stays.");
  context->OnRun(del_version, [context, name, version, yes] {
    const std::string what = absl::StrCat("version ", *version, " of model ", *name);
    return DeleteAfterAsking(*context, *yes, what, absl::StrCat("Delete ", what, "?"),
                             absl::StrCat(ModelPath(*name), "/versions/", *version),
                             what + " deleted");
  });
}

}  // namespace

void AddModelCommands(CLI::App* root, CommandContext* context) {
  CLI::App* model = root->add_subcommand("model",
                                         "The model registry: named models and their "
                                         "versions, each a checkpoint");
  model->require_subcommand(1);
  AddCreate(model, context);
  CLI::App* list = model->add_subcommand("list", "List models");
  list->alias("ls");
  context->AddJsonFlag(list);
  context->OnRun(list, [context] { return ListModels(*context); });
  auto name = std::make_shared<std::string>();
  CLI::App* describe = model->add_subcommand("describe", "Show a model and its versions");
  describe->add_option("name", *name, "Model name")->required();
  context->AddJsonFlag(describe);
  context->OnRun(describe, [context, name] { return DescribeModel(*context, *name); });
  AddRegisterVersion(model, context);
  AddUpdate(model, context);
  AddDownload(model, context);
  AddDeletes(model, context);
}

}  // namespace cohort::cli
