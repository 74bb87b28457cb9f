#include "master/webhooks/signing.h"

#include <sodium.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cohort::master::webhooks {
namespace {

void InitSodium() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) std::abort();  // libsodium cannot run here at all: nothing could be signed
}

std::string Hex(const unsigned char* bytes, size_t n) {
  std::string hex(n * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), bytes, n);
  hex.pop_back();
  return hex;
}

std::vector<unsigned char> Mac(const std::string& secret, int64_t t, const std::string& body) {
  std::vector<unsigned char> mac(crypto_auth_hmacsha256_BYTES);
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(secret.data()),
                              secret.size());
  const std::string prefix = absl::StrCat(t, ".");
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(prefix.data()),
                                prefix.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(body.data()),
                                body.size());
  crypto_auth_hmacsha256_final(&state, mac.data());
  return mac;
}

}  // namespace

std::string NewSecret() {
  InitSodium();
  unsigned char bytes[32];
  randombytes_buf(bytes, sizeof(bytes));
  return Hex(bytes, sizeof(bytes));
}

std::string Signature(const std::string& secret, int64_t unix_seconds, const std::string& body) {
  InitSodium();
  const std::vector<unsigned char> mac = Mac(secret, unix_seconds, body);
  return absl::StrCat("t=", unix_seconds, ",v1=", Hex(mac.data(), mac.size()));
}

bool Verify(const std::string& secret, const std::string& header, const std::string& body,
            int64_t now_seconds, int64_t tolerance_seconds) {
  InitSodium();
  int64_t t = 0;
  std::string v1;
  for (absl::string_view part : absl::StrSplit(header, ',')) {
    if (absl::ConsumePrefix(&part, "t=")) {
      if (!absl::SimpleAtoi(part, &t)) return false;
    } else if (absl::ConsumePrefix(&part, "v1=")) {
      v1 = std::string(part);
    }
  }
  if (t <= 0 || std::llabs(now_seconds - t) > tolerance_seconds) return false;
  const std::vector<unsigned char> mac = Mac(secret, t, body);
  const std::string expected = Hex(mac.data(), mac.size());
  return v1.size() == expected.size() &&
         sodium_memcmp(v1.data(), expected.data(), expected.size()) == 0;
}

}  // namespace cohort::master::webhooks
