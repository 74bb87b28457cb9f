#include "master/templates/templates.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"

namespace cohort::master::templates {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class TemplatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(":memory:");
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    templates_ = std::make_unique<Templates>(*db_);
  }
  std::unique_ptr<SqliteDatabase> db_;
  std::unique_ptr<Templates> templates_;
};

constexpr char kSecretTemplate[] =
    "environment:\n  environment_variables:\n    - WANDB_API_KEY=abc123\n"
    "resources:\n  slots_per_trial: 4\n";

TEST_F(TemplatesTest, PutThenListAndGetShowSecretsOnlyWhenAsked) {
  ASSERT_TRUE(templates_->Put("gpu", kSecretTemplate).ok());
  absl::StatusOr<wire::TemplateList> list = templates_->List(/*reveal_secrets=*/true);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->templates.size(), 1u);
  EXPECT_EQ(list->templates[0].name, "gpu");
  EXPECT_THAT(list->templates[0].config, HasSubstr("abc123"));

  absl::StatusOr<wire::Template> masked = templates_->Get("gpu", /*reveal_secrets=*/false);
  ASSERT_TRUE(masked.ok()) << masked.status();
  EXPECT_THAT(masked->config, Not(HasSubstr("abc123")));
  EXPECT_THAT(masked->config, HasSubstr("slots_per_trial: 4"));
  absl::StatusOr<wire::TemplateList> masked_list = templates_->List(false);
  ASSERT_TRUE(masked_list.ok());
  EXPECT_THAT(masked_list->templates[0].config, Not(HasSubstr("abc123")));
}

TEST_F(TemplatesTest, PutRefusesBadNamesYamlAndTemplatesThatNameATemplate) {
  absl::Status bad_name = templates_->Put("../etc", "a: 1\n");
  EXPECT_EQ(bad_name.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_name.message(), HasSubstr("template name"));
  absl::Status bad_yaml = templates_->Put("broken", "a: [1,\n");
  EXPECT_EQ(bad_yaml.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_yaml.message(), HasSubstr("template broken is not valid YAML"));
  absl::Status nested = templates_->Put("nested", "template: other\n");
  EXPECT_EQ(nested.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nested.message(), HasSubstr("template nested"));
  absl::StatusOr<wire::TemplateList> list = templates_->List(true);
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->templates.empty()) << "a refused template must not be stored";
}

TEST_F(TemplatesTest, PutRefusesFieldsAConfigMayNotHaveButNotMissingRequiredOnes) {
  absl::Status wrong =
      templates_->Put("wrong", "resources: {slots_per_trial: \"two\"}\nsearcher: {name: bogus}\n");
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.message(), HasSubstr("template wrong is not a valid config part"));
  EXPECT_THAT(wrong.message(),
              HasSubstr("resources.slots_per_trial: expected an integer, got string"));
  EXPECT_THAT(wrong.message(), HasSubstr("searcher.name: must be one of"));
  EXPECT_THAT(wrong.message(), Not(HasSubstr("required field is missing")));
  EXPECT_EQ(templates_->Get("wrong", true).status().code(), absl::StatusCode::kNotFound);
  // Partial: no entrypoint, no searcher metric or length, an epoch length for the config's
  // records_per_epoch.
  absl::Status partial = templates_->Put(
      "partial",
      "searcher: {name: grid, max_length: {epochs: 2}}\nresources: {slots_per_trial: 2}\n");
  EXPECT_TRUE(partial.ok()) << partial;
}

TEST_F(TemplatesTest, DeleteAndGetOfAnUnknownTemplateAreNotFound) {
  EXPECT_EQ(templates_->Get("none", true).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(templates_->Delete("none").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(templates_->Put("t", "max_restarts: 1\n").ok());
  ASSERT_TRUE(templates_->Delete("t").ok());
  EXPECT_EQ(templates_->Get("t", true).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TemplatesTest, MergeTakesTheConfigsValuesOverTheTemplatesAndDropsTheField) {
  ASSERT_TRUE(
      templates_->Put("base", "resources:\n  slots_per_trial: 4\nname: from-template\n").ok());
  nlohmann::json config = {{"template", "base"}, {"name", "mine"}};
  absl::StatusOr<Merged> merged = templates_->Merge(config, "");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->template_name, "base");
  EXPECT_EQ(merged->tree["name"], "mine");
  EXPECT_EQ(merged->tree["resources"]["slots_per_trial"], 4);
  EXPECT_FALSE(merged->tree.contains("template"));

  // A name given with the request wins over the config's field.
  ASSERT_TRUE(templates_->Put("other", "name: other\n").ok());
  absl::StatusOr<Merged> asked = templates_->Merge({{"template", "base"}}, "other");
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->template_name, "other");
  EXPECT_EQ(asked->tree["name"], "other");
}

TEST_F(TemplatesTest, MergeWithoutATemplateKeepsTheConfigAndAnUnknownOneSaysHowToList) {
  absl::StatusOr<Merged> plain = templates_->Merge({{"name", "x"}}, "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->template_name.empty());
  EXPECT_EQ(plain->tree["name"], "x");
  absl::StatusOr<Merged> unknown = templates_->Merge({{"template", "missing"}}, "");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("template 'missing' does not exist"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("cohort template list"));
}

}  // namespace
}  // namespace cohort::master::templates
