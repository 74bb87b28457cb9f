#include "wire/experiment_bodies.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

Json Wire(const Json& json) { return Json::parse(json.dump()); }

ExperimentDescription SampleExperiment() {
  ExperimentDescription e;
  e.id = 3;
  e.name = "mnist";
  e.state = ExperimentState::kPaused;
  e.config = "name: mnist\n";
  e.template_name = "team";
  e.slots_per_trial = 2;
  e.priority = 10;
  e.max_restarts = 5;
  e.created_ms = 1700000000000;
  TrialDescription t;
  t.id = 9;
  t.experiment_id = 3;
  t.state = TrialState::kPaused;
  e.trials = {t};
  return e;
}

TEST(ExperimentBodiesTest, CreatedExperimentRoundTripsAndNamesBadFields) {
  absl::StatusOr<CreatedExperiment> back =
      ParseCreatedExperiment(Wire(CreatedExperiment{12}.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->id, 12);
  EXPECT_EQ(ParseCreatedExperiment(Json::object()).status().message(),
            "created experiment: missing \"id\"");
  EXPECT_THAT(ParseCreatedExperiment(Json{{"id", "12"}}).status().message(),
              HasSubstr("\"id\" must be an integer >= 1"));
  EXPECT_THAT(ParseCreatedExperiment(Json{{"id", 0}}).status().message(), HasSubstr("got 0"));
  absl::StatusOr<CreatedExperiment> warned = ParseCreatedExperiment(
      Wire(CreatedExperiment{3, {"environment.image: ignored: no containers"}}.ToJson()));
  ASSERT_OK(warned);
  EXPECT_EQ(warned->warnings,
            std::vector<std::string>{"environment.image: ignored: no containers"});
  EXPECT_THAT(ParseCreatedExperiment(Json{{"id", 3}, {"warnings", {1}}}).status().message(),
              HasSubstr("expected a string"));
}

TEST(ExperimentBodiesTest, ExperimentListCarriesDescriptionAndLabels) {
  ExperimentSummary summary{.id = 2, .name = "b", .created_ms = 5};
  summary.description = "a sweep of the learning rate";
  summary.labels = {"nlp", "baseline"};
  absl::StatusOr<ExperimentList> back =
      ParseExperimentList(Wire(ExperimentList{{summary}}.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->experiments.at(0).description, "a sweep of the learning rate");
  EXPECT_EQ(back->experiments.at(0).labels, (std::vector<std::string>{"nlp", "baseline"}));
  Json bad = ExperimentList{{summary}}.ToJson();
  bad["experiments"][0]["labels"] = {1};
  EXPECT_THAT(ParseExperimentList(bad).status().message(), HasSubstr("labels"));
}

TEST(ExperimentBodiesTest, ExperimentListRoundTripsAndNamesBadFields) {
  ExperimentList list{{{1, "a", ExperimentState::kCompleted, 4, 4, 1, 42, "", 123}}};
  absl::StatusOr<ExperimentList> back = ParseExperimentList(Wire(list.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->experiments.size(), 1u);
  const ExperimentSummary& e = back->experiments[0];
  EXPECT_EQ(e.id, 1);
  EXPECT_EQ(e.name, "a");
  EXPECT_EQ(e.state, ExperimentState::kCompleted);
  EXPECT_EQ(e.trials, 4);
  EXPECT_EQ(e.trials_done, 4);
  EXPECT_EQ(e.slots_per_trial, 1);
  EXPECT_EQ(e.priority, 42);
  EXPECT_EQ(e.template_name, "");
  EXPECT_EQ(e.created_ms, 123);
  EXPECT_EQ(e.description, "");
  EXPECT_TRUE(e.labels.empty());
  Json bad = list.ToJson();
  bad["experiments"][0].erase("name");
  EXPECT_EQ(ParseExperimentList(bad).status().message(),
            "experiment list: \"experiments\"[0]: missing \"name\"");
  bad = list.ToJson();
  bad["experiments"][0]["trials_done"] = 5;
  EXPECT_THAT(ParseExperimentList(bad).status().message(),
              HasSubstr("\"trials_done\" must be an integer in [0, 4], got 5"));
  bad = list.ToJson();
  bad["experiments"][0]["state"] = 3;
  EXPECT_THAT(ParseExperimentList(bad).status().message(), HasSubstr("\"state\" must be a string"));
}

TEST(ExperimentBodiesTest, ExperimentDescriptionRoundTripsWithItsTrials) {
  const ExperimentDescription e = SampleExperiment();
  absl::StatusOr<ExperimentDescription> back = ParseExperimentDescription(Wire(e.ToJson()));
  ASSERT_OK(back);
  EXPECT_EQ(back->id, 3);
  EXPECT_EQ(back->name, "mnist");
  EXPECT_EQ(back->state, ExperimentState::kPaused);
  EXPECT_EQ(back->config, e.config);
  EXPECT_EQ(back->template_name, "team");
  EXPECT_EQ(back->slots_per_trial, 2);
  EXPECT_EQ(back->priority, 10);
  EXPECT_EQ(back->max_restarts, 5);
  EXPECT_EQ(back->created_ms, e.created_ms);
  ASSERT_EQ(back->trials.size(), 1u);
  EXPECT_EQ(back->trials[0].id, 9);
  EXPECT_EQ(back->trials[0].state, TrialState::kPaused);
}

TEST(ExperimentBodiesTest, BadExperimentDescriptionsNameTheField) {
  Json json = SampleExperiment().ToJson();
  json.erase("trials");
  EXPECT_EQ(ParseExperimentDescription(json).status().message(), "experiment: missing \"trials\"");
  json = SampleExperiment().ToJson();
  json["max_restarts"] = -1;
  EXPECT_THAT(ParseExperimentDescription(json).status().message(),
              HasSubstr("\"max_restarts\" must be an integer >= 0, got -1"));
  json = SampleExperiment().ToJson();
  json["trials"][0]["state"] = "NOPE";
  EXPECT_THAT(ParseExperimentDescription(json).status().message(),
              HasSubstr("experiment: \"trials\"[0]: \"state\" 'NOPE' is not a trial state"));
}

TEST(ExperimentBodiesTest, TemplatesRoundTripAndNameBadFields) {
  TemplateList list{{{"team", "resources: {slots_per_trial: 2}\n"}}};
  absl::StatusOr<TemplateList> back = ParseTemplateList(Wire(list.ToJson()));
  ASSERT_OK(back);
  ASSERT_EQ(back->templates.size(), 1u);
  EXPECT_EQ(back->templates[0].name, "team");
  EXPECT_EQ(back->templates[0].config, list.templates[0].config);
  absl::StatusOr<Template> one = ParseTemplate(Wire(list.templates[0].ToJson()));
  ASSERT_OK(one);
  EXPECT_EQ(one->name, "team");
  EXPECT_EQ(ParseTemplate(Json{{"name", "x"}}).status().message(), "template: missing \"config\"");
  EXPECT_THAT(
      ParseTemplateList(Json{{"templates", {{{"name", 1}, {"config", ""}}}}}).status().message(),
      HasSubstr("\"templates\"[0]: \"name\" must be a string"));
  EXPECT_THAT(ParseTemplateList(Json{{"templates", "x"}}).status().message(),
              HasSubstr("\"templates\" must be an array"));
}

}  // namespace
}  // namespace cohort::wire
