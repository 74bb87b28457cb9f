#include "master/http/agent_secret_authenticator.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/private_file.h"

namespace cohort::master::http {
namespace {

constexpr size_t kSecretBytes = 32;  // 256 bits

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrCat("agent secret file ", path, ": cannot ", what, ": ", std::strerror(errno)));
}

// kSecretBytes from /dev/urandom, as hex.
absl::StatusOr<std::string> RandomHex() {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", "/dev/urandom");
  std::string bytes(kSecretBytes, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return absl::InternalError("cannot read 32 random bytes from /dev/urandom");
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return absl::BytesToHexString(bytes);
}

// Creates `path` with mode 0600 holding a new secret; AlreadyExists when another process made
// it first.
absl::Status CreateSecretFile(const std::string& path) {
  absl::StatusOr<std::string> secret = RandomHex();
  if (!secret.ok()) return secret.status();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError(path);
    return ErrnoError("create", path);
  }
  const std::string text = *secret + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    absl::Status error = ErrnoError("write", path);
    ::unlink(path.c_str());  // a partial secret must not be read at the next start
    return error;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> LoadOrCreateAgentSecret(const std::string& path) {
  absl::StatusOr<std::string> existing = ReadSecretFile(path);
  if (!absl::IsNotFound(existing.status())) return existing;
  absl::Status created = CreateSecretFile(path);
  if (!created.ok() && !absl::IsAlreadyExists(created)) return created;
  return ReadSecretFile(path);
}

AgentSecretAuthenticator::AgentSecretAuthenticator(std::string secret, std::string secret_file)
    : secret_(std::move(secret)), secret_file_(std::move(secret_file)) {}

absl::StatusOr<Caller> AgentSecretAuthenticator::Authenticate(const httplib::Request& request,
                                                              Require /*require*/) {
  constexpr absl::string_view kBearer = "Bearer ";
  const std::string header = request.get_header_value("Authorization");
  if (!secret_.empty() && absl::StartsWith(header, kBearer) &&
      ConstantTimeEquals(header.substr(kBearer.size()), secret_)) {
    return Caller{Caller::Kind::kAgent, ""};
  }
  return Caller{};
}

absl::Status AgentSecretAuthenticator::Admit(const Caller& caller, Require require,
                                             const httplib::Request& request) {
  if (require != Require::kAgent) return Authenticator::Admit(caller, require, request);
  if (caller.kind == Caller::Kind::kAgent) return absl::OkStatus();
  return absl::UnauthenticatedError(absl::StrCat(
      request.method, " ", request.path,
      " is for agents: present the cluster's agent secret (cohort-agent --secret-file FILE or "
      "$COHORT_AGENT_SECRET_FILE), which the master keeps in ",
      secret_file_,
      " (readable by the master's user only; `cohort cluster up` passes it to its "
      "agents)"));
}

}  // namespace cohort::master::http
