// SqliteDatabase's users and login tokens (database.h).

#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "master/db/internal/sqlite_statement.h"
#include "master/db/sqlite_database.h"

namespace cohort::master {
namespace {

using internal::ReadAll;
using internal::Statement;

constexpr absl::string_view kSelectUser =
    "SELECT id, name, password_hash, admin, active, created_ms FROM users";

UserRow ReadUser(const Statement& s) {
  return UserRow{s.Int64(0), s.Text(1), s.Text(2), s.Int64(3) != 0, s.Int64(4) != 0, s.Int64(5)};
}

// The one row `s` selects, or NotFound naming `what`.
absl::StatusOr<UserRow> OneUser(Statement& s, const std::string& what) {
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::NotFoundError(absl::StrCat(what, " not found"));
  return ReadUser(s);
}

}  // namespace

absl::StatusOr<int64_t> SqliteDatabase::InsertUser(const UserRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "insert user",
              "INSERT INTO users (name, password_hash, admin, active, created_ms) "
              "VALUES (?1, ?2, ?3, ?4, ?5)");
  s.BindText(1, row.name);
  s.BindText(2, row.password_hash);
  s.BindInt64(3, row.admin ? 1 : 0);
  s.BindInt64(4, row.active ? 1 : 0);
  s.BindInt64(5, row.created_ms);
  absl::Status status = s.Run();
  if (s.code() == SQLITE_CONSTRAINT_UNIQUE) {
    return absl::AlreadyExistsError(absl::StrCat("user '", row.name, "' already exists"));
  }
  if (!status.ok()) return status;
  return sqlite3_last_insert_rowid(db_);
}

absl::StatusOr<UserRow> SqliteDatabase::GetUser(int64_t id) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "get user", absl::StrCat(kSelectUser, " WHERE id = ?1"));
  s.BindInt64(1, id);
  return OneUser(s, absl::StrCat("user ", id));
}

absl::StatusOr<UserRow> SqliteDatabase::GetUserByName(const std::string& name) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "get user", absl::StrCat(kSelectUser, " WHERE name = ?1"));
  s.BindText(1, name);
  return OneUser(s, absl::StrCat("user '", name, "'"));
}

absl::StatusOr<std::vector<UserRow>> SqliteDatabase::ListUsers() {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "list users", absl::StrCat(kSelectUser, " ORDER BY id"));
  return ReadAll<UserRow>(s, ReadUser);
}

absl::Status SqliteDatabase::UpdateUser(const UserRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "update user",
              "UPDATE users SET password_hash = ?2, admin = ?3, active = ?4 WHERE id = ?1");
  s.BindInt64(1, row.id);
  s.BindText(2, row.password_hash);
  s.BindInt64(3, row.admin ? 1 : 0);
  s.BindInt64(4, row.active ? 1 : 0);
  COHORT_RETURN_IF_ERROR(s.Run());
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("user ", row.id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteDatabase::InsertToken(const TokenRow& row) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "insert token",
              "INSERT INTO tokens (hash, user_id, created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4)");
  s.BindText(1, row.hash);
  s.BindInt64(2, row.user_id);
  s.BindInt64(3, row.created_ms);
  s.BindInt64(4, row.expires_ms);
  absl::Status status = s.Run();
  if (s.code() == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return absl::NotFoundError(absl::StrCat("user ", row.user_id, " not found"));
  }
  return status;
}

absl::StatusOr<TokenRow> SqliteDatabase::GetToken(const std::string& hash) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "get token",
              "SELECT hash, user_id, created_ms, expires_ms FROM tokens WHERE hash = ?1");
  s.BindText(1, hash);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::NotFoundError("no such token");
  return TokenRow{s.Text(0), s.Int64(1), s.Int64(2), s.Int64(3)};
}

absl::Status SqliteDatabase::DeleteToken(const std::string& hash) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "delete token", "DELETE FROM tokens WHERE hash = ?1");
  s.BindText(1, hash);
  return s.Run();
}

absl::Status SqliteDatabase::DeleteUserTokens(int64_t user_id) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "delete user tokens", "DELETE FROM tokens WHERE user_id = ?1");
  s.BindInt64(1, user_id);
  return s.Run();
}

absl::StatusOr<int64_t> SqliteDatabase::DeleteExpiredTokens(int64_t now_ms) {
  MutexLock lock(&mu_);
  Statement s(*statements_, path_, "delete expired tokens", "DELETE FROM tokens WHERE expires_ms <= ?1");
  s.BindInt64(1, now_ms);
  COHORT_RETURN_IF_ERROR(s.Run());
  return static_cast<int64_t>(sqlite3_changes(db_));
}

}  // namespace cohort::master
