#include "comm/internal/shm_segment.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "comm/internal/shm_sync.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::comm::internal {
namespace {

using ::cohort::testing_support::StatusIs;

bool InDevShm(const std::string& name) {
  return std::filesystem::exists("/dev/shm" + name);  // name starts with '/'
}

TEST(ShmSegmentTest, AttachSeesTheCreatorsBytesAndUnlinkRemovesTheName) {
  auto created = ShmSegment::Create(8192);
  ASSERT_OK(created);
  EXPECT_TRUE(InDevShm(created->name()));
  std::memcpy(created->data(), "hello", 6);
  auto attached = ShmSegment::Attach(created->name(), 4096);
  ASSERT_OK(attached);
  EXPECT_EQ(attached->size(), 8192u);
  EXPECT_STREQ(attached->data(), "hello");
  created->Unlink();
  EXPECT_FALSE(InDevShm(created->name()));
  // The mappings outlive the name.
  std::memcpy(attached->data(), "world", 6);
  EXPECT_STREQ(created->data(), "world");
  EXPECT_THAT(ShmSegment::Attach(created->name(), 0), StatusIs(absl::StatusCode::kNotFound));
}

TEST(ShmSegmentTest, AttachRejectsASegmentSmallerThanExpected) {
  auto created = ShmSegment::Create(4096);
  ASSERT_OK(created);
  EXPECT_THAT(ShmSegment::Attach(created->name(), 8192),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(ShmSegmentTest, DestroyingTheCreatorWithoutUnlinkRemovesTheName) {
  std::string name;
  {
    auto created = ShmSegment::Create(4096);
    ASSERT_OK(created);
    name = created->name();
  }
  EXPECT_FALSE(InDevShm(name));
}

TEST(ShmSegmentTest, SegmentSurvivesACrashedPeerAndLeavesNothingBehind) {
  auto created = ShmSegment::Create(4096);
  ASSERT_OK(created);
  const std::string name = created->name();
  pid_t child = ::fork();
  if (child == 0) {
    auto attached = ShmSegment::Attach(name, 4096);
    if (!attached.ok()) ::_exit(1);
    std::memcpy(attached->data(), "child", 6);
    ::kill(::getpid(), SIGKILL);  // crash while mapped
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_STREQ(created->data(), "child");
  created->Unlink();
  EXPECT_FALSE(InDevShm(name));
}

TEST(PeerProcessTest, NoticesTheExitOfAProcessEvenBeforeItIsReaped) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  PeerProcess peer(child);
  EXPECT_FALSE(peer.Exited());
  ::kill(child, SIGKILL);
  // Not reaped yet: a zombie counts as exited. Poll instead of sleeping a fixed time.
  bool exited = false;
  for (int i = 0; i < 2000 && !exited; ++i) {
    exited = peer.Exited();
    if (!exited) ::usleep(1000);
  }
  EXPECT_TRUE(exited);
  ::waitpid(child, nullptr, 0);
}

TEST(PeerProcessTest, UsableCoresIsPositive) { EXPECT_GE(UsableCores(), 1); }

}  // namespace
}  // namespace cohort::comm::internal
