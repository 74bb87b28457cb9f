// Checkpoints in object storage end to end (issue 36): the seed's walk-through keeps checkpoints
// in S3 through a template (`checkpoint_storage: {type: s3, access_key, secret_key, bucket}`)
// and `experiment create --template`. Here the same template, adapted only by endpoint_url and
// the server's keys, runs on a real master with two real agents against a real S3-compatible
// server (npm's s3rver): the chief's checkpoints land in the bucket, a trial that crashed
// resumes from the bucket, the GC removes what the save_* counts let go, `checkpoint download`
// returns the files as written, and deleting the experiment empties its prefix.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "objstore/s3_client.h"
#include "objstore/testing/s3rver.h"
#include "tests/testing/cluster_fixture.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::BinaryPath;
using testing::LaunchResult;

class S3CheckpointsTest : public testing::ClusterFixture {
 protected:
  S3CheckpointsTest() : ClusterFixture("s3_checkpoints_test") {}

  // The manifests under `prefix`: the published checkpoints' ids.
  std::vector<std::string> Published(objstore::S3Client& client, const std::string& prefix) {
    std::vector<std::string> ids;
    absl::StatusOr<std::vector<objstore::ObjectInfo>> objects = client.List(prefix, 10000, "/");
    EXPECT_TRUE(objects.ok()) << objects.status();
    if (!objects.ok()) return ids;
    for (const objstore::ObjectInfo& o : *objects) {
      const std::string suffix = ".cohort-checkpoint";
      if (o.key.size() > suffix.size() &&
          o.key.compare(o.key.size() - suffix.size(), suffix.size(), suffix) == 0) {
        ids.push_back(o.key.substr(prefix.size(), o.key.size() - prefix.size() - suffix.size()));
      }
    }
    return ids;
  }
};

TEST_F(S3CheckpointsTest, TheSeedsS3TemplateKeepsCheckpointsInTheBucketEndToEnd) {
  absl::StatusOr<std::unique_ptr<objstore::testing::S3rver>> server =
      objstore::testing::S3rver::Start("cohort-checkpoints");
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<objstore::S3Client>> client =
      objstore::S3Client::Create((*server)->ClientOptions());
  ASSERT_TRUE(client.ok()) << client.status();

  StartMaster();
  StartAgent("a1");
  StartAgent("a2");
  // The seed's template, with the test server's endpoint and keys.
  const fs::path tmpl = dir_ / "template-s3.yaml";
  std::ofstream(tmpl) << "description: template-tf-gpu\n"
                         "checkpoint_storage:\n"
                         "  type: s3\n"
                         "  access_key: S3RVER\n"
                         "  secret_key: S3RVER\n"
                         "  bucket: cohort-checkpoints\n"
                         "  prefix: team-a\n"
                         "  endpoint_url: "
                      << (*server)->endpoint()
                      << "\n"
                         "  save_trial_best: 0\n"
                         "  save_trial_latest: 1\n";
  LaunchResult set = Cohort({"template", "set", "template-s3", tmpl.string()});
  ASSERT_EQ(set.status, 0) << set.out << set.err;
  // The first run stores two checkpoints of 6 MiB (each uploaded in two parts) and crashes;
  // the restart resumes from the bucket and stores the third.
  Script("ckpt.sh", absl::StrCat("if [ -z \"$COHORT_LATEST_CHECKPOINT\" ]; then\n  ",
                                 BinaryPath("checkpoint_trial"),
                                 " --steps 2 --bytes 6291456 || exit 1\n"
                                 "  echo crashing after two checkpoints; exit 3\nfi\nexec ",
                                 BinaryPath("checkpoint_trial"), " --steps 3 --bytes 6291456\n"));
  const fs::path config = dir_ / "mnist_const.yaml";
  std::ofstream(config) << "name: s3\nentrypoint: ./ckpt.sh\nmax_restarts: 1\n"
                           "hyperparameters: {global_batch_size: 16}\n"
                           "searcher: {name: single, metric: loss, max_length: {batches: 3}}\n";
  LaunchResult created = Cohort({"experiment", "create", "--template", "template-s3",
                                 config.string(), (dir_ / "context").string()});
  ASSERT_EQ(created.status, 0) << created.out << created.err;
  const int64_t id = std::stoll(created.out.substr(created.out.find("created experiment ") + 19));
  WaitUntil([&] { return State(id) == "COMPLETED" || State(id) == "ERROR"; },
            "the experiment to end", absl::Seconds(180));
  const json trial = Trial(id);
  const std::string logs = Logs(trial["id"]);
  ASSERT_EQ(State(id), "COMPLETED") << logs;
  EXPECT_EQ(trial["restarts"], 1) << logs;
  EXPECT_NE(logs.find("crashing after two checkpoints"), std::string::npos) << logs;
  EXPECT_NE(logs.find("at step 2"), std::string::npos) << logs;
  EXPECT_NE(logs.find("resumed from "), std::string::npos) << logs;

  // Every checkpoint the trial reported lives in the bucket; the GC kept only the latest.
  const json list = Json({"checkpoint", "list", std::to_string(id)})["checkpoints"];
  ASSERT_EQ(list.size(), 3u) << list.dump(2);
  std::string latest;
  for (const json& c : list) {
    const std::string storage_id = c["storage_id"];
    EXPECT_EQ(c["path"], "s3://cohort-checkpoints/team-a/" + storage_id) << c.dump();
    if (c["steps_completed"] == 3) latest = storage_id;
  }
  ASSERT_FALSE(latest.empty()) << list.dump(2);
  WaitUntil([&] { return Published(**client, "team-a/").size() == 1; },
            "the GC to delete the first two checkpoints from the bucket", absl::Seconds(30));
  EXPECT_EQ(Published(**client, "team-a/"), std::vector<std::string>{latest});
  const json after_gc = Json({"checkpoint", "list", std::to_string(id)});
  ASSERT_EQ(after_gc["checkpoints"].size(), 3u) << after_gc.dump(2);
  for (const json& c : after_gc["checkpoints"]) {
    EXPECT_EQ(c["state"], c["storage_id"] == latest ? "ACTIVE" : "DELETED") << c.dump();
  }

  // A download streams the checkpoint back from the bucket, as the chief wrote it.
  const fs::path into = dir_ / "downloaded";
  LaunchResult got = Cohort({"checkpoint", "download", latest, into.string()});
  ASSERT_EQ(got.status, 0) << got.out << got.err;
  ASSERT_EQ(fs::file_size(into / "state"), 6291456u);
  std::ifstream state(into / "state");
  int step = 0;
  state >> step;
  EXPECT_EQ(step, 3);
  EXPECT_TRUE(fs::exists(into / "metadata.json"));

  // The chief's TensorBoard event file went beside the checkpoints.
  absl::StatusOr<std::vector<objstore::ObjectInfo>> events = (*client)->List(
      absl::StrCat("team-a/tensorboard/trial_", trial["id"].get<int64_t>(), "/"), 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_FALSE(events->empty()) << "no TensorBoard event file in the bucket";
  EXPECT_NE((*events)[0].key.find("events.out.tfevents."), std::string::npos) << (*events)[0].key;
  EXPECT_GT((*events)[0].size, 0);

  // No key reaches the trial's log.
  EXPECT_EQ(logs.find("S3RVER"), std::string::npos) << "a key in the trial's log";

  // Deleting the experiment empties its prefix: checkpoints and TensorBoard files.
  ASSERT_EQ(Cohort({"experiment", "delete", std::to_string(id), "--yes"}).status, 0);
  const auto objects_left = [&] {
    absl::StatusOr<std::vector<objstore::ObjectInfo>> left = (*client)->List("team-a/", 100);
    EXPECT_TRUE(left.ok()) << left.status();
    return left.ok() ? left->size() : size_t{0};
  };
  WaitUntil([&] { return objects_left() == 0; },
            "the deletion to remove the checkpoint and TensorBoard files from the bucket",
            absl::Seconds(30));
  EXPECT_EQ(objects_left(), 0u);
}

}  // namespace
}  // namespace cohort
