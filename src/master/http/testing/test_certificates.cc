#include "master/http/testing/test_certificates.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/subprocess.h"

namespace cohort::master::http {
namespace {

namespace fs = std::filesystem;

// The whole configuration, so nothing depends on the machine's /etc/ssl/openssl.cnf.
constexpr char kConfig[] = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[elsewhere]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:elsewhere.example
)";

absl::Status Openssl(std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  auto child = Subprocess::Start({.argv = args});
  if (!child.ok()) return child.status();
  std::string out;
  while ((*child)->ReadAvailable(&out, absl::Milliseconds(100))) {
  }
  absl::StatusOr<int> status = (*child)->Wait(absl::Seconds(30));
  if (!status.ok() || *status != 0) {
    return absl::InternalError(absl::StrCat(
        absl::StrJoin(args, " "), " failed (",
        status.ok() ? absl::StrCat("exit ", *status) : status.status().ToString(), "): ", out));
  }
  return absl::OkStatus();
}

// A self-signed CA: DIR/NAME.crt and DIR/NAME.key.
absl::Status MakeCa(const fs::path& dir, const std::string& config, const std::string& name) {
  return Openssl({"req", "-x509", "-config", config, "-extensions", "ca", "-newkey", "ec",
                  "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                  "/CN=Cohort test " + name, "-keyout", (dir / (name + ".key")).string(), "-out",
                  (dir / (name + ".crt")).string()});
}

// A certificate that DIR/ca signed: DIR/NAME.crt and DIR/NAME.key, with the extensions of the
// config's section NAME.
absl::Status MakeSigned(const fs::path& dir, const std::string& config, const std::string& name,
                        const std::string& common_name) {
  const std::string csr = (dir / (name + ".csr")).string();
  if (absl::Status s =
          Openssl({"req", "-new", "-config", config, "-newkey", "ec", "-pkeyopt",
                   "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=" + common_name,
                   "-keyout", (dir / (name + ".key")).string(), "-out", csr});
      !s.ok()) {
    return s;
  }
  return Openssl({"x509", "-req", "-in", csr, "-CA", (dir / "ca.crt").string(), "-CAkey",
                  (dir / "ca.key").string(), "-CAcreateserial", "-days", "2", "-extfile", config,
                  "-extensions", name, "-out", (dir / (name + ".crt")).string()});
}

}  // namespace

absl::StatusOr<TestCertificates> MakeTestCertificates(const std::string& dir_name) {
  const fs::path dir(dir_name);
  const std::string config = (dir / "openssl.cnf").string();
  std::ofstream(config) << kConfig;
  TestCertificates certs{(dir / "ca.crt").string(),        (dir / "server.crt").string(),
                         (dir / "server.key").string(),    (dir / "other-ca.crt").string(),
                         (dir / "elsewhere.crt").string(), (dir / "elsewhere.key").string()};
  if (absl::Status s = MakeCa(dir, config, "ca"); !s.ok()) return s;
  if (absl::Status s = MakeCa(dir, config, "other-ca"); !s.ok()) return s;
  if (absl::Status s = MakeSigned(dir, config, "server", "127.0.0.1"); !s.ok()) return s;
  if (absl::Status s = MakeSigned(dir, config, "elsewhere", "elsewhere.example"); !s.ok()) {
    return s;
  }
  return certs;
}

}  // namespace cohort::master::http
