#include "cli/validate_command.h"

#include <fstream>
#include <sstream>
#include <string>

#include "cli/exit_codes.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "config/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::cli {
namespace {

using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;

class ValidateCommandTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  int Run(ValidateArgs args) { return RunValidate(args, out_, err_); }

  TempDir temp_{"validate"};
  const std::string dir_ = temp_.path();
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(ValidateCommandTest, PrintsTheEffectiveConfig) {
  std::string path = Write("ok.yaml",
                           "entrypoint: ./trial\n"
                           "searcher: {name: single, metric: validation_loss}\n"
                           "hyperparameters: {global_batch_size: 32, lr: 0.1}\n");
  ASSERT_EQ(Run({path, std::nullopt}), kExitOk) << err_.str();
  EXPECT_EQ(err_.str(), "");
  auto effective = config::ParseYaml(out_.str());
  ASSERT_OK(effective);
  EXPECT_EQ((*effective)["optimizations"]["tensor_fusion_threshold"], 64);
  EXPECT_EQ((*effective)["hyperparameters"]["lr"], 0.1);
  EXPECT_TRUE((*effective)["reproducibility"]["experiment_seed"].is_number_integer());
}

TEST_F(ValidateCommandTest, PrintsAWarningPerIgnoredFieldAndStillTheEffectiveConfig) {
  std::string path = Write("det.yaml",
                           "entrypoint: ./trial\n"
                           "searcher: {name: single, metric: validation_loss}\n"
                           "environment: {image: {gpu: det/img}, force_pull_image: true}\n"
                           "resources: {shm_size: 4G}\n");
  ASSERT_EQ(Run({path, std::nullopt}), kExitOk) << err_.str();
  EXPECT_EQ(err_.str(),
            path +
                ": warning: resources.shm_size: ignored: Cohort runs trials as processes on "
                "the agent's host, not in containers\n" +
                path +
                ": warning: environment.image: ignored: Cohort runs trials as processes on "
                "the agent's host, not in containers\n" +
                path +
                ": warning: environment.force_pull_image: ignored: Cohort runs trials as "
                "processes on the agent's host, not in containers\n");
  auto effective = config::ParseYaml(out_.str());
  ASSERT_OK(effective);
  EXPECT_EQ((*effective)["environment"]["image"]["gpu"], "det/img");
  EXPECT_EQ((*effective)["resources"]["shm_size"], "4G");
}

TEST_F(ValidateCommandTest, PrefixesEveryErrorWithTheFileName) {
  std::string path = Write("bad.yaml",
                           "entrypoint: ./trial\n"
                           "searcher: {name: single, metric: validation_loss}\n"
                           "hyperparameters: {global_batch_size: 32}\n"
                           "resources: {slots_per_trial: -2, slot_per_trial: 1}\n");
  EXPECT_EQ(Run({path, std::nullopt}), kExitInvalid);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), path + ": resources.slots_per_trial: must be >= 0, got -2\n" + path +
                            ": resources.slot_per_trial: unknown field; did you mean "
                            "slots_per_trial?\n");
}

// Determined's "eventually required": a config missing fields a template could provide is
// incomplete; with the template that provides them it validates.
TEST_F(ValidateCommandTest, AConfigMissingRequiredFieldsIsIncompleteAndATemplateCompletesIt) {
  std::string path = Write("partial.yaml", "name: partial\nsearcher: {name: single}\n");
  EXPECT_EQ(Run({path, std::nullopt}), kExitInvalid);
  EXPECT_EQ(err_.str(), path + ": entrypoint: required field is missing\n" + path +
                            ": searcher.metric: required field is missing (the name of a "
                            "validation metric the trial reports, for example validation_loss)\n" +
                            path +
                            ": incomplete: 2 required fields are missing; a template may provide "
                            "them (cohort experiment validate " +
                            path +
                            " --template TEMPLATE.yaml; cohort experiment create --template "
                            "NAME)\n");
  std::string tmpl = Write("team.yaml", "entrypoint: ./train\nsearcher: {metric: loss}\n");
  err_.str("");
  EXPECT_EQ(Run({path, tmpl}), kExitOk) << err_.str();
}

TEST_F(ValidateCommandTest, MergesTheTemplateUnderTheConfig) {
  std::string tmpl = Write("tmpl.yaml",
                           "max_restarts: 1\n"
                           "bind_mounts: [{host_path: /a, container_path: /data}]\n"
                           "hyperparameters: {global_batch_size: 64}\n");
  std::string path = Write("exp.yaml",
                           "entrypoint: ./trial\nmax_restarts: 2\n"
                           "searcher: {name: single, metric: validation_loss}\n"
                           "bind_mounts: [{host_path: /b, container_path: /data}]\n");
  ASSERT_EQ(Run({path, tmpl}), kExitOk) << err_.str();
  auto effective = config::ParseYaml(out_.str());
  ASSERT_OK(effective);
  EXPECT_EQ((*effective)["max_restarts"], 2);
  EXPECT_EQ((*effective)["hyperparameters"]["global_batch_size"], 64);
  ASSERT_EQ((*effective)["bind_mounts"].size(), 1u);
  EXPECT_EQ((*effective)["bind_mounts"][0]["host_path"], "/b");
}

TEST_F(ValidateCommandTest, RejectsATemplateThatNamesATemplate) {
  std::string tmpl = Write("tmpl.yaml", "template: base\n");
  std::string path = Write("exp.yaml",
                           "entrypoint: x\nsearcher: {metric: loss}\n"
                           "hyperparameters: {global_batch_size: 1}\n");
  EXPECT_EQ(Run({path, tmpl}), kExitInvalid);
  EXPECT_EQ(err_.str(), tmpl + ": template.template: a template cannot itself name a template\n");
}

TEST_F(ValidateCommandTest, MalformedYamlIsInvalidAndAMissingFileIsAUsageError) {
  std::string path = Write("broken.yaml", "a: [1, 2\n");
  EXPECT_EQ(Run({path, std::nullopt}), kExitInvalid);
  EXPECT_THAT(err_.str(), HasSubstr(path + ": line "));
  EXPECT_EQ(Run({dir_ + "/missing.yaml", std::nullopt}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("missing.yaml does not exist"));
}

TEST_F(ValidateCommandTest, AcceptsTheFashionMnistExamples) {
  for (const char* name : {"const.yaml", "distributed.yaml"}) {
    std::string path = std::string(COHORT_SOURCE_DIR) + "/examples/fashion_mnist/" + name;
    out_.str("");
    EXPECT_EQ(Run({path, std::nullopt}), kExitOk) << name << ": " << err_.str();
  }
}

TEST_F(ValidateCommandTest, AcceptsTheCoreApiExamples) {
  for (const char* name :
       {"1_metrics.yaml", "2_checkpoints.yaml", "3_hpsearch.yaml", "4_distributed.yaml"}) {
    std::string path = std::string(COHORT_SOURCE_DIR) + "/examples/core_api/" + name;
    out_.str("");
    EXPECT_EQ(Run({path, std::nullopt}), kExitOk) << name << ": " << err_.str();
  }
}

}  // namespace
}  // namespace cohort::cli
