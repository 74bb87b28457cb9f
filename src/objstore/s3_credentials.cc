#include "objstore/s3_credentials.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/small_file.h"

namespace cohort::objstore {
namespace {

constexpr size_t kMaxCredentialsFile = 1 << 20;

std::string Env(const CredentialSources& sources, const std::string& name) {
  const auto it = sources.env.find(name);
  return it == sources.env.end() ? std::string() : it->second;
}

// The profile's keys from an INI-style credentials file; NotFound when the file or the profile
// is missing.
absl::StatusOr<S3Credentials> FromFile(const std::string& path, const std::string& profile) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxCredentialsFile);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return absl::NotFoundError(path + " does not exist");
    return absl::Status(text.status().code(),
                        absl::StrCat("reading ", path, ": ", text.status().message()));
  }
  S3Credentials out;
  out.source = absl::StrCat(path, " profile '", profile, "'");
  bool in_profile = false, found = false;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_no, ": a section header without its closing ']'"));
      }
      in_profile = absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)) == profile;
      found = found || in_profile;
      continue;
    }
    if (!in_profile) continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": expected 'name = value' (the value is not shown)"));
    }
    const std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    const std::string value(absl::StripAsciiWhitespace(line.substr(eq + 1)));
    if (key == "aws_access_key_id") out.access_key = value;
    if (key == "aws_secret_access_key") out.secret_key = value;
    if (key == "aws_session_token") out.session_token = value;
  }
  if (!found) return absl::NotFoundError(absl::StrCat(path, " has no profile '", profile, "'"));
  if (out.access_key.empty() || out.secret_key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        out.source, " lacks aws_access_key_id or aws_secret_access_key (both are needed)"));
  }
  return out;
}

}  // namespace

CredentialSources CredentialSources::FromProcess() {
  CredentialSources sources;
  for (const char* name :
       {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "AWS_SHARED_CREDENTIALS_FILE", "AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      sources.env[name] = value;
    }
  }
  if (const char* home = std::getenv("HOME")) sources.home = home;
  return sources;
}

absl::StatusOr<S3Credentials> ResolveS3Credentials(const std::optional<std::string>& access_key,
                                                   const std::optional<std::string>& secret_key,
                                                   const CredentialSources& sources) {
  if (access_key.has_value() != secret_key.has_value()) {
    return absl::InvalidArgumentError(
        "checkpoint_storage: access_key and secret_key go together (give both, or neither to "
        "use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials)");
  }
  if (access_key.has_value()) {
    return S3Credentials{*access_key, *secret_key, "", "the experiment config"};
  }
  const std::string env_key = Env(sources, "AWS_ACCESS_KEY_ID");
  const std::string env_secret = Env(sources, "AWS_SECRET_ACCESS_KEY");
  if (!env_key.empty() && !env_secret.empty()) {
    return S3Credentials{env_key, env_secret, Env(sources, "AWS_SESSION_TOKEN"),
                         "the environment (AWS_ACCESS_KEY_ID)"};
  }
  std::string file = Env(sources, "AWS_SHARED_CREDENTIALS_FILE");
  if (file.empty() && !sources.home.empty()) file = sources.home + "/.aws/credentials";
  std::string profile = Env(sources, "AWS_PROFILE");
  if (profile.empty()) profile = "default";
  absl::StatusOr<S3Credentials> from_file =
      file.empty() ? absl::NotFoundError("no home directory") : FromFile(file, profile);
  if (from_file.ok() || !absl::IsNotFound(from_file.status())) return from_file;
  return absl::NotFoundError(absl::StrCat(
      "no S3 credentials: none in the experiment config (checkpoint_storage.access_key and "
      "secret_key), none in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), "
      "and ", from_file.status().message()));
}

std::string ResolveS3Region(const std::optional<std::string>& region,
                            const CredentialSources& sources) {
  if (region.has_value() && !region->empty()) return *region;
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (std::string value = Env(sources, name); !value.empty()) return value;
  }
  return "us-east-1";
}

}  // namespace cohort::objstore
