#include "master/models/registry.h"

#include <memory>
#include <string>

#include "common/clock.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/sqlite_database.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

const Caller kAlice{"alice"};
const Caller kBob{"bob"};
const Caller kAdmin{"root", /*admin=*/true};

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, SqliteDatabase::Open(":memory:"));
    registry_ = std::make_unique<Registry>(*db_, clock_);
    ASSERT_OK_AND_ASSIGN(int64_t experiment, db_->InsertExperiment(MakeExperiment("exp")));
    ASSERT_OK_AND_ASSIGN(trial_, db_->InsertTrial(MakeTrial(experiment)));
    ASSERT_OK(db_->InsertCheckpoint({"ck-1", trial_, 100, "p1", "{}"}));
    ASSERT_OK(db_->InsertCheckpoint({"ck-2", trial_, 200, "p2", "{}"}));
  }
  wire::Model MustCreate(const Caller& caller, const std::string& name) {
    absl::StatusOr<wire::Model> m = registry_->Create(caller, {.name = name});
    EXPECT_TRUE(m.ok()) << m.status();
    return m.value_or(wire::Model{});
  }

  FakeClock clock_;
  std::unique_ptr<SqliteDatabase> db_;
  std::unique_ptr<Registry> registry_;
  int64_t trial_ = 0;
};

TEST_F(RegistryTest, ACreatedModelIsListedAndDescribedWithItsOwnerAndFields) {
  ASSERT_OK_AND_ASSIGN(
      wire::Model m,
      registry_->Create(kAlice, {"resnet", "ships", {"vision", "prod"}, {{"top1", 0.76}}}));
  EXPECT_GT(m.id, 0);
  EXPECT_EQ(m.owner, "alice");
  EXPECT_EQ(m.created_ms, absl::ToUnixMillis(clock_.Now()));
  MustCreate(kBob, "bert");
  ASSERT_OK_AND_ASSIGN(wire::ModelList list, registry_->List());
  ASSERT_THAT(list.models, SizeIs(2));
  EXPECT_EQ(list.models[0].name, "bert") << "by name";
  EXPECT_EQ(list.models[1].ToJson(), m.ToJson());
  ASSERT_OK_AND_ASSIGN(wire::ModelDescription d, registry_->Describe("resnet"));
  EXPECT_THAT(d.model.labels, ElementsAre("vision", "prod"));
  EXPECT_EQ(d.model.metadata["top1"], 0.76);
  EXPECT_TRUE(d.versions.empty());
}

TEST_F(RegistryTest, BadNamesLabelsAndTakenNamesAreRefusedNamingWhy) {
  EXPECT_THAT(registry_->Create(kAlice, {.name = "a/b"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a model's name must be")));
  EXPECT_THAT(registry_->Create(kAlice, {.name = "-x"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(registry_->Create(kAlice, {.name = "m", .labels = {"a", "b", "a"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label 'a' is given twice")));
  MustCreate(kAlice, "m");
  EXPECT_THAT(registry_->Create(kBob, {.name = "m"}),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("'m' already exists")));
  EXPECT_THAT(registry_->Describe("nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cohort model list")));
}

TEST_F(RegistryTest, OnlyTheOwnerOrAnAdminChangesAModel) {
  MustCreate(kAlice, "m");
  EXPECT_THAT(registry_->Update(kBob, "m", {.description = "mine now"}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("model 'm' belongs to 'alice': only its owner or an admin may "
                                 "change it ('bob' is neither)")));
  EXPECT_THAT(registry_->RegisterVersion(kBob, "m", {.checkpoint = "ck-1"}),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(registry_->Delete(kBob, "m"), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(registry_->Describe("m").value().model.description, "") << "nothing changed";

  clock_.Advance(absl::Seconds(5));
  wire::ModelPatch patch;
  patch.description = "d";
  patch.labels = std::vector<std::string>{"x"};
  ASSERT_OK_AND_ASSIGN(wire::Model changed, registry_->Update(kAdmin, "m", patch));
  EXPECT_EQ(changed.description, "d");
  EXPECT_EQ(changed.updated_ms - changed.created_ms, 5000);
  ASSERT_OK_AND_ASSIGN(wire::Model renamed, registry_->Update(kAlice, "m", {.name = "m2"}));
  EXPECT_EQ(renamed.description, "d") << "a patch keeps what it leaves out";
  EXPECT_THAT(renamed.labels, ElementsAre("x"));
  EXPECT_THAT(registry_->Describe("m"), StatusIs(absl::StatusCode::kNotFound));
  MustCreate(kAlice, "other");
  EXPECT_THAT(registry_->Update(kAlice, "other", {.name = "m2"}),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(registry_->Update(kAlice, "other", {.name = "bad name"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK(registry_->Delete(kAlice, "m2"));
  EXPECT_THAT(registry_->Delete(kAlice, "m2"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(RegistryTest, VersionsAreNumberedAndNameAnActiveCheckpoint) {
  MustCreate(kAlice, "m");
  ASSERT_OK_AND_ASSIGN(
      wire::ModelVersion v1,
      registry_->RegisterVersion(kAlice, "m",
                                 {"ck-1", "first", "a comment", "notes", {"rc"}, {{"k", 1}}}));
  EXPECT_EQ(v1.version, 1);
  EXPECT_EQ(v1.model, "m");
  EXPECT_EQ(v1.registered_by, "alice");
  ASSERT_OK_AND_ASSIGN(wire::ModelVersion v2,
                       registry_->RegisterVersion(kAdmin, "m", {.checkpoint = "ck-2"}));
  EXPECT_EQ(v2.version, 2);
  EXPECT_EQ(v2.registered_by, "root");
  ASSERT_OK_AND_ASSIGN(wire::ModelVersion got, registry_->GetVersion("m", 1));
  EXPECT_EQ(got.ToJson(), v1.ToJson());
  ASSERT_OK_AND_ASSIGN(wire::ModelDescription d, registry_->Describe("m"));
  EXPECT_EQ(d.model.num_versions, 2);
  ASSERT_THAT(d.versions, SizeIs(2));
  EXPECT_EQ(d.versions[1].checkpoint, "ck-2");

  EXPECT_THAT(registry_->RegisterVersion(kAlice, "m", {.checkpoint = "ck-none"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no checkpoint ck-none")));
  ASSERT_OK(db_->InsertCheckpoint({"ck-3", trial_, 300, "p3", "{}"}));
  ASSERT_OK(db_->MarkCheckpointDeleted("ck-3"));
  EXPECT_THAT(registry_->RegisterVersion(kAlice, "m", {.checkpoint = "ck-3"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("ck-3 is DELETED")));
  EXPECT_THAT(registry_->RegisterVersion(kAlice, "nope", {.checkpoint = "ck-1"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no model named 'nope'")));
  EXPECT_THAT(registry_->GetVersion("m", 3),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'m' has no version 3")));

  EXPECT_THAT(registry_->DeleteVersion(kBob, "m", 1),
              StatusIs(absl::StatusCode::kPermissionDenied));
  ASSERT_OK(registry_->DeleteVersion(kAlice, "m", 1));
  EXPECT_THAT(registry_->DeleteVersion(kAlice, "m", 1),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no version 1")));
  ASSERT_OK_AND_ASSIGN(wire::ModelVersion v3,
                       registry_->RegisterVersion(kAlice, "m", {.checkpoint = "ck-1"}));
  EXPECT_EQ(v3.version, 3) << "numbers are not given twice";
}

}  // namespace
}  // namespace cohort::master::models
