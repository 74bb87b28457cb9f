#include "wire/model_bodies.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

Model AModel() {
  Model m;
  m.id = 3;
  m.name = "resnet";
  m.description = "the classifier we ship";
  m.labels = {"vision", "prod"};
  m.metadata = {{"dataset", "imagenet"}, {"top1", 0.76}};
  m.owner = "alice";
  m.created_ms = 100;
  m.updated_ms = 200;
  m.num_versions = 2;
  m.last_version = 3;
  return m;
}

ModelVersion AVersion() {
  ModelVersion v;
  v.id = 9;
  v.model = "resnet";
  v.version = 3;
  v.checkpoint = "6f1c-uuid";
  v.name = "the third";
  v.comment = "c";
  v.notes = "# notes";
  v.labels = {"candidate"};
  v.metadata = {{"k", {1, 2}}};
  v.registered_by = "bob";
  v.created_ms = 300;
  return v;
}

TEST(ModelBodiesTest, EveryBodyRoundTrips) {
  const Model m = AModel();
  EXPECT_EQ(ParseModel(m.ToJson()).value().ToJson(), m.ToJson());
  const ModelVersion v = AVersion();
  EXPECT_EQ(ParseModelVersion(v.ToJson()).value().ToJson(), v.ToJson());
  const ModelList list{{m, m}};
  EXPECT_EQ(ParseModelList(list.ToJson()).value().ToJson(), list.ToJson());
  const ModelDescription d{m, {v}};
  EXPECT_EQ(ParseModelDescription(d.ToJson()).value().ToJson(), d.ToJson());
  const NewModel n{"resnet", "d", {"a"}, {{"x", 1}}};
  EXPECT_EQ(ParseNewModel(n.ToJson()).value().ToJson(), n.ToJson());
  const NewModelVersion nv{"uuid", "n", "c", "notes", {"l"}, {{"y", true}}};
  EXPECT_EQ(ParseNewModelVersion(nv.ToJson()).value().ToJson(), nv.ToJson());
}

TEST(ModelBodiesTest, APatchKeepsWhatItLeavesOut) {
  ModelPatch only_labels;
  only_labels.labels = std::vector<std::string>{"a", "b"};
  ModelPatch parsed = ParseModelPatch(only_labels.ToJson()).value();
  EXPECT_FALSE(parsed.name.has_value());
  EXPECT_FALSE(parsed.description.has_value());
  EXPECT_FALSE(parsed.metadata.has_value());
  ASSERT_TRUE(parsed.labels.has_value());
  EXPECT_EQ(parsed.labels->size(), 2u);
  // An empty list clears the labels: present, not absent.
  ModelPatch cleared = ParseModelPatch(Json{{"labels", Json::array()}}).value();
  ASSERT_TRUE(cleared.labels.has_value());
  EXPECT_TRUE(cleared.labels->empty());
  EXPECT_EQ(ParseModelPatch(Json{{"description", ""}}).value().description, "");
}

TEST(ModelBodiesTest, BadBodiesNameTheField) {
  EXPECT_THAT(ParseNewModel(Json{{"description", "d"}}).status().message(),
              HasSubstr("new model: missing \"name\""));
  EXPECT_THAT(ParseNewModel(Json{{"name", "m"}, {"labels", {"a", 3}}}).status().message(),
              HasSubstr("\"labels\"[1]: must be a string of 1 to 255 bytes"));
  EXPECT_THAT(ParseNewModel(Json{{"name", "m"}, {"labels", {""}}}).status().message(),
              HasSubstr("\"labels\"[0]"));
  EXPECT_THAT(ParseNewModel(Json{{"name", "m"}, {"labels", Json(std::vector<std::string>(
                                                               kMaxLabels + 1, "x"))}})
                  .status()
                  .message(),
              HasSubstr("\"labels\""));
  EXPECT_THAT(ParseNewModel(Json{{"name", "m"}, {"metadata", {1, 2}}}).status().message(),
              HasSubstr("\"metadata\" must be a JSON object"));
  EXPECT_THAT(ParseNewModel(Json{{"name", "m"},
                                 {"metadata", {{"big", std::string(kMaxModelMetadataBytes, 'x')}}}})
                  .status()
                  .message(),
              HasSubstr("\"metadata\" must be at most 65536 bytes"));
  EXPECT_THAT(ParseNewModelVersion(Json{{"name", "v"}}).status().message(),
              HasSubstr("new model version: missing \"checkpoint\""));
  EXPECT_THAT(ParseModelPatch(Json{{"name", 5}}).status().message(),
              HasSubstr("model change: \"name\""));
  EXPECT_THAT(ParseModelDescription(Json{{"versions", Json::array()}}).status().message(),
              HasSubstr("model description: missing \"model\""));
  Json bad = ModelDescription{AModel(), {AVersion()}}.ToJson();
  bad["versions"][0].erase("version");
  EXPECT_THAT(ParseModelDescription(bad).status().message(),
              HasSubstr("\"versions\"[0]: missing \"version\""));
}

}  // namespace
}  // namespace cohort::wire
