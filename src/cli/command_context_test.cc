#include "cli/command_context.h"

#include <optional>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/cluster_bodies.h"
#include "wire/experiment_bodies.h"

namespace cohort::cli {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

TEST(ParseAnswerTest, ReturnsTheParsedValue) {
  absl::StatusOr<wire::CreatedExperiment> created =
      ParseAnswer("POST /api/v1/experiments", Json{{"id", 7}}, wire::ParseCreatedExperiment);
  ASSERT_OK(created);
  EXPECT_EQ(created->id, 7);
}

TEST(ParseAnswerTest, PassesAFailedRequestsErrorThrough) {
  absl::StatusOr<wire::TaskList> tasks =
      ParseAnswer("GET /api/v1/tasks", absl::StatusOr<Json>(absl::NotFoundError("no such thing")),
                  wire::ParseTaskList);
  EXPECT_EQ(tasks.status(), absl::NotFoundError("no such thing"));
}

TEST(ParseAnswerTest, AnAnswerThatDoesNotParseNamesTheRequestAndTheField) {
  const Json answer = {{"tasks",
                        {{{"trial_id", 2},
                          {"experiment_id", 1},
                          {"slots", 1},
                          {"priority", 42},
                          {"state", "RUNNNG"}}}}};
  absl::StatusOr<wire::TaskList> tasks =
      ParseAnswer("GET /api/v1/tasks", answer, wire::ParseTaskList);
  ASSERT_THAT(
      tasks,
      StatusIs(absl::StatusCode::kInternal,
               HasSubstr("the master's answer to GET /api/v1/tasks: task list: \"tasks\"[0]: "
                         "\"state\" 'RUNNNG' is not a trial state")));
}

TEST(CellTest, AbsentValuesAreDashes) {
  EXPECT_EQ(Cell(std::optional<std::string>()), "-");
  EXPECT_EQ(Cell(std::optional<std::string>("")), "");
  EXPECT_EQ(Cell(std::optional<std::string>("why")), "why");
  EXPECT_EQ(Cell(std::optional<double>()), "-");
  EXPECT_EQ(EmptyAsDash(""), "-");
  EXPECT_EQ(EmptyAsDash("team"), "team");
}

TEST(CellTest, NumbersPrintAsStrPrintsTheirJson) {
  for (double x : {0.5, 1.0, 0.123456789, 1234567.0, 1e-7}) {
    EXPECT_EQ(Cell(std::optional<double>(x)), Str(Json(x))) << x;
  }
}

}  // namespace
}  // namespace cohort::cli
