#include "master/http/tls_server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace cohort::master::http {
namespace {

// OpenSSL's reason for the last failure on this thread (e.g. "no start line").
std::string OpenSslReason() {
  const unsigned long error = ERR_peek_last_error();
  if (error == 0) return "no reason given";
  const char* reason = ERR_reason_error_string(error);
  return reason != nullptr ? reason : absl::StrCat("OpenSSL error ", error);
}

// Fails the load of an encrypted key instead of prompting on the terminal for a pass phrase.
int RefusePassPhrase(char*, int, int, void*) { return 0; }

absl::Status CheckReadable(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot read the file (", std::strerror(errno), ")"));
  }
  return absl::OkStatus();
}

// Loads the certificate chain and its key into `ctx`: whether OpenSSL takes them.
absl::Status Configure(SSL_CTX& ctx, const TlsFiles& tls) {
  SSL_CTX_set_default_passwd_cb(&ctx, RefusePassPhrase);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(&ctx, tls.cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", tls.cert_file, ": not a PEM certificate (", OpenSslReason(),
                     "): it must hold the server's certificate, then any intermediate CAs"));
  }
  if (SSL_CTX_use_PrivateKey_file(&ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(&ctx) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key ", tls.key_file, ": not the unencrypted PEM private key of the certificate in ",
        tls.cert_file, " (", OpenSslReason(), ")"));
  }
  return absl::OkStatus();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<TlsPem> LoadTls(const TlsFiles& tls) {
  if (!tls.enabled()) return TlsPem{};
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTPS needs both --tls-cert FILE and --tls-key FILE; only ",
        tls.cert_file.empty() ? "--tls-key " + tls.key_file : "--tls-cert " + tls.cert_file,
        " was given"));
  }
  if (absl::Status s = CheckReadable("--tls-cert", tls.cert_file); !s.ok()) return s;
  if (absl::Status s = CheckReadable("--tls-key", tls.key_file); !s.ok()) return s;
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_server_method()),
                                                   SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("OpenSSL could not create a TLS context");
  if (absl::Status loaded = Configure(*ctx, tls); !loaded.ok()) return loaded;
  TlsPem pem{ReadAll(tls.cert_file), ReadAll(tls.key_file)};
  if (pem.cert_pem.empty() || pem.key_pem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-cert ", tls.cert_file, " or --tls-key ",
                                                   tls.key_file, " became unreadable"));
  }
  return pem;
}

}  // namespace cohort::master::http
