#include "config/template_merge.h"

#include "common/testing/status_matchers.h"
#include "config/config_parser.h"
#include "config/error_list.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::ElementsAre;

Json Yaml(const std::string& text) {
  auto tree = ParseYaml(text);
  EXPECT_OK(tree);
  return tree.ok() ? *tree : Json();
}

Json Merged(const std::string& tmpl, const std::string& config) {
  auto merged = MergeTemplate(Yaml(tmpl), Yaml(config));
  EXPECT_OK(merged);
  return merged.ok() ? *merged : Json();
}

TEST(TemplateMergeTest, ConfigScalarsWinAndTemplateScalarsFillGaps) {
  Json m = Merged("max_restarts: 1\ndescription: from template\n", "max_restarts: 3\n");
  EXPECT_EQ(m["max_restarts"], 3);
  EXPECT_EQ(m["description"], "from template");
}

TEST(TemplateMergeTest, MapsMergeRecursively) {
  Json m = Merged(
      "resources: {slots_per_trial: 2, priority: 5}\n"
      "data: {a: {x: 1, y: 2}}\n",
      "resources: {slots_per_trial: 4}\ndata: {a: {y: 3, z: 4}}\n");
  EXPECT_EQ(m["resources"], Yaml("{slots_per_trial: 4, priority: 5}"));
  EXPECT_EQ(m["data"]["a"], Yaml("{x: 1, y: 3, z: 4}"));
}

TEST(TemplateMergeTest, ListsAreTheTemplatesThenTheConfigs) {
  Json m = Merged("environment: {environment_variables: [A=1, B=2]}\n",
                  "environment: {environment_variables: [B=3]}\n");
  EXPECT_EQ(m["environment"]["environment_variables"], Yaml("[A=1, B=2, B=3]"));
}

TEST(TemplateMergeTest, BindMountsWithTheSameContainerPathAreTakenFromTheConfig) {
  Json m = Merged(
      "bind_mounts:\n"
      "  - {host_path: /t/data, container_path: /data}\n"
      "  - {host_path: /t/cache, container_path: /cache}\n",
      "bind_mounts:\n"
      "  - {host_path: /c/data, container_path: /data, read_only: true}\n");
  // Determined's order: the config's mounts, then the template's at other container paths.
  EXPECT_EQ(m["bind_mounts"], Yaml("[{host_path: /c/data, container_path: /data, "
                                   "read_only: true}, {host_path: /t/cache, container_path: "
                                   "/cache}]"));
}

TEST(TemplateMergeTest, DevicesWithTheSameContainerPathAreTakenFromTheConfig) {
  Json m = Merged(
      "resources: {devices: [{host_path: /dev/a, container_path: /dev/x},"
      " '/dev/b:/dev/y']}\n",
      "resources: {devices: ['/dev/c:/dev/x:r']}\n");
  EXPECT_EQ(m["resources"]["devices"], Yaml("['/dev/c:/dev/x:r', '/dev/b:/dev/y']"));
}

TEST(TemplateMergeTest, LogPoliciesWithTheSameNameAreTakenFromTheConfig) {
  Json m = Merged(
      "log_policies:\n"
      "  - {name: oom, pattern: OOM, action: cancel_retries}\n"
      "  - {name: ecc, pattern: ECC, action: exclude_node}\n"
      "  - {pattern: bad, action: {type: exclude_node}}\n"
      "  - {pattern: worse, action: {type: exclude_node}}\n",
      "log_policies:\n"
      "  - {name: oom}\n"
      "  - {pattern: bad, action: {type: exclude_node}}\n");
  // Determined's order: the config's policies, then the template's not named (or, without a
  // name, not equal to one) in the config.
  EXPECT_EQ(m["log_policies"], Yaml("[{name: oom}, {pattern: bad, action: {type: exclude_node}}, "
                                    "{name: ecc, pattern: ECC, action: exclude_node}, "
                                    "{pattern: worse, action: {type: exclude_node}}]"));
}

TEST(TemplateMergeTest, OtherListsKeepDuplicates) {
  Json m = Merged("labels: [a, b]\n", "labels: [b]\n");
  EXPECT_EQ(m["labels"], Yaml("[a, b, b]"));
}

TEST(TemplateMergeTest, AVariantWithADifferentTagIsTakenWhole) {
  Json m = Merged(
      "checkpoint_storage: {type: shared_fs, host_path: /ckpt}\n"
      "searcher: {name: random, max_trials: 4, metric: loss}\n"
      "hyperparameters: {lr: {type: double, minval: 0.1, maxval: 1}}\n",
      "checkpoint_storage: {type: directory, container_path: /c}\n"
      "searcher: {name: single, metric: acc}\n"
      "hyperparameters: {lr: {type: categorical, vals: [0.1]}}\n");
  EXPECT_EQ(m["checkpoint_storage"], Yaml("{type: directory, container_path: /c}"));
  EXPECT_EQ(m["searcher"], Yaml("{name: single, metric: acc}"));
  EXPECT_EQ(m["hyperparameters"]["lr"], Yaml("{type: categorical, vals: [0.1]}"));
  // Same tag: merged as a map.
  Json same = Merged("searcher: {name: random, max_trials: 4}\n",
                     "searcher: {name: random, metric: loss}\n");
  EXPECT_EQ(same["searcher"], Yaml("{name: random, max_trials: 4, metric: loss}"));
}

TEST(TemplateMergeTest, HyperparametersAreAtomicAndGroupsMergeRecursively) {
  Json m = Merged(
      "hyperparameters: {lr: {type: double, minval: 0.1, maxval: 1, count: 3},\n"
      "  opt: {beta: 0.9, eps: {type: log, minval: -8, maxval: -4, base: 10}}}\n",
      "hyperparameters: {lr: {type: double, minval: 0.2, maxval: 2},\n"
      "  opt: {beta: 0.8}}\n");
  EXPECT_EQ(m["hyperparameters"]["lr"], Yaml("{type: double, minval: 0.2, maxval: 2}"));
  EXPECT_EQ(m["hyperparameters"]["opt"],
            Yaml("{beta: 0.8, eps: {type: log, minval: -8, maxval: -4, base: 10}}"));
  Json replaced = Merged("hyperparameters: {opt: {beta: 0.9}}\n", "hyperparameters: {opt: 3}\n");
  EXPECT_EQ(replaced["hyperparameters"]["opt"], 3);
}

TEST(TemplateMergeTest, TheShortAndMapFormsOfPerAcceleratorFieldsMergeAsMaps) {
  Json m = Merged("environment: {environment_variables: [A=1], image: base}\n",
                  "environment: {environment_variables: {cpu: [B=2]}, image: {cuda: gpu-img}}\n");
  EXPECT_EQ(m["environment"]["environment_variables"],
            Yaml("{cpu: [A=1, B=2], cuda: [A=1], rocm: [A=1]}"));
  EXPECT_EQ(m["environment"]["image"], Yaml("{cpu: base, cuda: gpu-img, rocm: base}"));
}

TEST(TemplateMergeTest, ATemplateCannotNameATemplate) {
  auto merged = MergeTemplate(Yaml("template: other\nmax_restarts: 1\n"), Yaml("name: x\n"));
  ASSERT_THAT(merged, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ConfigErrors(merged.status()),
              ElementsAre("template.template: a template cannot itself name a template"));
  auto not_map = MergeTemplate(Yaml("[1, 2]"), Yaml("name: x\n"));
  EXPECT_THAT(ConfigErrors(not_map.status()), ElementsAre("template: expected a map, got list"));
}

TEST(TemplateMergeTest, CheckTemplateGivesTheConfigsErrorsLessMissingFields) {
  absl::Status wrong = CheckTemplate(
      Yaml("resources: {slots_per_trial: two}\nsearcher: {name: bogus}\nmax_restart: 1\n"));
  ASSERT_THAT(wrong, StatusIs(absl::StatusCode::kInvalidArgument));
  // The lines ParseExperimentConfig gives for the same fields in a complete config.
  absl::Status full = ParseExperimentConfig(Yaml("entrypoint: ./x\n"
                                                 "resources: {slots_per_trial: two}\n"
                                                 "searcher: {name: bogus, metric: m}\n"
                                                 "max_restart: 1\n"
                                                 "hyperparameters: {global_batch_size: 1}\n"))
                          .status();
  EXPECT_EQ(ConfigErrors(wrong), ConfigErrors(full));
  EXPECT_EQ(ConfigErrors(wrong).size(), 3u) << wrong;
  EXPECT_OK(CheckTemplate(Yaml("resources: {slots_per_trial: 2}\n")));
  EXPECT_OK(CheckTemplate(Yaml("searcher: {name: adaptive_asha, max_length: {epochs: 1}}\n")));
  EXPECT_OK(CheckTemplate(Json()));
  EXPECT_THAT(ConfigErrors(CheckTemplate(Yaml("template: other\n"))),
              ElementsAre("template.template: a template cannot itself name a template"));
}

TEST(TemplateMergeTest, NoTemplateLeavesTheConfigAsIs) {
  Json config = Yaml("name: x\nlabels: [a]\n");
  auto merged = MergeTemplate(Json(), config);
  ASSERT_OK(merged);
  EXPECT_EQ(*merged, config);
}

}  // namespace
}  // namespace cohort::config
