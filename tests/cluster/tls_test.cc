// HTTPS end to end with real processes on loopback: a cohort-master started with --tls-cert and
// --tls-key, a cohort-agent that trusts its CA (--tls-ca) registers over HTTPS, an agent and
// the CLI given another CA are refused with an error that says what to pass, and the agent
// exits within seconds. The certificates are made by the openssl command for the test.

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/master_client.h"
#include "common/private_file.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "master/http/testing/test_certificates.h"
#include "tests/launch/launcher_process.h"
#include "tests/testing/worker_group.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using testing::BinaryPath;
using testing::LauncherProcess;
using testing::LaunchResult;
using testing::RunToCompletion;

class TlsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / absl::StrCat("tls_test_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "certs");
    absl::StatusOr<master::http::TestCertificates> certs =
        master::http::MakeTestCertificates((dir_ / "certs").string());
    ASSERT_OK(certs);
    certs_ = *certs;
    master_ = std::make_unique<LauncherProcess>(std::vector<std::string>{
        BinaryPath("cohort-master"), "--port", "0", "--data-dir", (dir_ / "master").string(),
        "--tls-cert", certs_.cert_file, "--tls-key", certs_.key_file});
    ASSERT_TRUE(master_->WaitFor(
        [](const std::string& out, const std::string&) {
          return out.find("listening on https://") != std::string::npos;
        },
        absl::Seconds(30)))
        << master_->out() << master_->err();
    const std::string& out = master_->out();
    const size_t at = out.find("listening on ") + 13;
    url_ = out.substr(at, out.find(' ', at) - at);
  }
  void TearDown() override {
    master_.reset();
    fs::remove_all(dir_);
  }

  // cohort-agent ID against the master, trusting `ca_file`.
  std::vector<std::string> AgentArgv(const std::string& id, const std::string& ca_file) const {
    return {BinaryPath("cohort-agent"),
            "--master",
            url_,
            "--id",
            id,
            "--artificial-slots",
            "1",
            "--port-range",
            "29700-29709",
            "--work-dir",
            (dir_ / id).string(),
            "--secret-file",
            (dir_ / "master" / "agent-secret").string(),
            "--tls-ca",
            ca_file};
  }

  fs::path dir_;
  master::http::TestCertificates certs_;
  std::unique_ptr<LauncherProcess> master_;
  std::string url_;
};

TEST_F(TlsClusterTest, AnAgentTrustingTheMastersCaRegistersOverHttps) {
  LauncherProcess agent(AgentArgv("a1", certs_.ca_file));
  EXPECT_TRUE(agent.WaitFor(
      [](const std::string&, const std::string& err) {
        return err.find("agent a1: registered 1 slots with https://") != std::string::npos;
      },
      absl::Seconds(20)))
      << agent.out() << agent.err();
}

// The files are read and checked once, before anything is created; the server serves what was
// checked.
TEST_F(TlsClusterTest, AMasterGivenAnotherCertificatesKeyExitsBeforeCreatingAnything) {
  const fs::path data = dir_ / "refused";
  LaunchResult master =
      RunToCompletion({BinaryPath("cohort-master"), "--port", "0", "--data-dir", data.string(),
                       "--tls-cert", certs_.cert_file, "--tls-key", certs_.elsewhere_key_file},
                      {}, absl::Seconds(20));
  ASSERT_TRUE(master.exited) << master.err;
  EXPECT_EQ(master.status, 1) << master.err;
  EXPECT_NE(master.err.find("--tls-key " + certs_.elsewhere_key_file), std::string::npos)
      << master.err;
  EXPECT_FALSE(fs::exists(data)) << "the refused master created its data directory";
}

TEST_F(TlsClusterTest, AnAgentWithAnotherCaExitsSayingWhichCaToPass) {
  const absl::Time start = absl::Now();
  LaunchResult agent =
      RunToCompletion(AgentArgv("a2", certs_.other_ca_file), {}, absl::Seconds(20));
  ASSERT_TRUE(agent.exited) << agent.err;
  EXPECT_LT(agent.end_time - start, absl::Seconds(10));
  EXPECT_EQ(agent.status, 1) << agent.err;
  EXPECT_NE(agent.err.find("presented a TLS certificate that is not trusted by the CA in " +
                           certs_.other_ca_file),
            std::string::npos)
      << agent.err;
  EXPECT_NE(agent.err.find("--tls-ca FILE"), std::string::npos) << agent.err;
}

TEST_F(TlsClusterTest, TheCliVerifiesTheMasterWithTlsCa) {
  LaunchResult wrong = RunToCompletion(
      {BinaryPath("cohort"), "-m", url_, "--tls-ca", certs_.other_ca_file, "agent", "list"}, {},
      absl::Seconds(20));
  EXPECT_EQ(wrong.status, 1) << wrong.err;
  EXPECT_NE(wrong.err.find("not trusted by the CA in " + certs_.other_ca_file), std::string::npos)
      << wrong.err;
  // $COHORT_TLS_CA is the fallback. Whatever the master answers, the connection was made.
  LaunchResult right = RunToCompletion({BinaryPath("cohort"), "-m", url_, "agent", "list"},
                                       {{"COHORT_TLS_CA", certs_.ca_file}}, absl::Seconds(20));
  EXPECT_TRUE(right.exited);
  EXPECT_EQ(right.err.find("TLS"), std::string::npos) << right.err;
  EXPECT_EQ(right.err.find("cannot reach"), std::string::npos) << right.err;
}

// Issue 34: logging in from $COHORT_USER and $COHORT_PASSWORD (a script's way) trusts the same
// CA as every other request; before, that login ignored --tls-ca and failed against a private
// CA.
TEST_F(TlsClusterTest, ALoginFromTheEnvironmentTrustsTlsCaToo) {
  absl::StatusOr<std::string> password =
      ReadSecretFile((dir_ / "master" / "admin-password").string());
  ASSERT_OK(password);
  LaunchResult listed =
      RunToCompletion({BinaryPath("cohort"), "-m", url_, "--tls-ca", certs_.ca_file, "experiment",
                       "list"},
                      {{"COHORT_USER", "admin"},
                       {"COHORT_PASSWORD", *password},
                       {"XDG_CONFIG_HOME", (dir_ / "config").string()},
                       {"COHORT_TLS_CA", std::nullopt}},
                      absl::Seconds(30));
  EXPECT_EQ(listed.status, 0) << listed.err;
  EXPECT_EQ(listed.err.find("TLS"), std::string::npos) << listed.err;
}

}  // namespace
}  // namespace cohort
