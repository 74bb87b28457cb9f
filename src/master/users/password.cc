#include "master/users/password.h"

#include <sodium.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace cohort::master::users {
namespace {

// sodium_init is thread-safe and idempotent; it fails only when the system has no randomness
// source, and then nothing here can be done safely.
void InitSodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) {
      std::fprintf(stderr, "cohort-master: libsodium cannot initialize (no randomness?)\n");
      std::abort();
    }
  });
}

}  // namespace

absl::Status CheckPasswordRules(absl::string_view password) {
  if (password.size() < kMinPasswordBytes || password.size() > kMaxPasswordBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a password must be ", kMinPasswordBytes, " to ",
                                                   kMaxPasswordBytes, " characters long, got ",
                                                   password.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> HashPassword(absl::string_view password) {
  InitSodium();
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(out, password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0) {
    return absl::ResourceExhaustedError(
        "hashing the password failed: not enough memory for Argon2id (64 MiB)");
  }
  return std::string(out);
}

bool VerifyPassword(const std::string& hash, absl::string_view password) {
  InitSodium();
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

std::string NewToken() {
  InitSodium();
  unsigned char bytes[32];
  randombytes_buf(bytes, sizeof(bytes));
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

std::string TokenHash(absl::string_view token) {
  InitSodium();
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(token.data()), token.size());
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string RandomPassword() {
  InitSodium();
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string password(24, '\0');
  for (char& c : password) c = kAlphabet[randombytes_uniform(sizeof(kAlphabet) - 1)];
  return password;
}

}  // namespace cohort::master::users
