#pragma once
// Where an S3 client's keys and region come from, as the AWS tools look for them: the
// experiment config's access_key/secret_key (the seed's form), else the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), else the shared credentials
// file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, profile AWS_PROFILE or "default").
// Region: the config's, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
//
// Secrets never leave these structs except into a request's signature: Describe() and every
// error name the source ("the environment", "~/.aws/credentials profile 'ci'"), never a key.

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace cohort::objstore {

struct S3Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty: none
  std::string source;         // where they were found, for messages
};

// What the resolution reads besides the config, so tests can give their own.
struct CredentialSources {
  std::map<std::string, std::string> env;  // the AWS_* variables that are set
  std::string home;                        // where ~/.aws is
  // This process's AWS_* variables and $HOME.
  static CredentialSources FromProcess();
};

// NotFound, naming every place looked at, when no source has both keys; InvalidArgument when
// the config gives one key without the other or the credentials file is malformed (naming the
// file and line, never its values).
absl::StatusOr<S3Credentials> ResolveS3Credentials(const std::optional<std::string>& access_key,
                                                   const std::optional<std::string>& secret_key,
                                                   const CredentialSources& sources);
std::string ResolveS3Region(const std::optional<std::string>& region,
                            const CredentialSources& sources);

}  // namespace cohort::objstore
