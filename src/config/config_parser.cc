#include "config/config_parser.h"

#include <algorithm>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

constexpr char kNoContainer[] =
    "Cohort runs trials as processes on the agent's host, not in containers";

// resources.devices[i]: {host_path, container_path, mode} or Docker's short form
// "host_path:container_path[:mode]".
Device ParseDevice(const Json& item, const std::string& path, ErrorList* errors, Json* out) {
  Device device;
  if (item.is_string()) {
    const std::string& s = item.get_ref<const std::string&>();
    const size_t a = s.find(':');
    const size_t b = a == std::string::npos ? a : s.find(':', a + 1);
    if (a == std::string::npos || a == 0 || a + 1 == s.size()) {
      errors->Add(path, absl::StrCat("expected host_path:container_path[:mode], got '", s, "'"));
      return device;
    }
    device = Device{s.substr(0, a), s.substr(a + 1, b == std::string::npos ? b : b - a - 1),
                    b == std::string::npos ? "mrw" : s.substr(b + 1)};
    *out = Json{{"host_path", device.host_path},
                {"container_path", device.container_path},
                {"mode", device.mode}};
    return device;
  }
  ObjectReader d(item, path, errors, out);
  d.Require("host_path");
  d.Require("container_path");
  device.host_path = d.String("host_path").value_or("");
  device.container_path = d.String("container_path").value_or("");
  device.mode = d.String("mode", "mrw").value_or("mrw");
  d.Finish();
  return device;
}

// Determined's memory size: digits with an optional fraction, an optional space, and an
// optional unit: b, or k m g t p followed by an optional b or ib (any case): "4G", "1.5 GiB".
// Written by hand rather than as a std::regex, whose matcher recurses per character.
bool IsMemorySize(absl::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && absl::ascii_isdigit(s[i])) ++i;
    return i - start;
  };
  size_t whole = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else if (whole == 0) {
    return false;
  }
  if (i < s.size() && s[i] == ' ') ++i;
  if (i == s.size()) return true;
  const char unit = absl::ascii_tolower(s[i++]);
  if (unit == 'b') return i == s.size();
  if (std::string("kmgtp").find(unit) == std::string::npos) return false;
  if (i < s.size() && absl::ascii_tolower(s[i]) == 'i') ++i;
  if (i < s.size() && absl::ascii_tolower(s[i]) == 'b') return i + 1 == s.size();
  return i == s.size() && absl::ascii_tolower(s[i - 1]) != 'i';
}

// resources.shm_size: bytes, or a size such as "4G", "512 MiB", "1.5g".
void CheckShmSize(ObjectReader& r) {
  const Json* size = r.Get("shm_size");
  if (size == nullptr) return;
  if (size->is_number_integer()) {
    r.Int("shm_size");
  } else if (size->is_string() && IsMemorySize(size->get<std::string>())) {
    r.Set("shm_size", *size);
  } else if (size->is_string()) {
    r.errors()->Add(r.PathOf("shm_size"),
                    absl::StrCat("must be a valid memory size (such as 4G or 512MiB), got '",
                                 size->get<std::string>(), "'"));
  } else {
    r.errors()->Add(r.PathOf("shm_size"), absl::StrCat("expected an integer or a size string, got ",
                                                       DescribeValue(*size)));
  }
  r.Warn("shm_size", kNoContainer);
}

Resources ParseResources(const Json& node, ErrorList* errors, Json* effective) {
  Resources res;
  ObjectReader r(node, "resources", errors, effective);
  // Determined's minimum is 0: a trial that takes no GPU. A Cohort slot is a GPU or a share of
  // an agent's cores, so such a trial runs on one slot (said once, as a warning).
  res.slots_per_trial = r.Int("slots_per_trial", 1, Between(0, kMaxSlotsPerTrial)).value_or(1);
  if (res.slots_per_trial == 0) {
    r.errors()->AddWarning(r.PathOf("slots_per_trial"),
                           "0 (in Determined a trial that takes no GPU) runs on 1 slot: a Cohort "
                           "slot is a GPU or a share of an agent's cores");
    res.slots_per_trial = 1;
  }
  // The scheduler honours these (docs/design/0020-sharing-a-cluster.md): at most max_slots
  // held at once, the priority policy's order, the fair-share policy's weight, and the pool.
  res.max_slots = r.Int("max_slots", std::nullopt, Between(1, kMaxSlotsPerTrial));
  res.priority = r.Int("priority", std::nullopt, Between(1, 99));
  res.weight = r.Number("weight", 1.0, GreaterThan(0)).value_or(1.0);
  res.is_single_node = r.Ignored(
      "is_single_node",
      "Cohort's scheduler does not honour it yet: a trial larger than one agent spans whole agents",
      [&] { return r.Bool("is_single_node"); });
  res.resource_pool = r.String("resource_pool");
  r.Ignored("agent_label", "Determined removed agent labels in 0.20 and ignores them too",
            [&] { return r.String("agent_label"); });
  r.Ignored("native_parallel", "Determined's native parallelism has no meaning in Cohort",
            [&] { return r.Bool("native_parallel"); });
  r.Ignored("slots", "a legacy Determined field; use slots_per_trial",
            [&] { return r.Int("slots", std::nullopt, AtLeast(0)); });
  CheckShmSize(r);
  r.ForEachItem("devices", [&](const Json& item, const std::string& path, Json* out) {
    res.devices.push_back(ParseDevice(item, path, errors, out));
  });
  r.Warn("devices", "Cohort's trials see the host's devices directly (no container)");
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
  r.Ignored("grad_updates_size_file", "Cohort does not write Horovod's gradient-size file",
            [&] { return r.String("grad_updates_size_file"); });
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

// One value of hyperparameters.global_batch_size (`path`: where): a positive integer up to
// kMaxGlobalBatchSize; false after adding the error.
bool CheckBatchSizeValue(const Json& value, const std::string& path, ErrorList* errors) {
  if (!value.is_number_integer() || value.get<int64_t>() <= 0) {
    errors->Add(path, absl::StrCat("must be a positive integer, got ", DescribeValue(value)));
    return false;
  }
  if (value.get<int64_t>() > kMaxGlobalBatchSize) {
    errors->Add(path,
                absl::StrCat("must be <= ", kMaxGlobalBatchSize, ", got ", value.get<int64_t>()));
    return false;
  }
  return true;
}

// hyperparameters.global_batch_size, when given (as in Determined, it may be absent: a Core API
// program need not have one, and the Trial API refuses to start without one): a positive
// integer constant, or searched as an int (minval >= 1) or a categorical of positive integers,
// the forms Determined's check-global-batch-size allows.
void CheckGlobalBatchSize(ExperimentConfig& config, ErrorList* errors) {
  const std::string kPath = "hyperparameters.global_batch_size";
  for (const auto& [name, hp] : config.hyperparameters) {
    if (name != "global_batch_size") continue;
    switch (hp.type) {
      case Hyperparameter::Type::kConst:
        if (CheckBatchSizeValue(hp.val, kPath, errors)) {
          config.global_batch_size = hp.val.get<int64_t>();
        }
        return;
      case Hyperparameter::Type::kInt:
        if (hp.minval < 1) {
          errors->Add(kPath + ".minval", absl::StrFormat("must be >= 1, got %.15g", hp.minval));
        } else if (hp.maxval > static_cast<double>(kMaxGlobalBatchSize)) {
          errors->Add(kPath + ".maxval",
                      absl::StrFormat("must be <= %d, got %.15g", kMaxGlobalBatchSize, hp.maxval));
        }
        return;
      case Hyperparameter::Type::kCategorical:
        for (size_t i = 0; i < hp.vals.size(); ++i) {
          if (!CheckBatchSizeValue(hp.vals[i], absl::StrCat(kPath, ".vals[", i, "]"), errors)) {
            return;
          }
        }
        return;
      default:
        errors->Add(kPath,
                    "must be a positive integer, or searched as an int or a categorical "
                    "of positive integers");
        return;
    }
  }
}

// `entrypoint`: a command, as a non-empty string or a non-empty list of strings.
// Determined's legacy entrypoint "module.submodule:ClassName" (a Python trial class).
bool IsTrialClass(absl::string_view entry) {
  const size_t colon = entry.find(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == entry.size()) return false;
  auto all = [](absl::string_view s, bool dots) {
    return std::all_of(s.begin(), s.end(), [&](char c) {
      return absl::ascii_isalnum(c) || c == '_' || (dots && c == '.');
    });
  };
  return all(entry.substr(0, colon), true) && all(entry.substr(colon + 1), false);
}

void ParseEntrypoint(ObjectReader& r, ExperimentConfig& config, ErrorList* errors) {
  if (!r.Require("entrypoint")) return;
  const Json& entry = *r.Get("entrypoint");
  if (entry.is_string() && !entry.get<std::string>().empty()) {
    config.entrypoint = {entry.get<std::string>()};
    r.Set("entrypoint", entry);
    if (IsTrialClass(config.entrypoint[0])) {
      errors->AddWarning("entrypoint",
                         absl::StrCat("'", config.entrypoint[0],
                                      "' names a Python trial class (Determined's module:Class "
                                      "form); Cohort runs the entrypoint as a command, so the "
                                      "context must hold a program of that name"));
    }
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
    if (uses_epochs(config.searcher.max_length)) {
      // Given as max_time with time_metric: epochs (Determined 0.38), or as max_length.
      errors->Add(config.searcher.max_time ? "searcher.time_metric" : "searcher.max_length", kRule);
    }
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

// name, description, template, workspace, project, labels.
void ParseIdentity(ObjectReader& r, ExperimentConfig& config, ErrorList* errors) {
  config.name = r.String("name");
  config.description = r.String("description");
  CheckTextSize("name", config.name, kMaxNameBytes, errors);
  CheckTextSize("description", config.description, kMaxDescriptionBytes, errors);
  CheckTextSize("template", r.String("template"), kMaxNameBytes, errors);
  config.workspace = r.String("workspace");
  config.project = r.String("project");
  CheckTextSize("workspace", config.workspace, kMaxNameBytes, errors);
  CheckTextSize("project", config.project, kMaxNameBytes, errors);
  std::optional<std::vector<std::string>> labels = r.StringList("labels");
  CheckLabels(labels, errors);
  if (labels) config.labels = *std::move(labels);
}

// What is trained and how: resources, hyperparameters, searcher, optimizations, profiling, seed.
void ParseTraining(ObjectReader& r, ExperimentConfig& config, const ParseOptions& options,
                   ErrorList* errors, Json& effective) {
  config.resources = ParseResources(Field(r, "resources"), errors, &effective["resources"]);
  const Json& hparams = Field(r, "hyperparameters");
  config.hyperparameters = internal::ParseHyperparameters(hparams, "hyperparameters", errors,
                                                          &effective["hyperparameters"]);
  CheckGlobalBatchSize(config, errors);
  config.searcher = internal::ParseSearcher(Field(r, "searcher"), errors, &effective["searcher"]);
  config.optimizations =
      ParseOptimizations(Field(r, "optimizations"), errors, &effective["optimizations"]);
  config.profiling = ParseProfiling(Field(r, "profiling"), errors, &effective["profiling"]);
  config.experiment_seed = ParseExperimentSeed(Field(r, "reproducibility"), options, errors,
                                               &effective["reproducibility"]);
}

// A trial's life: checkpoints, periods, restarts, log policies, data.
void ParseLifecycle(ObjectReader& r, ExperimentConfig& config, ErrorList* errors, Json& effective) {
  if (const Json* storage = r.Get("checkpoint_storage")) {
    config.checkpoint_storage =
        internal::ParseCheckpointStorage(*storage, errors, &effective["checkpoint_storage"]);
  }
  const std::string policy =
      r.String("checkpoint_policy", "best", {"best", "all", "none"}).value_or("best");
  config.checkpoint_policy = policy == "all"    ? ExperimentConfig::CheckpointPolicy::kAll
                             : policy == "none" ? ExperimentConfig::CheckpointPolicy::kNone
                                                : ExperimentConfig::CheckpointPolicy::kBest;
  for (const char* key : {"min_validation_period", "min_checkpoint_period"}) {
    if (const Json* period = r.Get(key)) {
      auto length =
          internal::ParseLength(*period, key, /*allow_zero=*/true, errors, &effective[key]);
      (std::string(key) == "min_validation_period" ? config.min_validation_period
                                                   : config.min_checkpoint_period) = length;
    }
  }
  config.records_per_epoch = r.Int("records_per_epoch", 0, Between(0, kMaxLengthUnits)).value_or(0);
  config.scheduling_unit = r.Int("scheduling_unit", 100, Between(1, kMaxLengthUnits)).value_or(100);
  config.max_restarts = r.Int("max_restarts", 5, Between(0, kMaxRestarts)).value_or(5);
  config.log_policies = internal::ParseLogPolicies(r, errors, &effective);
  config.perform_initial_validation = r.Bool("perform_initial_validation", false).value_or(false);
  config.debug = r.Ignored("debug", "Cohort has no debug mode", [&] {
                    return r.Bool("debug", false);
                  }).value_or(false);
  if (const Json* data = r.Map("data")) {
    config.data = *data;
  } else if (!r.Has("data")) {
    r.Set("data", Json::object());
  }
}

// Where the trial runs: environment and bind mounts.
void ParseHost(ObjectReader& r, ExperimentConfig& config, ErrorList* errors, Json& effective) {
  config.environment_variables =
      internal::ParseEnvironment(Field(r, "environment"), errors, &effective["environment"]);
  r.ForEachItem("bind_mounts", [&](const Json& item, const std::string& path, Json* out) {
    config.bind_mounts.push_back(ParseBindMount(item, path, errors, out));
  });
  if (!r.Has("bind_mounts")) r.Set("bind_mounts", Json::array());
  r.Warn("bind_mounts",
         "Cohort's trials run on the host, where host_path is already visible at its own path");
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
  ParseIdentity(r, config, &errors);
  ParseEntrypoint(r, config, &errors);
  ParseTraining(r, config, options, &errors, effective);
  ParseLifecycle(r, config, &errors, effective);
  ParseHost(r, config, &errors, effective);
  internal::ParseIgnoredSections(r, &errors, &effective);
  r.Finish();

  CheckCrossFieldRules(config, &errors);
  if (errors.empty()) CheckEffectiveSize(config.effective, &errors);
  if (!errors.empty()) return errors.ToStatus();
  config.warnings = errors.warnings();
  return config;
}

}  // namespace cohort::config
