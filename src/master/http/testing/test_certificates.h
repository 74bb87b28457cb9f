#pragma once
// MakeTestCertificates (tests only): a throw-away certificate authority and a server certificate
// it signed for 127.0.0.1 and localhost (and one for another name), made with the `openssl` command
// (Debian's openssl package) in a directory the test owns, plus a second CA that signed nothing (a
// wrong
// --tls-ca). EC P-256 keys, valid for two days. Thread-compatible.
//
// Example:
//   absl::StatusOr<TestCertificates> certs = MakeTestCertificates(dir);
//   ASSERT_OK(certs);  // common/testing/status_matchers.h
//   MasterServer server(dir, {.tls = {certs->cert_file, certs->key_file}});

#include <string>

#include "absl/status/statusor.h"

namespace cohort::master::http {

struct TestCertificates {
  std::string ca_file;        // the CA that signed cert_file
  std::string cert_file;      // the server's certificate: subjectAltName 127.0.0.1, localhost
  std::string key_file;       // its private key, unencrypted
  std::string other_ca_file;  // a CA unrelated to cert_file
  // A certificate (and its key) that ca_file signed for elsewhere.example only: the right CA,
  // the wrong name.
  std::string elsewhere_cert_file;
  std::string elsewhere_key_file;
};

// Writes the files into `dir` (which must exist). Internal, with the command and its output,
// when an openssl command fails or does not finish within 30 s.
absl::StatusOr<TestCertificates> MakeTestCertificates(const std::string& dir);

}  // namespace cohort::master::http
