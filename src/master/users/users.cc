#include "master/users/users.h"

#include "absl/time/clock.h"

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/logging.h"
#include "master/users/password.h"
#include "wire/limits.h"

namespace cohort::master::users {
namespace {

constexpr char kAdminName[] = "admin";

absl::Status WrongCredentials() {
  return absl::UnauthenticatedError("wrong user name or password");
}

absl::Status BadToken() {
  return absl::UnauthenticatedError(
      "the login token is not valid (revoked, or from another master): log in again with "
      "`cohort user login`");
}

// A hash that no password matches in practice, verified against when the user is unknown so
// that a login takes as long whether or not the name exists.
const std::string& DummyHash() {
  static const std::string* const hash = new std::string(HashPassword(NewToken()).value_or(""));
  return *hash;
}

}  // namespace

Users::Users(Database* db, const Clock* clock, UsersOptions options)
    : db_(db), clock_(clock), options_(options), throttle_(clock), hashing_(options.hashing) {}

int64_t Users::NowMs() const { return absl::ToUnixMillis(clock_->Now()); }

absl::StatusOr<bool> Users::HasUsers() {
  COHORT_ASSIGN_OR_RETURN(std::vector<UserRow> existing, db_->ListUsers());
  return !existing.empty();
}

absl::StatusOr<bool> Users::EnsureAdmin(const std::string& password) {
  COHORT_ASSIGN_OR_RETURN(bool has_users, HasUsers());
  if (has_users) return false;
  COHORT_RETURN_IF_ERROR(CheckPasswordRules(password));
  COHORT_ASSIGN_OR_RETURN(std::string hash, HashPassword(password));
  COHORT_ASSIGN_OR_RETURN(
      int64_t id,
      db_->InsertUser(
          {.name = kAdminName, .password_hash = hash, .admin = true, .created_ms = NowMs()}));
  COHORT_LOG(INFO) << "created the user '" << kAdminName << "' (id " << id << ")";
  return true;
}

absl::StatusOr<std::string> Users::Hash(const std::string& password) {
  absl::StatusOr<std::string> hash = absl::InternalError("the hash did not run");
  COHORT_RETURN_IF_ERROR(hashing_.Run([&] { hash = HashPassword(password); }));
  return hash;
}

absl::StatusOr<bool> Users::Verify(const std::string& hash, const std::string& password) {
  absl::StatusOr<bool> match = absl::InternalError("the check did not run");
  COHORT_RETURN_IF_ERROR(hashing_.Run([&] { match = VerifyPassword(hash, password); }));
  return match;
}

absl::StatusOr<Users::LoginResult> Users::Login(const std::string& name,
                                                const std::string& password,
                                                const std::string& address) {
  COHORT_ASSIGN_OR_RETURN(const absl::Duration hold, throttle_.Check(name, address));
  if (hold > absl::ZeroDuration()) {
    // Guessed at from elsewhere: slowed, never refused (login_throttle.h).
    if (options_.hold) {
      options_.hold(hold);
    } else {
      absl::SleepFor(hold);
    }
  }
  absl::StatusOr<UserRow> user = db_->GetUserByName(name);
  if (!user.ok() && !absl::IsNotFound(user.status())) return user.status();
  COHORT_ASSIGN_OR_RETURN(bool match,
                          Verify(user.ok() ? user->password_hash : DummyHash(), password));
  if (!user.ok() || !match || !user->active) {
    const int failures = throttle_.Failed(name, address);
    COHORT_LOG(WARNING) << "failed login for user '" << name.substr(0, wire::kMaxSafeNameBytes)
                        << "' from " << address << " (" << failures << " in a row)";
    return WrongCredentials();
  }
  throttle_.Succeeded(name, address);
  // Expired tokens are dropped here, where new ones are made, so the table does not grow.
  COHORT_RETURN_IF_ERROR(db_->DeleteExpiredTokens(NowMs()).status());
  LoginResult result{NewToken(), *user,
                     absl::ToUnixMillis(clock_->Now() + options_.token_lifetime),
                     options_.token_lifetime};
  COHORT_RETURN_IF_ERROR(db_->InsertToken({.hash = TokenHash(result.token),
                                           .user_id = user->id,
                                           .created_ms = NowMs(),
                                           .expires_ms = result.expires_ms}));
  return result;
}

absl::StatusOr<Identity> Users::Authenticate(const std::string& token) {
  const std::string hash = TokenHash(token);
  absl::StatusOr<TokenRow> row = db_->GetToken(hash);
  if (absl::IsNotFound(row.status())) return BadToken();
  if (!row.ok()) return row.status();
  if (row->expires_ms <= NowMs()) {
    return absl::UnauthenticatedError(
        "the login token has expired: log in again with `cohort user login`");
  }
  absl::StatusOr<UserRow> user = db_->GetUser(row->user_id);
  if (absl::IsNotFound(user.status())) return BadToken();
  if (!user.ok()) return user.status();
  if (!user->active) {
    return absl::UnauthenticatedError(
        absl::StrCat("the user '", user->name, "' is deactivated: ask an admin"));
  }
  return Identity{user->id, user->name, user->admin, hash};
}

absl::Status Users::Logout(const Identity& identity) {
  return db_->DeleteToken(identity.token_hash);
}

absl::Status Users::RequireAdmin(const Identity& actor, const std::string& what) const {
  if (actor.admin) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(what, " is for admins; '", actor.name, "' is not one"));
}

absl::StatusOr<std::vector<UserRow>> Users::List(const Identity& actor) {
  COHORT_RETURN_IF_ERROR(RequireAdmin(actor, "listing users"));
  return db_->ListUsers();
}

absl::StatusOr<UserRow> Users::Get(const std::string& name) { return db_->GetUserByName(name); }

absl::Status Users::Create(const Identity& actor, const std::string& name,
                           const std::string& password, bool admin) {
  COHORT_RETURN_IF_ERROR(RequireAdmin(actor, "creating users"));
  COHORT_RETURN_IF_ERROR(wire::CheckSafeName("user name", name));
  COHORT_RETURN_IF_ERROR(CheckPasswordRules(password));
  COHORT_ASSIGN_OR_RETURN(std::string hash, Hash(password));
  COHORT_ASSIGN_OR_RETURN(
      int64_t id,
      db_->InsertUser(
          {.name = name, .password_hash = hash, .admin = admin, .created_ms = NowMs()}));
  COHORT_LOG(INFO) << "'" << actor.name << "' created the user '" << name << "' (id " << id
                   << (admin ? ", admin)" : ")");
  return absl::OkStatus();
}

absl::Status Users::SetActive(const Identity& actor, const std::string& name, bool active) {
  COHORT_RETURN_IF_ERROR(RequireAdmin(actor, active ? "activating users" : "deactivating users"));
  if (!active && name == actor.name) {
    return absl::FailedPreconditionError("an admin cannot deactivate themselves");
  }
  COHORT_ASSIGN_OR_RETURN(UserRow user, db_->GetUserByName(name));
  user.active = active;
  COHORT_RETURN_IF_ERROR(db_->UpdateUser(user));
  if (!active) COHORT_RETURN_IF_ERROR(db_->DeleteUserTokens(user.id));
  COHORT_LOG(INFO) << "'" << actor.name << "' " << (active ? "activated" : "deactivated")
                   << " the user '" << name << "'";
  return absl::OkStatus();
}

absl::Status Users::SetPassword(const Identity& actor, const std::string& name,
                                const std::optional<std::string>& old_password,
                                const std::string& password) {
  if (name != actor.name) COHORT_RETURN_IF_ERROR(RequireAdmin(actor, "setting another's password"));
  COHORT_RETURN_IF_ERROR(CheckPasswordRules(password));
  COHORT_ASSIGN_OR_RETURN(UserRow user, db_->GetUserByName(name));
  if (name == actor.name && !actor.admin) {
    if (!old_password) {
      return absl::InvalidArgumentError("changing your password needs your current password");
    }
    COHORT_ASSIGN_OR_RETURN(bool match, Verify(user.password_hash, *old_password));
    if (!match) return absl::PermissionDeniedError("the current password is wrong");
  }
  COHORT_ASSIGN_OR_RETURN(user.password_hash, Hash(password));
  COHORT_RETURN_IF_ERROR(db_->UpdateUser(user));
  // Every session of the user ends, the caller's too: the new password is needed to go on.
  return db_->DeleteUserTokens(user.id);
}

}  // namespace cohort::master::users
