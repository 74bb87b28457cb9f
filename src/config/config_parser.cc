#include "config/config_parser.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "config/error_list.h"
#include "config/hparam_sampler.h"
#include "config/internal/object_reader.h"
#include "config/internal/section_parsers.h"
#include "config/limits.h"

namespace cohort::config {
namespace {

using internal::AtLeast;
using internal::Between;
using internal::GreaterThan;
using internal::ObjectReader;

const Json kNull;

// Marks `key` known and returns its value, or null when absent.
const Json& Field(ObjectReader& r, const char* key) {
  const Json* value = r.Get(key);
  return value != nullptr ? *value : kNull;
}

// "<path>: must be at most <max> bytes, got <size>" for a text over its limit.
void CheckTextSize(absl::string_view path, const std::optional<std::string>& text, size_t max,
                   ErrorList* errors) {
  if (text && text->size() > max) {
    errors->Add(path, absl::StrCat("must be at most ", max, " bytes, got ", text->size()));
  }
}

void CheckLabels(const std::optional<std::vector<std::string>>& labels, ErrorList* errors) {
  if (!labels) return;
  if (labels->size() > kMaxLabels) {
    errors->Add("labels",
                absl::StrCat("must have at most ", kMaxLabels, " labels, got ", labels->size()));
  }
  for (size_t i = 0; i < labels->size() && i < kMaxLabels; ++i) {
    CheckTextSize(absl::StrCat("labels[", i, "]"), (*labels)[i], kMaxLabelBytes, errors);
  }
}

bool IsAbsolutePath(const std::string& p) { return !p.empty() && p[0] == '/'; }

void RequireAbsolute(ObjectReader& r, const char* key, const std::string& value) {
  if (!IsAbsolutePath(value)) {
    r.errors()->Add(r.PathOf(key), absl::StrCat("must be an absolute path, got '", value, "'"));
  }
}

// Reads a list of maps at `key`, calling `item(node, path, effective)` for each.
template <typename F>
void ForEachListItem(ObjectReader& r, const char* key, Json* parent_effective, F item) {
  const Json* list = r.Get(key);
  if (list == nullptr) return;
  if (!list->is_array()) {
    r.errors()->Add(r.PathOf(key), absl::StrCat("expected a list, got ", DescribeValue(*list)));
    return;
  }
  Json& out = (*parent_effective)[key] = Json::array();
  for (size_t i = 0; i < list->size(); ++i) {
    out.push_back(Json::object());
    item((*list)[i], absl::StrCat(r.PathOf(key), "[", i, "]"), &out.back());
  }
}

Resources ParseResources(const Json& node, ErrorList* errors, Json* effective) {
  Resources res;
  ObjectReader r(node, "resources", errors, effective);
  res.slots_per_trial = r.Int("slots_per_trial", 1, Between(1, kMaxSlotsPerTrial)).value_or(1);
  res.max_slots = r.Int("max_slots", std::nullopt, Between(1, kMaxSlotsPerTrial));
  res.priority = r.Int("priority", std::nullopt, Between(1, 99));
  res.weight = r.Number("weight", 1.0, GreaterThan(0)).value_or(1.0);
  res.is_single_node = r.Bool("is_single_node");
  res.resource_pool = r.String("resource_pool");
  ForEachListItem(
      r, "devices", effective, [&](const Json& item, const std::string& path, Json* out) {
        // Docker's short form "host_path:container_path[:mode]" is accepted too.
        if (item.is_string()) {
          const std::string& s = item.get_ref<const std::string&>();
          const size_t a = s.find(':');
          const size_t b = a == std::string::npos ? a : s.find(':', a + 1);
          if (a == std::string::npos || a == 0 || a + 1 == s.size()) {
            errors->Add(path,
                        absl::StrCat("expected host_path:container_path[:mode], got '", s, "'"));
            return;
          }
          Device d{s.substr(0, a), s.substr(a + 1, b == std::string::npos ? b : b - a - 1),
                   b == std::string::npos ? "mrw" : s.substr(b + 1)};
          *out = Json{
              {"host_path", d.host_path}, {"container_path", d.container_path}, {"mode", d.mode}};
          res.devices.push_back(std::move(d));
          return;
        }
        ObjectReader d(item, path, errors, out);
        d.Require("host_path");
        d.Require("container_path");
        Device device;
        device.host_path = d.String("host_path").value_or("");
        device.container_path = d.String("container_path").value_or("");
        device.mode = d.String("mode", "mrw").value_or("mrw");
        d.Finish();
        res.devices.push_back(std::move(device));
      });
  r.Finish();
  return res;
}

Optimizations ParseOptimizations(const Json& node, ErrorList* errors, Json* effective) {
  Optimizations o;
  ObjectReader r(node, "optimizations", errors, effective);
  o.aggregation_frequency = r.Int("aggregation_frequency", 1, AtLeast(1)).value_or(1);
  o.average_aggregated_gradients = r.Bool("average_aggregated_gradients", true).value_or(true);
  o.average_training_metrics = r.Bool("average_training_metrics", true).value_or(true);
  o.gradient_compression = r.Bool("gradient_compression", false).value_or(false);
  o.auto_tune_tensor_fusion = r.Bool("auto_tune_tensor_fusion", false).value_or(false);
  o.tensor_fusion_threshold = r.Int("tensor_fusion_threshold", 64, AtLeast(1)).value_or(64);
  o.tensor_fusion_cycle_time = r.Int("tensor_fusion_cycle_time", 1, AtLeast(0)).value_or(1);
  o.mixed_precision = r.String("mixed_precision", "O0", {"O0", "O1", "O2", "O3"}).value_or("O0");
  r.Finish();
  return o;
}

Profiling ParseProfiling(const Json& node, ErrorList* errors, Json* effective) {
  Profiling p;
  ObjectReader r(node, "profiling", errors, effective);
  p.enabled = r.Bool("enabled", false).value_or(false);
  p.begin_on_batch = r.Int("begin_on_batch", 0, Between(0, kMaxLengthUnits)).value_or(0);
  p.end_after_batch = r.Int("end_after_batch", std::nullopt, Between(0, kMaxLengthUnits));
  if (!r.Has("end_after_batch")) r.Set("end_after_batch", nullptr);
  p.sync_timings = r.Bool("sync_timings", true).value_or(true);
  if (p.end_after_batch && *p.end_after_batch < p.begin_on_batch) {
    errors->Add(r.PathOf("end_after_batch"),
                absl::StrCat("must be >= begin_on_batch (", p.begin_on_batch, "), got ",
                             *p.end_after_batch));
  }
  r.Finish();
  return p;
}

CheckpointStorage ParseCheckpointStorage(const Json& node, ErrorList* errors, Json* effective) {
  CheckpointStorage c;
  ObjectReader r(node, "checkpoint_storage", errors, effective);
  r.Require("type");
  c.type = r.String("type", std::nullopt, {"shared_fs", "directory"}).value_or("");
  if (c.type == "shared_fs" || c.type.empty()) {
    if (c.type == "shared_fs") r.Require("host_path");
    if (auto host = r.String("host_path")) {
      c.host_path = *host;
      RequireAbsolute(r, "host_path", c.host_path);
    }
    c.storage_path = r.String("storage_path");
    r.String("propagation", c.type.empty() ? std::nullopt : std::optional<std::string>("rprivate"));
  }
  if (c.type == "directory" || c.type.empty()) {
    if (c.type == "directory") r.Require("container_path");
    c.container_path = r.String("container_path").value_or("");
  }
  c.save_experiment_best = r.Int("save_experiment_best", 0, AtLeast(0)).value_or(0);
  c.save_trial_best = r.Int("save_trial_best", 1, AtLeast(0)).value_or(1);
  c.save_trial_latest = r.Int("save_trial_latest", 1, AtLeast(0)).value_or(1);
  r.Finish();
  return c;
}

std::vector<std::pair<std::string, std::string>> ParseEnvironment(const Json& node,
                                                                  ErrorList* errors,
                                                                  Json* effective) {
  std::vector<std::pair<std::string, std::string>> vars;
  ObjectReader r(node, "environment", errors, effective);
  r.Raw("image");
  if (auto list = r.StringList("environment_variables")) {
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string& kv = (*list)[i];
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        errors->Add(absl::StrCat(r.PathOf("environment_variables"), "[", i, "]"),
                    absl::StrCat("expected KEY=VALUE, got '", kv, "'"));
        continue;
      }
      // A key given twice (a template's list followed by the config's) takes the later value,
      // as it would in a shell environment.
      std::string key = kv.substr(0, eq);
      auto same =
          std::find_if(vars.begin(), vars.end(), [&](const auto& var) { return var.first == key; });
      if (same != vars.end())
        same->second = kv.substr(eq + 1);
      else
        vars.emplace_back(std::move(key), kv.substr(eq + 1));
    }
  } else if (!r.Has("environment_variables")) {
    r.Set("environment_variables", Json::array());
  }
  r.Finish();
  return vars;
}

BindMount ParseBindMount(const Json& node, const std::string& path, ErrorList* errors,
                         Json* effective) {
  BindMount m;
  ObjectReader r(node, path, errors, effective);
  r.Require("host_path");
  r.Require("container_path");
  if (auto host = r.String("host_path")) {
    m.host_path = *host;
    RequireAbsolute(r, "host_path", m.host_path);
  }
  m.container_path = r.String("container_path").value_or("");
  m.read_only = r.Bool("read_only", false).value_or(false);
  r.String("propagation", "rprivate");
  r.Finish();
  return m;
}

void CheckGlobalBatchSize(const Json& hparams_tree, ExperimentConfig& config, ErrorList* errors) {
  const char* kPath = "hyperparameters.global_batch_size";
  for (const auto& [name, hp] : config.hyperparameters) {
    if (name != "global_batch_size") continue;
    if (hp.type == Hyperparameter::Type::kConst && hp.val.is_number_integer() &&
        hp.val.get<int64_t>() > kMaxGlobalBatchSize) {
      errors->Add(
          kPath, absl::StrCat("must be <= ", kMaxGlobalBatchSize, ", got ", hp.val.get<int64_t>()));
    } else if (hp.type == Hyperparameter::Type::kConst && hp.val.is_number_integer() &&
               hp.val.get<int64_t>() > 0) {
      config.global_batch_size = hp.val.get<int64_t>();
    } else if (hp.type == Hyperparameter::Type::kConst) {
      errors->Add(kPath, absl::StrCat("must be a positive integer, got ", DescribeValue(hp.val)));
    } else {
      errors->Add(kPath, "must be a constant (a positive integer), not a searched hyperparameter");
    }
    return;
  }
  if (hparams_tree.is_object() || hparams_tree.is_null()) {
    errors->Add(kPath, "required field is missing (the batch size summed over all slots)");
  }
}

// `entrypoint`: a command, as a non-empty string or a non-empty list of strings.
void ParseEntrypoint(ObjectReader& r, ExperimentConfig& config, ErrorList* errors) {
  if (!r.Require("entrypoint")) return;
  const Json& entry = *r.Get("entrypoint");
  if (entry.is_string() && !entry.get<std::string>().empty()) {
    config.entrypoint = {entry.get<std::string>()};
    r.Set("entrypoint", entry);
  } else if (entry.is_array() && !entry.empty()) {
    if (auto list = r.StringList("entrypoint")) config.entrypoint = *list;
  } else {
    errors->Add("entrypoint", absl::StrCat("expected a command (a non-empty string or list of "
                                           "strings), got ",
                                           DescribeValue(entry)));
  }
}

// `reproducibility.experiment_seed`; when absent options.seed_if_absent, else a random seed.
uint32_t ParseExperimentSeed(const Json& node, const ParseOptions& options, ErrorList* errors,
                             Json* effective) {
  ObjectReader repro(node, "reproducibility", errors, effective);
  uint32_t fallback = options.seed_if_absent.has_value()
                          ? *options.seed_if_absent
                          : static_cast<uint32_t>(std::random_device{}() & 0x7fffffffu);
  const uint32_t seed = static_cast<uint32_t>(
      repro.Int("experiment_seed", fallback, Between(0, 4294967295.0)).value_or(fallback));
  repro.Finish();
  return seed;
}

// The rules that span fields: lengths in epochs need records_per_epoch, max_slots covers a
// trial, and (only when everything else is valid) the grid searcher's own rules.
void CheckCrossFieldRules(const ExperimentConfig& config, ErrorList* errors) {
  if (config.records_per_epoch == 0) {
    auto uses_epochs = [](const std::optional<Length>& l) {
      return l.has_value() && l->unit == Length::Unit::kEpochs;
    };
    const char* kRule = "a length in epochs needs records_per_epoch (> 0) at the top level";
    if (uses_epochs(config.searcher.max_length)) errors->Add("searcher.max_length", kRule);
    if (uses_epochs(config.min_validation_period)) errors->Add("min_validation_period", kRule);
    if (uses_epochs(config.min_checkpoint_period)) errors->Add("min_checkpoint_period", kRule);
  }
  if (config.resources.max_slots &&
      *config.resources.max_slots < config.resources.slots_per_trial) {
    errors->Add("resources.max_slots",
                absl::StrCat("must be >= slots_per_trial (", config.resources.slots_per_trial,
                             "), got ", *config.resources.max_slots));
  }
  if (errors->empty() && config.searcher.name == "grid") {
    // The grid's own rules (a count for every searched hyperparameter, a bounded size).
    absl::StatusOr<std::vector<Json>> grid =
        SampleHyperparameters(config.hyperparameters, config.searcher, config.experiment_seed);
    for (const std::string& error : ConfigErrors(grid.status())) errors->Add("", error);
  }
}

// What is accepted must read again: the master stores ToYaml(effective) and parses it again
// (as do the agents it sends it to), with the same kMaxYamlBytes limit as any YAML. Aliases
// can expand a small text well past that while staying under ParseYaml's expansion limits.
// Found by fuzz/config_fuzzer.
void CheckEffectiveSize(const Json& effective, ErrorList* errors) {
  const size_t bytes = ToYaml(effective).size();
  if (bytes <= kMaxYamlBytes) return;
  errors->Add("", absl::StrCat("the config is ", bytes,
                               " bytes of YAML once its aliases are expanded and its defaults "
                               "written out, more than the limit of ",
                               kMaxYamlBytes, " bytes"));
}

}  // namespace

absl::StatusOr<ExperimentConfig> ParseExperimentConfig(const Json& tree,
                                                       const ParseOptions& options) {
  ExperimentConfig config;
  ErrorList errors;
  if (!tree.is_object()) {
    errors.Add("", tree.is_null() ? "the config is empty"
                                  : absl::StrCat("expected a map, got ", DescribeValue(tree)));
    return errors.ToStatus();
  }
  Json& effective = config.effective;
  ObjectReader r(tree, "", &errors, &effective);

  config.name = r.String("name");
  config.description = r.String("description");
  CheckTextSize("name", config.name, kMaxNameBytes, &errors);
  CheckTextSize("description", config.description, kMaxDescriptionBytes, &errors);
  CheckTextSize("template", r.String("template"), kMaxNameBytes, &errors);
  r.String("workspace");
  r.String("project");
  CheckLabels(r.StringList("labels"), &errors);
  ParseEntrypoint(r, config, &errors);
  config.resources = ParseResources(Field(r, "resources"), &errors, &effective["resources"]);

  const Json& hparams = Field(r, "hyperparameters");
  config.hyperparameters = internal::ParseHyperparameters(hparams, "hyperparameters", &errors,
                                                          &effective["hyperparameters"]);
  CheckGlobalBatchSize(hparams, config, &errors);

  config.searcher = internal::ParseSearcher(Field(r, "searcher"), &errors, &effective["searcher"]);
  config.optimizations =
      ParseOptimizations(Field(r, "optimizations"), &errors, &effective["optimizations"]);

  config.profiling = ParseProfiling(Field(r, "profiling"), &errors, &effective["profiling"]);
  config.experiment_seed = ParseExperimentSeed(Field(r, "reproducibility"), options, &errors,
                                               &effective["reproducibility"]);

  if (const Json* storage = r.Get("checkpoint_storage")) {
    config.checkpoint_storage =
        ParseCheckpointStorage(*storage, &errors, &effective["checkpoint_storage"]);
  }
  for (const char* key : {"min_validation_period", "min_checkpoint_period"}) {
    if (const Json* period = r.Get(key)) {
      auto length =
          internal::ParseLength(*period, key, /*allow_zero=*/true, &errors, &effective[key]);
      (std::string(key) == "min_validation_period" ? config.min_validation_period
                                                   : config.min_checkpoint_period) = length;
    }
  }
  config.records_per_epoch = r.Int("records_per_epoch", 0, Between(0, kMaxLengthUnits)).value_or(0);
  config.scheduling_unit = r.Int("scheduling_unit", 100, Between(1, kMaxLengthUnits)).value_or(100);
  config.max_restarts = r.Int("max_restarts", 5, Between(0, kMaxRestarts)).value_or(5);
  r.Bool("perform_initial_validation", false);
  r.Bool("debug", false);
  if (const Json* data = r.Raw("data")) {
    config.data = *data;
  } else {
    r.Set("data", Json::object());
  }
  config.environment_variables =
      ParseEnvironment(Field(r, "environment"), &errors, &effective["environment"]);
  ForEachListItem(r, "bind_mounts", &effective,
                  [&](const Json& item, const std::string& path, Json* out) {
                    config.bind_mounts.push_back(ParseBindMount(item, path, &errors, out));
                  });
  if (!r.Has("bind_mounts")) r.Set("bind_mounts", Json::array());
  r.Finish();

  CheckCrossFieldRules(config, &errors);
  if (errors.empty()) CheckEffectiveSize(config.effective, &errors);
  if (!errors.empty()) return errors.ToStatus();
  return config;
}

}  // namespace cohort::config
