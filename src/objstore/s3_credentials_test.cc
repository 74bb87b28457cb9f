// Where S3 keys and the region come from: the config, the environment, the credentials file
// (its profiles and its malformed lines), in that order; no message shows a secret.
#include "objstore/s3_credentials.h"

#include <filesystem>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::objstore {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

class S3CredentialsTest : public ::testing::Test {
 protected:
  void WriteCredentials(const std::string& text) {
    std::filesystem::create_directories(home_.path() + "/.aws");
    std::ofstream(home_.path() + "/.aws/credentials") << text;
  }
  CredentialSources Sources(std::map<std::string, std::string> env = {}) {
    return {std::move(env), home_.path()};
  }
  testing_support::TempDir home_{"s3_home"};
};

TEST_F(S3CredentialsTest, TheConfigWinsThenTheEnvironmentThenTheFile) {
  WriteCredentials("[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
  const CredentialSources env =
      Sources({{"AWS_ACCESS_KEY_ID", "ENVKEY"}, {"AWS_SECRET_ACCESS_KEY", "envsecret"},
               {"AWS_SESSION_TOKEN", "tok"}});
  ASSERT_OK_AND_ASSIGN(S3Credentials c,
                       ResolveS3Credentials(std::string("CFGKEY"), std::string("cfg"), env));
  EXPECT_EQ(c.access_key, "CFGKEY");
  EXPECT_EQ(c.source, "the experiment config");
  ASSERT_OK_AND_ASSIGN(c, ResolveS3Credentials(std::nullopt, std::nullopt, env));
  EXPECT_EQ(c.access_key, "ENVKEY");
  EXPECT_EQ(c.session_token, "tok");
  ASSERT_OK_AND_ASSIGN(c, ResolveS3Credentials(std::nullopt, std::nullopt, Sources()));
  EXPECT_EQ(c.access_key, "FILEKEY");
  EXPECT_EQ(c.secret_key, "filesecret");
  EXPECT_THAT(c.source, HasSubstr("profile 'default'"));
}

TEST_F(S3CredentialsTest, TheProfileComesFromAwsProfile) {
  WriteCredentials(
      "# keys\n[default]\naws_access_key_id=A\naws_secret_access_key=a\n\n"
      "[ci]\naws_access_key_id = B\naws_secret_access_key = b\n");
  ASSERT_OK_AND_ASSIGN(S3Credentials c, ResolveS3Credentials(std::nullopt, std::nullopt,
                                                             Sources({{"AWS_PROFILE", "ci"}})));
  EXPECT_EQ(c.access_key, "B");
  EXPECT_THAT(ResolveS3Credentials(std::nullopt, std::nullopt, Sources({{"AWS_PROFILE", "x"}}))
                  .status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no profile 'x'")));
}

TEST_F(S3CredentialsTest, MissingOrMalformedSourcesAreNamedWithoutTheirValues) {
  EXPECT_THAT(ResolveS3Credentials(std::nullopt, std::nullopt, Sources()).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("AWS_ACCESS_KEY_ID")));
  EXPECT_THAT(ResolveS3Credentials(std::string("K"), std::nullopt, Sources()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("go together")));
  WriteCredentials("[default]\naws_access_key_id AKIASECRETLOOKING\n");
  const absl::Status s = ResolveS3Credentials(std::nullopt, std::nullopt, Sources()).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("credentials:2")));
  EXPECT_THAT(s.message(), Not(HasSubstr("AKIASECRETLOOKING")));
}

TEST_F(S3CredentialsTest, TheRegionComesFromTheConfigTheEnvironmentOrUsEast1) {
  EXPECT_EQ(ResolveS3Region(std::string("eu-west-1"), Sources({{"AWS_REGION", "x"}})),
            "eu-west-1");
  EXPECT_EQ(ResolveS3Region(std::nullopt, Sources({{"AWS_DEFAULT_REGION", "ap-south-1"}})),
            "ap-south-1");
  EXPECT_EQ(ResolveS3Region(std::nullopt, Sources()), "us-east-1");
}

}  // namespace
}  // namespace cohort::objstore
