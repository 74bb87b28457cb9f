#pragma once
// Secrets of users' authentication (docs/security.md, "Users and tokens"), on libsodium:
// passwords hashed with Argon2id (crypto_pwhash_str, its "interactive" cost: about 0.1 s and
// 64 MiB per hash), login tokens of 256 random bits, and the SHA-256 under which a token is
// stored (the token itself never is). Thread-safe; sodium_init() runs once, on first use.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::master::users {

inline constexpr size_t kMinPasswordBytes = 8;
inline constexpr size_t kMaxPasswordBytes = 1024;

// OK when `password` is kMinPasswordBytes..kMaxPasswordBytes long; else InvalidArgument saying
// how long it must be (the password itself is never in a message).
absl::Status CheckPasswordRules(absl::string_view password);

// The Argon2id hash of `password` in crypto_pwhash_str's format (salt and cost included).
// ResourceExhausted when the memory for the hash cannot be had.
absl::StatusOr<std::string> HashPassword(absl::string_view password);

// Whether `password` matches `hash` (libsodium compares in constant time). False for a hash in
// any other format.
bool VerifyPassword(const std::string& hash, absl::string_view password);

// A new login token: 32 random bytes as 64 hex digits.
std::string NewToken();

// The hex SHA-256 of `token`: the key under which the database keeps it.
std::string TokenHash(absl::string_view token);

// A strong random password for a generated account: 24 characters of [A-Za-z0-9] (about 142
// bits).
std::string RandomPassword();

}  // namespace cohort::master::users
