#include "wire/user_bodies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

TEST(UserBodiesTest, EveryBodyRoundTrips) {
  LoginResponse login{"t0k", "alice", true, 123};
  EXPECT_EQ(ParseLoginResponse(login.ToJson()).value().ToJson(), login.ToJson());
  UserList list{{{"alice", false, true, 5}, {"admin", true, false, 6}}};
  EXPECT_EQ(ParseUserList(list.ToJson()).value().ToJson(), list.ToJson());
  NewUser user{"bob", "secret-password", true};
  EXPECT_EQ(ParseNewUser(user.ToJson()).value().ToJson(), user.ToJson());
  PasswordChange change{"new-password", "old-password"};
  EXPECT_EQ(ParsePasswordChange(change.ToJson()).value().old_password, "old-password");
  EXPECT_FALSE(ParsePasswordChange(PasswordChange{"x", std::nullopt}.ToJson())
                   .value()
                   .old_password.has_value());
  EXPECT_EQ(ParseMasterInfo(MasterInfo{"0.1.0", true}.ToJson()).value().tls, true);
  EXPECT_EQ(ParseLoginRequest(LoginRequest{"a", "b"}.ToJson()).value().password, "b");
}

TEST(UserBodiesTest, BadBodiesNameTheField) {
  EXPECT_THAT(ParseLoginRequest(Json{{"username", "a"}}).status().message(),
              HasSubstr("login: missing \"password\""));
  EXPECT_THAT(ParseLoginRequest(Json{{"username", "a"}, {"password", std::string(2000, 'x')}})
                  .status()
                  .message(),
              HasSubstr("\"password\""));
  EXPECT_THAT(ParseNewUser(Json{{"username", 7}, {"password", "p"}}).status().message(),
              HasSubstr("new user: \"username\""));
}

}  // namespace
}  // namespace cohort::wire
