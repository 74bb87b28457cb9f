#include "master/users/users.h"

#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/users/password.h"

namespace cohort::master::users {
namespace {

using ::testing::HasSubstr;

class UsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = OpenSqliteDatabase(":memory:").value();
    users_ = std::make_unique<Users>(
        db_.get(), &clock_, UsersOptions{.hold = [this](absl::Duration d) { held_.push_back(d); }});
    ASSERT_TRUE(users_->EnsureAdmin("admin-password").value());
    admin_ =
        users_->Authenticate(users_->Login("admin", "admin-password", "a").value().token).value();
  }
  Identity LogIn(const std::string& name, const std::string& password) {
    return users_->Authenticate(users_->Login(name, password, "a").value().token).value();
  }

  FakeClock clock_;
  std::vector<absl::Duration> held_;  // the holds the throttle asked for, in order
  std::unique_ptr<Database> db_;
  std::unique_ptr<Users> users_;
  Identity admin_;
};

TEST(PasswordTest, HashesVerifyOnlyTheirOwnPasswordAndAreSalted) {
  const std::string a = HashPassword("correct horse").value();
  EXPECT_THAT(a, HasSubstr("$argon2id$"));
  EXPECT_TRUE(VerifyPassword(a, "correct horse"));
  EXPECT_FALSE(VerifyPassword(a, "correct horsf"));
  EXPECT_NE(a, HashPassword("correct horse").value());
  EXPECT_FALSE(VerifyPassword("not a hash", "correct horse"));
}

TEST(PasswordTest, TokensAreRandom256BitHexAndStoredByTheirSha256) {
  const std::string token = NewToken();
  EXPECT_EQ(token.size(), 64u);
  EXPECT_NE(token, NewToken());
  EXPECT_EQ(TokenHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(RandomPassword().size(), 24u);
  EXPECT_NE(RandomPassword(), RandomPassword());
}

TEST_F(UsersTest, TheFirstStartCreatesAdminOnce) {
  EXPECT_FALSE(users_->EnsureAdmin("another-password").value());
  EXPECT_TRUE(admin_.admin);
  EXPECT_EQ(admin_.name, "admin");
  EXPECT_THAT(users_->Login("admin", "another-password", "a").status().message(),
              HasSubstr("wrong user name or password"));
}

TEST_F(UsersTest, OnlyTheTokensHashIsStored) {
  const Users::LoginResult login = users_->Login("admin", "admin-password", "a").value();
  EXPECT_OK(db_->GetToken(TokenHash(login.token)));
  EXPECT_TRUE(absl::IsNotFound(db_->GetToken(login.token).status()));
  EXPECT_EQ(login.expires_ms, absl::ToUnixMillis(clock_.Now() + absl::Hours(24 * 7)));
}

TEST_F(UsersTest, WrongPasswordsAndUnknownUsersGetTheSameAnswer) {
  absl::Status wrong = users_->Login("admin", "wrong-password", "a").status();
  absl::Status unknown = users_->Login("nobody", "wrong-password", "b").status();
  EXPECT_TRUE(absl::IsUnauthenticated(wrong));
  EXPECT_EQ(wrong.message(), unknown.message());
}

TEST_F(UsersTest, RepeatedFailuresAreSlowedThenRefused) {
  for (int i = 0; i < LoginThrottle::kFreeFailures; ++i) {
    EXPECT_TRUE(absl::IsUnauthenticated(users_->Login("admin", "wrong-password", "x").status()));
  }
  EXPECT_TRUE(absl::IsUnauthenticated(users_->Login("admin", "wrong-password", "x").status()));
  // Third failure: the next try from that address must wait a second, even with the right
  // password; from another address the user logs in at once.
  absl::Status throttled = users_->Login("admin", "admin-password", "x").status();
  EXPECT_TRUE(absl::IsResourceExhausted(throttled)) << throttled;
  EXPECT_THAT(throttled.message(), HasSubstr("for user 'admin' from x"));
  EXPECT_THAT(throttled.message(), HasSubstr("try again in 1 s"));
  EXPECT_OK(users_->Login("admin", "admin-password", "y"));
  clock_.Advance(absl::Seconds(1));
  EXPECT_OK(users_->Login("admin", "admin-password", "x"));
  // From one address, guessing at many names is throttled by the address.
  for (int i = 0; i < LoginThrottle::kLockoutFailures; ++i) {
    clock_.Advance(absl::Seconds(65));
    EXPECT_TRUE(absl::IsUnauthenticated(
        users_->Login("user" + std::to_string(i), "wrong-password", "evil").status()));
  }
  absl::Status locked = users_->Login("admin", "admin-password", "evil").status();
  EXPECT_THAT(locked.message(), HasSubstr("from evil"));
  EXPECT_THAT(locked.message(), HasSubstr("try again in 900 s"));
  EXPECT_OK(users_->Login("admin", "admin-password", "elsewhere"));
  clock_.Advance(LoginThrottle::kLockout);
  EXPECT_OK(users_->Login("admin", "admin-password", "evil"));
}

// Issue 34: a stranger failing as 'admin' from one address, however often, must not lock the
// admin out: from an address of their own the right password still logs in, only held a little
// once the user's failures pass kUserSlowFailures. The stranger's address stays refused.
TEST_F(UsersTest, NobodyCanLockAUserOutByFailingFromElsewhere) {
  for (int i = 0; i < LoginThrottle::kLockoutFailures; ++i) {
    clock_.Advance(absl::Seconds(65));  // past each backoff: every try is checked
    EXPECT_TRUE(absl::IsUnauthenticated(
        users_->Login("admin", "wrong-password", "stranger").status()));
  }
  EXPECT_TRUE(
      absl::IsResourceExhausted(users_->Login("admin", "admin-password", "stranger").status()));
  held_.clear();
  absl::StatusOr<Users::LoginResult> mine = users_->Login("admin", "admin-password", "home");
  ASSERT_OK(mine);
  ASSERT_EQ(held_.size(), 1u) << "slowed, not refused";
  EXPECT_GE(held_[0], LoginThrottle::kUserHold);
  EXPECT_LE(held_[0], LoginThrottle::kMaxUserHold);
  // The success cleared the user's count: the next login is not held.
  held_.clear();
  ASSERT_OK(users_->Login("admin", "admin-password", "home"));
  EXPECT_TRUE(held_.empty());
}

// Guessing one account from many addresses (each under its own limits) is held longer and
// longer, up to kMaxUserHold, and never refused.
TEST_F(UsersTest, GuessingOneUserFromManyAddressesIsSlowed) {
  for (int i = 0; i < LoginThrottle::kUserSlowFailures + 5; ++i) {
    EXPECT_TRUE(absl::IsUnauthenticated(
        users_->Login("admin", "wrong-password", absl::StrCat("10.0.0.", i)).status()));
  }
  ASSERT_FALSE(held_.empty());
  EXPECT_EQ(held_.front(), LoginThrottle::kUserHold);
  EXPECT_EQ(held_.back(), LoginThrottle::kMaxUserHold);
  for (size_t i = 1; i < held_.size(); ++i) EXPECT_GE(held_[i], held_[i - 1]);
}

// The hash pool: a job past its queue is refused at once, and the hashes run on its threads.
TEST(HashPoolTest, AJobPastTheQueueIsRefusedAtOnce) {
  HashPool pool({.threads = 1, .max_queued = 1});
  absl::Notification release, running;
  std::thread first([&] {
    EXPECT_OK(pool.Run([&] {
      running.Notify();
      release.WaitForNotification();
    }));
  });
  running.WaitForNotification();
  std::thread second([&] { EXPECT_OK(pool.Run([] {})); });  // waits in the queue
  while (pool.Queued() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  absl::Status third = pool.Run([] {});
  EXPECT_TRUE(absl::IsUnavailable(third)) << third;
  EXPECT_THAT(third.message(), HasSubstr("too many logins at once"));
  release.Notify();
  first.join();
  second.join();
  EXPECT_OK(pool.Run([] {}));
}

TEST_F(UsersTest, ExpiredAndRevokedTokensAreRefused) {
  const std::string token = users_->Login("admin", "admin-password", "a").value().token;
  ASSERT_OK(users_->Authenticate(token));
  clock_.Advance(absl::Hours(24 * 7));
  EXPECT_THAT(users_->Authenticate(token).status().message(), HasSubstr("expired"));
  EXPECT_EQ(db_->DeleteExpiredTokens(absl::ToUnixMillis(clock_.Now())).value(), 2);

  const std::string fresh = users_->Login("admin", "admin-password", "a").value().token;
  Identity me = users_->Authenticate(fresh).value();
  ASSERT_OK(users_->Logout(me));
  EXPECT_THAT(users_->Authenticate(fresh).status().message(), HasSubstr("not valid"));
  EXPECT_TRUE(absl::IsUnauthenticated(users_->Authenticate("made-up").status()));
}

TEST_F(UsersTest, ALoginDropsTheExpiredTokens) {
  clock_.Advance(absl::Hours(24 * 7));  // SetUp's token has expired
  ASSERT_OK(users_->Login("admin", "admin-password", "a"));
  EXPECT_EQ(db_->DeleteExpiredTokens(absl::ToUnixMillis(clock_.Now())).value(), 0)
      << "the login dropped it already";
}

TEST_F(UsersTest, OnlyAdminsManageUsers) {
  ASSERT_OK(users_->Create(admin_, "alice", "alice-password", false));
  Identity alice = LogIn("alice", "alice-password");
  EXPECT_FALSE(alice.admin);
  EXPECT_TRUE(absl::IsPermissionDenied(users_->Create(alice, "bob", "bob-password", false)));
  EXPECT_TRUE(absl::IsPermissionDenied(users_->List(alice).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(users_->SetActive(alice, "admin", false)));
  EXPECT_TRUE(absl::IsAlreadyExists(users_->Create(admin_, "alice", "alice-password", false)));
  EXPECT_THAT(users_->Create(admin_, "../x", "long-enough", false).message(),
              HasSubstr("user name"));
  EXPECT_THAT(users_->Create(admin_, "bob", "short", false).message(),
              HasSubstr("8 to 1024 characters"));
  EXPECT_EQ(users_->List(admin_).value().size(), 2u);
}

TEST_F(UsersTest, ADeactivatedUserCannotLogInAndLosesItsTokens) {
  ASSERT_OK(users_->Create(admin_, "alice", "alice-password", false));
  const std::string token = users_->Login("alice", "alice-password", "a").value().token;
  ASSERT_OK(users_->SetActive(admin_, "alice", false));
  EXPECT_TRUE(absl::IsUnauthenticated(users_->Authenticate(token).status()));
  EXPECT_TRUE(absl::IsUnauthenticated(users_->Login("alice", "alice-password", "a").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(users_->SetActive(admin_, "admin", false)));
  ASSERT_OK(users_->SetActive(admin_, "alice", true));
  EXPECT_OK(users_->Login("alice", "alice-password", "a"));
}

TEST_F(UsersTest, UsersChangeTheirOwnPasswordWithTheOldOne) {
  ASSERT_OK(users_->Create(admin_, "alice", "alice-password", false));
  const std::string token = users_->Login("alice", "alice-password", "a").value().token;
  Identity alice = users_->Authenticate(token).value();
  EXPECT_TRUE(
      absl::IsInvalidArgument(users_->SetPassword(alice, "alice", std::nullopt, "new-password")));
  EXPECT_TRUE(absl::IsPermissionDenied(
      users_->SetPassword(alice, "alice", "wrong-password", "new-password")));
  EXPECT_TRUE(
      absl::IsPermissionDenied(users_->SetPassword(alice, "admin", std::nullopt, "new-password")));
  ASSERT_OK(users_->SetPassword(alice, "alice", "alice-password", "new-password"));
  EXPECT_TRUE(absl::IsUnauthenticated(users_->Authenticate(token).status()));
  EXPECT_FALSE(users_->Login("alice", "alice-password", "b").ok());
  EXPECT_OK(users_->Login("alice", "new-password", "c"));
  // An admin resets it without the old one.
  ASSERT_OK(users_->SetPassword(admin_, "alice", std::nullopt, "reset-password"));
  EXPECT_OK(users_->Login("alice", "reset-password", "d"));
}

}  // namespace
}  // namespace cohort::master::users
