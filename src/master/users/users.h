#pragma once
// Users: the people who may use a master, their passwords and their login tokens
// (docs/security.md, "Users and tokens"). It owns the rules; the database keeps the rows.
//   * The first start creates the user `admin` (EnsureAdmin).
//   * Login checks a password (Argon2id, constant-time) under the LoginThrottle and returns a
//     new random 256-bit token; only its SHA-256 is stored, with its user and an expiry.
//   * Authenticate turns a token into an Identity, or refuses it (Unauthenticated: unknown,
//     revoked, expired, or its user deactivated). Each login drops the expired tokens. Logout
//     revokes one token; deactivating a user or setting a password revokes all of that user's
//     tokens.
//   * Admin-only operations take the acting Identity and refuse others (PermissionDenied).
// Argon2id hashes run on a HashPool of their own (hash_pool.h): two threads at a lower CPU
// priority and at most eight waiting; more callers get Unavailable at once, so a login flood
// neither exhausts the master's memory nor holds the request handlers others need.
//
// Thread-safe (the database is; the throttle and the hash count have their own locks).
//
// Example:
//   Users users(db.get(), &clock);
//   COHORT_ASSIGN_OR_RETURN(Users::LoginResult login, users.Login("admin", pw, "127.0.0.1"));
//   COHORT_ASSIGN_OR_RETURN(Identity me, users.Authenticate(login.token));

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "master/db/database.h"
#include "master/users/hash_pool.h"
#include "master/users/login_throttle.h"

namespace cohort::master::users {

// Who a valid token belongs to.
struct Identity {
  int64_t user_id = 0;
  std::string name;
  bool admin = false;
  std::string token_hash;  // the token presented (Logout revokes it)
};

struct UsersOptions {
  absl::Duration token_lifetime = absl::Hours(24 * 7);
  HashPoolOptions hashing;
  // Holds a login the throttle slows (LoginThrottle::Check) for that long; null: sleeps (tests
  // record it instead).
  std::function<void(absl::Duration)> hold;
};

class Users {
 public:
  // `db` and `clock` must outlive the Users.
  Users(Database* db, const Clock* clock, UsersOptions options = {});

  // Whether any user exists (a master's first start has none).
  absl::StatusOr<bool> HasUsers();
  // Creates `admin` (an admin) with `password` when no user exists yet; true when it did.
  // InvalidArgument when the password breaks the rules.
  absl::StatusOr<bool> EnsureAdmin(const std::string& password);

  struct LoginResult {
    std::string token;
    UserRow user;
    int64_t expires_ms = 0;
    absl::Duration lifetime;  // from now to expires_ms
  };
  // Unauthenticated "wrong user name or password" for an unknown user, a wrong password or a
  // deactivated user (the same words, so names cannot be probed); ResourceExhausted when the
  // throttle refuses (saying when to retry); Unavailable when too many hashes run.
  absl::StatusOr<LoginResult> Login(const std::string& name, const std::string& password,
                                    const std::string& address);
  absl::StatusOr<Identity> Authenticate(const std::string& token);
  absl::Status Logout(const Identity& identity);

  absl::StatusOr<std::vector<UserRow>> List(const Identity& actor);  // admins only
  absl::StatusOr<UserRow> Get(const std::string& name);              // NotFound naming the user
  absl::Status Create(const Identity& actor, const std::string& name, const std::string& password,
                      bool admin);  // admins only
  absl::Status SetActive(const Identity& actor, const std::string& name, bool active);
  // An admin sets anyone's password; a user sets their own only with `old_password` right.
  absl::Status SetPassword(const Identity& actor, const std::string& name,
                           const std::optional<std::string>& old_password,
                           const std::string& password);

 private:
  absl::Status RequireAdmin(const Identity& actor, const std::string& what) const;
  // Argon2id on the hash pool.
  absl::StatusOr<std::string> Hash(const std::string& password);
  absl::StatusOr<bool> Verify(const std::string& hash, const std::string& password);
  int64_t NowMs() const;

  Database* db_;
  const Clock* clock_;
  UsersOptions options_;
  LoginThrottle throttle_;
  HashPool hashing_;
};

}  // namespace cohort::master::users
