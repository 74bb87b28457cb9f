#pragma once
// Signing a delivery (docs/design/0023): HMAC-SHA-256 (libsodium's crypto_auth_hmacsha256) of
// "<unix seconds>.<body>" with the webhook's secret, sent as
//   X-Cohort-Signature: t=<unix seconds>,v1=<64 hex digits>
// so that a receiver can tell Cohort's POSTs from anyone's, and refuse a replay by its time.
// Thread-safe (libsodium is initialized once by the first call).

#include <cstdint>
#include <string>

namespace cohort::master::webhooks {

// A new secret: 32 random bytes as 64 hex digits.
std::string NewSecret();

// The X-Cohort-Signature header value of `body` sent at `unix_seconds`.
std::string Signature(const std::string& secret, int64_t unix_seconds, const std::string& body);

// Whether `header` signs `body` with `secret` and its time is within `tolerance_seconds` of
// `now_seconds` (what a receiver checks; the tests use it). Constant time in the MAC.
bool Verify(const std::string& secret, const std::string& header, const std::string& body,
            int64_t now_seconds, int64_t tolerance_seconds = 300);

}  // namespace cohort::master::webhooks
