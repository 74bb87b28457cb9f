#include "config/config_parser.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "config/error_list.h"
#include "config/length.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

using ::cohort::testing_support::IsOk;
using ::cohort::testing_support::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

// The smallest valid config: the required fields only. Hyperparameters come last, so a test may
// append hyperparameters to it.
constexpr char kMinimal[] = R"(
entrypoint: ./trial
searcher: {metric: validation_loss}
hyperparameters:
  global_batch_size: 32
)";

// kMinimal without its searcher, for tests that append their own.
constexpr char kMinimalButSearcher[] = R"(
entrypoint: ./trial
hyperparameters:
  global_batch_size: 32
)";

absl::StatusOr<ExperimentConfig> Parse(const std::string& yaml, uint32_t seed = 7) {
  auto tree = ParseYaml(yaml);
  if (!tree.ok()) return tree.status();
  ParseOptions options;
  options.seed_if_absent = seed;
  return ParseExperimentConfig(*tree, options);
}

std::vector<std::string> Errors(const std::string& yaml) {
  auto config = Parse(yaml);
  EXPECT_THAT(config, Not(IsOk())) << yaml;
  if (!config.ok()) {
    EXPECT_THAT(config, StatusIs(absl::StatusCode::kInvalidArgument));
  }
  return ConfigErrors(config.status());
}

TEST(ConfigParserTest, MinimalConfigGetsDeterminedDefaults) {
  auto config = Parse(kMinimal, 1234);
  ASSERT_OK(config);
  EXPECT_EQ(config->entrypoint, std::vector<std::string>{"./trial"});
  EXPECT_EQ(config->global_batch_size, 32);
  EXPECT_EQ(config->resources.slots_per_trial, 1);
  EXPECT_EQ(config->max_restarts, 5);
  EXPECT_EQ(config->scheduling_unit, 100);
  EXPECT_EQ(config->searcher.name, "single");
  EXPECT_EQ(config->experiment_seed, 1234u);
  const Optimizations& o = config->optimizations;
  EXPECT_EQ(o.aggregation_frequency, 1);
  EXPECT_TRUE(o.average_aggregated_gradients);
  EXPECT_TRUE(o.average_training_metrics);
  EXPECT_FALSE(o.gradient_compression);
  EXPECT_FALSE(o.auto_tune_tensor_fusion);
  EXPECT_EQ(o.tensor_fusion_threshold, 64);
  EXPECT_EQ(o.tensor_fusion_cycle_time, 1);
  EXPECT_EQ(o.mixed_precision, "O0");

  // The defaults and the seed are written out in the effective config.
  const Json& e = config->effective;
  EXPECT_EQ(e["resources"]["slots_per_trial"], 1);
  EXPECT_EQ(e["optimizations"]["tensor_fusion_threshold"], 64);
  EXPECT_EQ(e["optimizations"]["mixed_precision"], "O0");
  EXPECT_EQ(e["searcher"]["name"], "single");
  EXPECT_EQ(e["reproducibility"]["experiment_seed"], 1234);
  EXPECT_EQ(e["max_restarts"], 5);
  EXPECT_EQ(e["scheduling_unit"], 100);
}

TEST(ConfigParserTest, ProfilingHasDeterminedsDefaultsAndChecksItsWindow) {
  auto config = Parse(kMinimal);
  ASSERT_OK(config);
  EXPECT_FALSE(config->profiling.enabled);
  EXPECT_EQ(config->profiling.begin_on_batch, 0);
  EXPECT_FALSE(config->profiling.end_after_batch.has_value());
  EXPECT_TRUE(config->profiling.sync_timings);
  const Json& e = config->effective["profiling"];
  EXPECT_EQ(e, (Json{{"enabled", false},
                     {"begin_on_batch", 0},
                     {"end_after_batch", nullptr},
                     {"sync_timings", true}}));

  auto on = Parse(absl::StrCat(
      kMinimal, "profiling: {enabled: true, begin_on_batch: 10, end_after_batch: 20}\n"));
  ASSERT_OK(on);
  EXPECT_TRUE(on->profiling.enabled);
  EXPECT_EQ(on->profiling.begin_on_batch, 10);
  EXPECT_EQ(on->profiling.end_after_batch, 20);

  EXPECT_THAT(
      Errors(absl::StrCat(kMinimal, "profiling: {begin_on_batch: 10, end_after_batch: 5}\n")),
      ElementsAre("profiling.end_after_batch: must be >= begin_on_batch (10), got 5"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "profiling: {begin_on_batch: -1, enable: true}\n")),
              ElementsAre(HasSubstr("profiling.begin_on_batch: must be >= 0"),
                          HasSubstr("profiling.enable: unknown field")));
}

TEST(ConfigParserTest, EffectiveConfigParsesToTheSameConfig) {
  auto first = Parse(kMinimal, 99);
  ASSERT_OK(first);
  auto second = Parse(ToYaml(first->effective), 5);
  ASSERT_OK(second) << "\n" << ToYaml(first->effective);
  EXPECT_EQ(second->effective, first->effective);
  EXPECT_EQ(second->experiment_seed, 99u);
}

TEST(ConfigParserTest, AssignsARandomSeedWhenAbsentAndKeepsAGivenOne) {
  auto tree = ParseYaml(kMinimal);
  ASSERT_OK(tree);
  auto config = ParseExperimentConfig(*tree);
  ASSERT_OK(config);
  EXPECT_TRUE(config->effective["reproducibility"]["experiment_seed"].is_number_integer());
  auto given = Parse(absl::StrCat(kMinimal, "reproducibility: {experiment_seed: 42}\n"));
  ASSERT_OK(given);
  EXPECT_EQ(given->experiment_seed, 42u);
}

TEST(ConfigParserTest, ParsesAFullConfig) {
  auto config = Parse(R"(
name: mnist
description: a test
entrypoint: [./trial, --flag]
resources: {slots_per_trial: 4, max_slots: 8, priority: 10, weight: 0.5, is_single_node: true,
            devices: [{host_path: /dev/a, container_path: /dev/b}, "/dev/c:/dev/d:r"]}
hyperparameters:
  global_batch_size: {type: const, val: 64}
  learning_rate: {type: log, minval: -4, maxval: -1, base: 10, count: 3}
  layers: {type: int, minval: 1, maxval: 4}
  dropout: {type: double, minval: 0.1, maxval: 0.5}
  act: {type: categorical, vals: [relu, tanh]}
  optimizer: {name: sgd, momentum: {type: double, minval: 0, maxval: 0.9}}
  sizes: [1, 2]
searcher: {name: single, metric: validation_loss, smaller_is_better: true,
           max_length: {epochs: 2}}
optimizations: {aggregation_frequency: 2, gradient_compression: true, mixed_precision: O1}
checkpoint_storage: {type: shared_fs, host_path: /tmp/ckpt, storage_path: runs}
min_validation_period: {batches: 100}
min_checkpoint_period: {epochs: 1}
records_per_epoch: 60000
scheduling_unit: 50
max_restarts: 0
data: {url: http://x, nested: {k: [1, 2]}}
environment: {environment_variables: [A=1, "B=x=y"]}
bind_mounts: [{host_path: /data, container_path: /mnt/data, read_only: true}]
)");
  ASSERT_OK(config);
  EXPECT_EQ(config->entrypoint, (std::vector<std::string>{"./trial", "--flag"}));
  EXPECT_EQ(config->resources.slots_per_trial, 4);
  EXPECT_EQ(config->resources.devices.size(), 2u);
  EXPECT_EQ(config->resources.devices[1].container_path, "/dev/d");
  EXPECT_EQ(config->resources.devices[1].mode, "r");
  EXPECT_EQ(config->global_batch_size, 64);
  ASSERT_EQ(config->hyperparameters.size(), 7u);
  EXPECT_EQ(config->hyperparameters[1].second.type, Hyperparameter::Type::kLog);
  EXPECT_EQ(config->hyperparameters[1].second.count, 3);
  EXPECT_EQ(config->hyperparameters[5].second.type, Hyperparameter::Type::kGroup);
  EXPECT_EQ(config->hyperparameters[5].second.members.size(), 2u);
  EXPECT_EQ(config->searcher.max_length->unit, Length::Unit::kEpochs);
  EXPECT_EQ(config->optimizations.aggregation_frequency, 2);
  EXPECT_EQ(config->checkpoint_storage->host_path, "/tmp/ckpt");
  EXPECT_EQ(config->checkpoint_storage->save_trial_latest, 1);
  EXPECT_EQ(config->min_validation_period->value, 100);
  EXPECT_EQ(config->max_restarts, 0);
  EXPECT_EQ(config->data["nested"]["k"][1], 2);
  EXPECT_EQ(config->environment_variables[1], (std::pair<std::string, std::string>{"B", "x=y"}));
  EXPECT_TRUE(config->bind_mounts[0].read_only);
  EXPECT_EQ(config->effective["data"], config->data);
}

TEST(ConfigParserTest, RepeatedEnvironmentVariableTakesTheLaterValue) {
  // What a template's [A=1, B=2] followed by a config's [B=3] merges to.
  auto config =
      Parse(std::string(kMinimal) + "environment: {environment_variables: [A=1, B=2, B=3]}\n");
  ASSERT_OK(config);
  using Var = std::pair<std::string, std::string>;
  EXPECT_THAT(config->environment_variables, ElementsAre(Var{"A", "1"}, Var{"B", "3"}));
}

TEST(ConfigParserTest, AcceptsEachSearcher) {
  for (const char* searcher :
       {"{name: single, metric: loss, max_length: {batches: 10}}",
        "{name: random, metric: loss, max_length: {batches: 10}, max_trials: 5}",
        "{name: grid, metric: loss, max_length: {records: 1000}}",
        "{name: adaptive_asha, metric: accuracy, smaller_is_better: false, "
        "max_length: {batches: 1000}, max_trials: 16, max_rungs: 4, divisor: 3, "
        "mode: aggressive}"}) {
    auto config = Parse(absl::StrCat(kMinimalButSearcher, "searcher: ", searcher, "\n"));
    EXPECT_OK(config) << searcher << ": ";
  }
  auto asha = Parse(absl::StrCat(kMinimalButSearcher,
                                 "searcher: {name: adaptive_asha, metric: m, "
                                 "max_length: {batches: 9}, max_trials: 3}\n"));
  ASSERT_OK(asha);
  EXPECT_EQ(asha->searcher.max_rungs, 5);
  EXPECT_EQ(asha->searcher.divisor, 4);
  EXPECT_EQ(asha->searcher.mode, "standard");
  EXPECT_EQ(asha->searcher.max_concurrent_trials, 16);
}

TEST(ConfigParserTest, OutOfRangeValueNamesPathAndRule) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "resources: {slots_per_trial: -2}\n")),
              ElementsAre("resources.slots_per_trial: must be >= 0, got -2"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "resources: {priority: 100}\n")),
              ElementsAre("resources.priority: must be <= 99, got 100"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "max_restarts: -1\n")),
              ElementsAre("max_restarts: must be >= 0, got -1"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "optimizations: {aggregation_frequency: 0}\n")),
              ElementsAre("optimizations.aggregation_frequency: must be >= 1, got 0"));
}

TEST(ConfigParserTest, WorkAConfigAsksForIsBoundedAndRefusalsNameTheLimit) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher,
                                  "searcher: {name: random, metric: loss, max_trials: 300000}\n")),
              ElementsAre("searcher.max_trials: must be <= 10000, got 300000"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "resources: {slots_per_trial: 100000}\n")),
              ElementsAre("resources.slots_per_trial: must be <= 65536, got 100000"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "max_restarts: 1000000\n")),
              ElementsAre("max_restarts: must be <= 1000, got 1000000"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "records_per_epoch: 10000000000\n")),
              ElementsAre("records_per_epoch: must be <= 1000000000, got 10000000000"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher,
                                  "searcher: {name: single, metric: loss, "
                                  "max_length: {batches: 1e300}}\n")),
              ElementsAre(HasSubstr("searcher.max_length.batches: ")));
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher,
                                  "searcher: {name: single, metric: loss, "
                                  "max_length: {batches: 2000000000}}\n")),
              ElementsAre("searcher.max_length.batches: must be <= 1000000000, got 2000000000"));
  EXPECT_THAT(Errors("entrypoint: ./trial\nsearcher: {metric: loss}\n"
                     "hyperparameters: {global_batch_size: 100000000}\n"),
              ElementsAre("hyperparameters.global_batch_size: must be <= 16777216, got "
                          "100000000"));
}

TEST(ConfigParserTest, GridPointsAreBoundedLikeTrials) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher,
                                  "  a: {type: int, minval: 1, maxval: 200, count: 200}\n"
                                  "  b: {type: int, minval: 1, maxval: 200, count: 200}\n"
                                  "searcher: {name: grid, metric: loss}\n")),
              ElementsAre("hyperparameters: the grid has 40000 points, more than 10000 (the most "
                          "trials an experiment may have)"));
}

TEST(ConfigParserTest, NamesAndLabelsAreBounded) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "name: ", std::string(300, 'n'), "\n")),
              ElementsAre("name: must be at most 256 bytes, got 300"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "labels: [ok, ", std::string(257, 'l'), "]\n")),
              ElementsAre("labels[1]: must be at most 256 bytes, got 257"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher, "searcher: {metric: ", std::string(300, 'm'),
                                  "}\n")),
              ElementsAre("searcher.metric: must be at most 256 bytes, got 300"));
}

TEST(ConfigParserTest, WrongTypeSaysWhatWasExpectedAndFound) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "resources: {slots_per_trial: two}\n")),
              ElementsAre("resources.slots_per_trial: expected an integer, got string \"two\""));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "optimizations: {gradient_compression: 1}\n")),
              ElementsAre("optimizations.gradient_compression: expected a boolean (true or "
                          "false), got integer 1"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "resources: [1]\n")),
              ElementsAre("resources: expected a map, got list"));
  EXPECT_THAT(Errors("- a\n- b\n"), ElementsAre("expected a map, got list"));
  EXPECT_THAT(Errors(""), ElementsAre("the config is empty"));
}

TEST(ConfigParserTest, UnknownFieldSuggestsTheClosestKnownField) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "resources: {slot_per_trial: 2}\n")),
              ElementsAre("resources.slot_per_trial: unknown field; did you mean "
                          "slots_per_trial?"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "max_restart: 2\n")),
              ElementsAre("max_restart: unknown field; did you mean max_restarts?"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher, "searcher: {name: grdi, metric: m}\n")),
              ElementsAre("searcher.name: must be one of single, random, grid, adaptive_asha, "
                          "async_halving, pbt, custom, got 'grdi'; did you mean grid?"));
  auto far = Errors(absl::StrCat(kMinimal, "optimizations: {zzzzzzzzzzzz: 1}\n"));
  ASSERT_EQ(far.size(), 1u);
  EXPECT_THAT(far[0], HasSubstr("optimizations.zzzzzzzzzzzz: unknown field (known fields: "));
}

TEST(ConfigParserTest, ReportsEveryErrorAtOnce) {
  auto errors = Errors(R"(
resources: {slots_per_trial: -2, slot_per_trial: 1}
hyperparameters: {lr: 0.1}
searcher: {name: random, metric: loss}
optimizations: {mixed_precision: 3, tensor_fusion_threshold: 0}
bind_mounts: [{host_path: relative}]
environment: {environment_variables: [NOEQUALS]}
)");
  EXPECT_THAT(errors,
              UnorderedElementsAre(
                  "entrypoint: required field is missing",
                  "resources.slots_per_trial: must be >= 0, got -2",
                  "resources.slot_per_trial: unknown field; did you mean slots_per_trial?",
                  "searcher.max_trials: required field is missing",
                  "optimizations.mixed_precision: expected a string, got integer 3",
                  "optimizations.tensor_fusion_threshold: must be >= 1, got 0",
                  "bind_mounts[0].container_path: required field is missing",
                  "bind_mounts[0].host_path: must be an absolute path, got 'relative'",
                  "environment.environment_variables[0]: expected KEY=VALUE, got 'NOEQUALS'"));
}

TEST(ConfigParserTest, GlobalBatchSizeIsAPositiveIntegerConstantOrSearchedAsDeterminedAllows) {
  const std::string head = "entrypoint: x\nsearcher: {metric: loss}\nhyperparameters:\n";
  EXPECT_THAT(Errors(head + "  global_batch_size: 0\n"),
              ElementsAre("hyperparameters.global_batch_size: must be a positive integer, got "
                          "integer 0"));
  EXPECT_THAT(Errors(head + "  global_batch_size: 3.5\n"),
              ElementsAre("hyperparameters.global_batch_size: must be a positive integer, got "
                          "float 3.5"));
  // Searched (Determined's check-global-batch-size): an int from 1, or positive integers.
  for (const char* searched :
       {"{type: int, minval: 1, maxval: 8}", "{type: categorical, vals: [16, 32, 64]}"}) {
    absl::StatusOr<ExperimentConfig> config =
        ParseExperimentConfig(ParseYaml(head + "  global_batch_size: " + searched).value());
    ASSERT_OK(config) << searched << ": ";
    EXPECT_EQ(config->global_batch_size, 0) << "each trial has its own";
  }
  EXPECT_THAT(Errors(head + "  global_batch_size: {type: int, minval: 0, maxval: 8}\n"),
              ElementsAre("hyperparameters.global_batch_size.minval: must be >= 1, got 0"));
  EXPECT_THAT(Errors(head + "  global_batch_size: {type: int, minval: 1, maxval: 99999999}\n"),
              ElementsAre("hyperparameters.global_batch_size.maxval: must be <= 16777216, got "
                          "99999999"));
  EXPECT_THAT(Errors(head + "  global_batch_size: {type: categorical, vals: [16, 0.5]}\n"),
              ElementsAre("hyperparameters.global_batch_size.vals[1]: must be a positive "
                          "integer, got float 0.5"));
  EXPECT_THAT(Errors(head + "  global_batch_size: {type: double, minval: 1, maxval: 8}\n"),
              ElementsAre("hyperparameters.global_batch_size: must be a positive integer, or "
                          "searched as an int or a categorical of positive integers"));
}

TEST(ConfigParserTest, ATrialsGlobalBatchSizeIsTheConstantElseItsSampledValue) {
  ExperimentConfig constant;
  constant.global_batch_size = 64;
  EXPECT_EQ(TrialGlobalBatchSize(constant, Json{{"global_batch_size", 8}}), 64);
  ExperimentConfig searched;
  EXPECT_EQ(TrialGlobalBatchSize(searched, Json{{"global_batch_size", 8}}), 8);
  EXPECT_EQ(TrialGlobalBatchSize(searched, Json{{"global_batch_size", 0}}), 0);
  EXPECT_EQ(TrialGlobalBatchSize(searched, Json::object()), 0);
  // Lengths in records and epochs follow the trial's batch.
  searched.records_per_epoch = 1000;
  searched.global_batch_size = TrialGlobalBatchSize(searched, Json{{"global_batch_size", 50}});
  EXPECT_EQ(LengthInBatches({.unit = Length::Unit::kEpochs, .value = 2}, searched, "f").value(),
            40);
}

TEST(ConfigParserTest, EverySearcherNeedsAMetricNamingTheField) {
  const std::string missing =
      "searcher.metric: required field is missing (the name of a validation metric the trial "
      "reports, for example validation_loss)";
  for (const char* searcher : {"{name: single}", "{name: random, max_trials: 2}", "{name: grid}",
                               "{name: single, metric: ~}",
                               "{name: adaptive_asha, max_length: {batches: 9}, max_trials: 3}"}) {
    EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher, "searcher: ", searcher, "\n")),
                ElementsAre(missing))
        << searcher;
  }
  EXPECT_THAT(Errors(kMinimalButSearcher), ElementsAre(missing));
}

TEST(ConfigParserTest, EmptySearcherMetricIsAnError) {
  for (const char* metric : {"\"\"", "\"  \""}) {
    EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher, "searcher: {metric: ", metric, "}\n")),
                ElementsAre("searcher.metric: must not be empty (the name of a validation metric "
                            "the trial reports, for example validation_loss)"))
        << metric;
  }
}

TEST(ConfigParserTest, MissingSearcherMetricIsReportedWithTheOtherErrors) {
  EXPECT_THAT(Errors("hyperparameters: {global_batch_size: 0}\nsearcher: {name: single}\n"),
              UnorderedElementsAre(
                  "entrypoint: required field is missing",
                  "hyperparameters.global_batch_size: must be a positive integer, got integer 0",
                  HasSubstr("searcher.metric: required field is missing")));
}

TEST(ConfigParserTest, ValidatesHyperparameterDefinitions) {
  auto errors = Errors(absl::StrCat(kMinimal, R"(  a: {type: int, minval: 5, maxval: 1}
  b: {type: double, minval: x, maxval: 1}
  c: {type: categorical, vals: []}
  d: {type: float, minval: 0, maxval: 1}
  e: {type: log, minval: 1, maxval: 2, base: 0}
  f: {type: int, minval: 1, maxval: 2, count: 0, counts: 1}
  g: {type: const}
)"));
  EXPECT_THAT(errors,
              UnorderedElementsAre(
                  "hyperparameters.a.maxval: must be >= minval (5), got 1",
                  "hyperparameters.b.minval: expected a number, got string \"x\"",
                  "hyperparameters.c.vals: must not be empty",
                  "hyperparameters.d.type: must be one of const, int, double, log, categorical, "
                  "got 'float'",
                  "hyperparameters.e.base: must be > 0, got 0",
                  "hyperparameters.f.count: must be >= 1, got 0",
                  "hyperparameters.f.counts: unknown field; did you mean count?",
                  "hyperparameters.g.val: required field is missing"));
}

TEST(ConfigParserTest, ValidatesLengthsAndTheirUnits) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "min_validation_period: {batch: 5}\n")),
              ElementsAre("min_validation_period.batch: unknown field; did you mean batches?"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "min_validation_period: 5\n")),
              ElementsAre("min_validation_period: expected {batches: N}, {records: N} or "
                          "{epochs: N}, got integer 5"));
  EXPECT_THAT(
      Errors(absl::StrCat(kMinimalButSearcher,
                          "searcher: {name: single, metric: loss, max_length: {epochs: 1}}\n")),
      ElementsAre("searcher.max_length: a length in epochs needs records_per_epoch (> 0) at the "
                  "top level"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher,
                                  "searcher: {name: single, metric: loss, "
                                  "max_length: {batches: 1, records: 2}}\n")),
              ElementsAre("searcher.max_length: expected exactly one of batches, records, "
                          "epochs, got 2 fields"));
}

TEST(ConfigParserTest, GridSearchNeedsACountForEverySearchedHyperparameter) {
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher,
                                  "  lr: {type: double, minval: 0.1, maxval: 1}\n"
                                  "searcher: {name: grid, metric: loss}\n")),
              ElementsAre("hyperparameters.lr: grid search needs count for a double "
                          "hyperparameter"));
}

TEST(ConfigParserTest, ValidatesCheckpointStorage) {
  auto directory = Parse(
      absl::StrCat(kMinimal, "checkpoint_storage: {type: directory, container_path: /ckpt}\n"));
  ASSERT_OK(directory);
  EXPECT_EQ(directory->checkpoint_storage->container_path, "/ckpt");
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "checkpoint_storage: {type: shared_fs}\n")),
              ElementsAre("checkpoint_storage.host_path: required field is missing"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal, "checkpoint_storage: {type: hdfs, bucket: b}\n")),
              ElementsAre("checkpoint_storage.type: must be one of shared_fs, directory, s3, "
                          "gcs, azure, got 'hdfs'"));
  EXPECT_THAT(Errors(absl::StrCat(kMinimal,
                                  "checkpoint_storage: {type: directory, container_path: /c, "
                                  "host_path: /h}\n")),
              ElementsAre("checkpoint_storage.host_path: unknown field (known fields: type, "
                          "container_path, save_experiment_best, save_trial_best, "
                          "save_trial_latest)"));
}

// Found by fuzz/config_fuzzer: a config of a few hundred bytes whose aliases expand (within
// ParseYaml's limits) to megabytes of YAML was accepted, and then its stored text could not be
// read again by the master or the agents.
TEST(ConfigParserTest, RefusesAConfigWhoseAliasesExpandPastTheYamlLimit) {
  std::string data = "data:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'f'; ++c) {
    absl::StrAppend(&data, "  ", std::string(1, c), ": &", std::string(1, c), " [");
    for (int i = 0; i < 9; ++i) absl::StrAppend(&data, i ? ", *" : "*", std::string(1, c - 1));
    absl::StrAppend(&data, "]\n");
  }
  EXPECT_THAT(Errors(absl::StrCat(kMinimalButSearcher, "searcher: {metric: loss}\n", data)),
              ElementsAre(AllOf(HasSubstr("bytes of YAML once its aliases are expanded"),
                                HasSubstr("more than the limit of 1048576 bytes"))));
}

}  // namespace
}  // namespace cohort::config
