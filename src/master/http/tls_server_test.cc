// HTTPS between MasterClient and the master's real routes (HttpServer, as cohort-master
// --tls-cert --tls-key serves them), with certificates the openssl command makes for the test:
// the right CA is trusted, a wrong CA, the system's store, a certificate for another name and a
// protocol mismatch are refused with errors that say what to pass; LoadTls names a bad file.
#include "master/http/tls_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/master_client.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/http/http_server.h"
#include "master/http/testing/master_server.h"
#include "master/http/testing/test_certificates.h"

namespace cohort::master::http {
namespace {

using ::cohort::testing_support::StatusIs;
using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;

class TlsTest : public ::testing::Test {
 protected:
  // One set of certificates for the suite (openssl takes a few milliseconds per key).
  static void SetUpTestSuite() {
    dir_ = new TempDir("tls");
    absl::StatusOr<TestCertificates> certs = MakeTestCertificates(dir_->path());
    ASSERT_OK(certs);
    certs_ = new TestCertificates(*certs);
  }
  static void TearDownTestSuite() {
    delete certs_;
    delete dir_;
  }
  void SetUp() override { ASSERT_NE(certs_, nullptr) << "no test certificates"; }

  static std::unique_ptr<MasterServer> Serve(TlsFiles tls) {
    return std::make_unique<MasterServer>(dir_->path(),
                                          MasterServer::Options{.tls = std::move(tls)});
  }
  static absl::Status Get(const std::string& url, const std::string& ca_file) {
    client::MasterClient client(url, absl::Seconds(10));
    client.set_tls_ca_file(ca_file);
    return client.Get("/api/v1/experiments").status();
  }
  static std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_->path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static TempDir* dir_;  // removed with the certificates in TearDownTestSuite
  static TestCertificates* certs_;
};

TempDir* TlsTest::dir_ = nullptr;
TestCertificates* TlsTest::certs_ = nullptr;

TEST_F(TlsTest, AClientWithTheMastersCaGetsAnswers) {
  auto server = Serve({certs_->cert_file, certs_->key_file});
  ASSERT_GT(server->port(), 0);
  EXPECT_EQ(server->url().rfind("https://", 0), 0u) << server->url();
  EXPECT_OK(Get(server->url(), certs_->ca_file));
  // The certificate names localhost too.
  EXPECT_OK(Get("https://localhost:" + std::to_string(server->port()), certs_->ca_file));
}

TEST_F(TlsTest, ACertificateFromAnotherCaIsRefusedSayingWhichCaToPass) {
  auto server = Serve({certs_->cert_file, certs_->key_file});
  const absl::Status status = Get(server->url(), certs_->other_ca_file);
  EXPECT_TRUE(client::IsTlsFailure(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("the master at " + server->url() +
                                          " presented a TLS certificate that is not trusted by "
                                          "the CA in " +
                                          certs_->other_ca_file));
  EXPECT_THAT(status.message(), HasSubstr("--tls-ca FILE (or $COHORT_TLS_CA)"));
}

TEST_F(TlsTest, TheSystemStoreDoesNotTrustATestCa) {
  auto server = Serve({certs_->cert_file, certs_->key_file});
  const absl::Status status = Get(server->url(), "");
  EXPECT_TRUE(client::IsTlsFailure(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("not trusted by the system's certificate store"));
}

TEST_F(TlsTest, ACertificateForAnotherNameIsRefused) {
  auto server = Serve({certs_->elsewhere_cert_file, certs_->elsewhere_key_file});
  const absl::Status status = Get(server->url(), certs_->ca_file);
  EXPECT_TRUE(client::IsTlsFailure(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("presented a TLS certificate that does not name "
                                          "127.0.0.1"));
}

TEST_F(TlsTest, HttpsToAPlainHttpMasterSaysSo) {
  auto server = Serve({});
  const std::string url = "https://127.0.0.1:" + std::to_string(server->port());
  const absl::Status status = Get(url, certs_->ca_file);
  EXPECT_TRUE(client::IsTlsFailure(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("the TLS handshake with the master at " + url));
  EXPECT_THAT(status.message(), HasSubstr("serves http:// URLs"));
}

TEST_F(TlsTest, HttpToAnHttpsMasterSaysSoAndStaysPlain) {
  auto server = Serve({certs_->cert_file, certs_->key_file});
  const std::string url = "http://127.0.0.1:" + std::to_string(server->port());
  const absl::Status status = Get(url, certs_->ca_file);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(status.message(), HasSubstr("it closed the connection without answering GET "
                                          "/api/v1/experiments (if it serves HTTPS, started with "
                                          "--tls-cert, use https://127.0.0.1:"));
}

TEST_F(TlsTest, AMissingOrUnusableCaFileIsNamed) {
  auto server = Serve({certs_->cert_file, certs_->key_file});
  absl::Status status = Get(server->url(), dir_->path() + "/no-such-ca.crt");
  EXPECT_TRUE(client::IsTlsFailure(status)) << status;
  EXPECT_THAT(status.message(),
              HasSubstr(dir_->path() + "/no-such-ca.crt (--tls-ca or $COHORT_TLS_CA) "
                                       "does not exist"));
  const std::string garbage = WriteFile("garbage-ca.crt", "not a certificate\n");
  status = Get(server->url(), garbage);
  EXPECT_TRUE(client::IsTlsFailure(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(garbage + " (--tls-ca or $COHORT_TLS_CA) cannot be "
                                                    "loaded"));
}

TEST_F(TlsTest, TheCaFileIsTheFlagElseTheEnvironment) {
  ::setenv("COHORT_TLS_CA", "/from/env.crt", 1);
  EXPECT_EQ(client::TlsCaFile("/from/flag.crt"), "/from/flag.crt");
  EXPECT_EQ(client::TlsCaFile(""), "/from/env.crt");
  ::unsetenv("COHORT_TLS_CA");
  EXPECT_EQ(client::TlsCaFile(""), "");
}

TEST_F(TlsTest, LoadTlsWithoutFilesIsPlainHttp) {
  absl::StatusOr<TlsPem> pem = LoadTls({});
  ASSERT_OK(pem);
  EXPECT_TRUE(pem->cert_pem.empty());
  EXPECT_TRUE(pem->key_pem.empty());
}

TEST_F(TlsTest, LoadTlsNeedsBothFiles) {
  absl::StatusOr<TlsPem> pem = LoadTls({.cert_file = "a.crt"});
  ASSERT_FALSE(pem.ok());
  EXPECT_THAT(pem.status().message(),
              HasSubstr("needs both --tls-cert FILE and --tls-key FILE; only --tls-cert a.crt"));
}

TEST_F(TlsTest, LoadTlsNamesAFileItCannotRead) {
  absl::StatusOr<TlsPem> pem = LoadTls({certs_->cert_file, dir_->path() + "/missing.key"});
  ASSERT_FALSE(pem.ok());
  EXPECT_THAT(pem.status().message(),
              HasSubstr("--tls-key " + dir_->path() + "/missing.key: cannot read the file"));
}

TEST_F(TlsTest, LoadTlsRefusesACertificateThatIsNotPem) {
  const std::string garbage = WriteFile("garbage.crt", "not a certificate\n");
  absl::StatusOr<TlsPem> pem = LoadTls({garbage, certs_->key_file});
  ASSERT_FALSE(pem.ok());
  EXPECT_THAT(pem.status().message(),
              HasSubstr("--tls-cert " + garbage + ": not a PEM certificate"));
}

TEST_F(TlsTest, LoadTlsRefusesAKeyThatIsNotTheCertificates) {
  absl::StatusOr<TlsPem> pem = LoadTls({certs_->cert_file, certs_->elsewhere_key_file});
  ASSERT_FALSE(pem.ok());
  EXPECT_THAT(pem.status().message(),
              HasSubstr("--tls-key " + certs_->elsewhere_key_file +
                        ": not the unencrypted PEM private key of the certificate in " +
                        certs_->cert_file));
}

// Whether a non-blocking connection to 127.0.0.1:port completes within `timeout_ms` (the kernel
// queues it for accept), closing it either way.
bool ConnectsWithin(int port, int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (!connected && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof(error);
    connected = ::poll(&p, 1, timeout_ms) == 1 &&
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
  }
  ::close(fd);
  return connected;
}

// With a short listen queue (cpp-httplib's was 5) the 7th connection of a burst waits for a
// SYN retransmission (1 s) while nothing is accepted. HttpServer's queue takes the whole burst.
TEST(HttpServerBindTest, QueuesABurstOfConnectionsWhileNoneIsAccepted) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Bind({});
  ASSERT_OK(server);
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  // No accept loop runs: every connection stays in the listen queue.
  int queued = 0;
  for (int i = 0; i < 200; ++i) queued += ConnectsWithin(port, 300) ? 1 : 0;
  EXPECT_EQ(queued, 200);
}

TEST(HttpServerBindTest, FailsOnAPortInUseNamingIt) {
  absl::StatusOr<std::unique_ptr<HttpServer>> first = HttpServer::Bind({});
  ASSERT_OK(first);
  const int port = (*first)->port();
  absl::StatusOr<std::unique_ptr<HttpServer>> second = HttpServer::Bind({.port = port});
  ASSERT_THAT(second, StatusIs(absl::StatusCode::kUnavailable,
                               HasSubstr(absl::StrCat("127.0.0.1:", port))));
}

}  // namespace
}  // namespace cohort::master::http
