#include "config/secrets.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Every field docs/security.md calls a secret is masked; what is not a secret stays readable.
TEST(SecretsTest, EverySecretFieldIsMaskedAndNothingElse) {
  const std::string yaml = R"(name: exp
environment:
  environment_variables: [TOKEN=abc123, PLAIN]
  registry_auth: {username: bob, password: hunter22, auth: Ym9iOmh1bnRlcjIy,
                  identitytoken: idtok, registrytoken: regtok, serveraddress: r.example}
checkpoint_storage: {type: s3, bucket: b, access_key: AKIAX, secret_key: s3cr3t}
data_layer: {type: s3, bucket: d, secret_key: dl-secret}
)";
  const std::string masked = MaskSecretsInYaml(yaml);
  for (const char* secret : {"abc123", "hunter22", "Ym9iOmh1bnRlcjIy", "idtok", "regtok", "AKIAX",
                             "s3cr3t", "dl-secret"}) {
    EXPECT_THAT(masked, Not(HasSubstr(secret))) << masked;
  }
  for (const char* shown : {"TOKEN=***", "PLAIN", "bob", "r.example", "bucket: b", "name: exp"}) {
    EXPECT_THAT(masked, HasSubstr(shown)) << masked;
  }
}

TEST(SecretsTest, DeterminedsMapOfVariablesByDeviceIsMasked) {
  Json tree = ParseYaml("environment: {environment_variables: {cpu: [A=1], cuda: [B=2], "
                        "rocm: oops}}")
                  .value();
  MaskSecrets(tree);
  const Json& env = tree["environment"]["environment_variables"];
  EXPECT_EQ(env["cpu"][0], "A=***");
  EXPECT_EQ(env["cuda"][0], "B=***");
  EXPECT_EQ(env["rocm"], kSecretMask);
}

TEST(SecretsTest, YamlThatDoesNotParseIsHiddenWhole) {
  EXPECT_THAT(MaskSecretsInYaml("environment: {environment_variables: [K=v"),
              HasSubstr("hidden"));
}

}  // namespace
}  // namespace cohort::config
