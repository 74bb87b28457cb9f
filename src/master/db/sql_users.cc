// SqlDatabase's users and login tokens (database.h).

#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/sql_database.h"

namespace cohort::master {
namespace {

using sql::Query;
using sql::ReadAll;

constexpr absl::string_view kSelectUser =
    "SELECT id, name, password_hash, admin, active, created_ms FROM users";

UserRow ReadUser(const Query& s) {
  return UserRow{s.Int64(0), s.Text(1), s.Text(2), s.Int64(3) != 0, s.Int64(4) != 0, s.Int64(5)};
}

// The one row `s` selects, or NotFound naming `what`.
absl::StatusOr<UserRow> OneUser(Query& s, const std::string& what) {
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::NotFoundError(absl::StrCat(what, " not found"));
  return ReadUser(s);
}

}  // namespace

absl::StatusOr<int64_t> SqlDatabase::InsertUser(const UserRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "insert user",
          "INSERT INTO users (name, password_hash, admin, active, created_ms) "
          "VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id");
  s.BindText(1, row.name);
  s.BindText(2, row.password_hash);
  s.BindInt64(3, row.admin ? 1 : 0);
  s.BindInt64(4, row.active ? 1 : 0);
  s.BindInt64(5, row.created_ms);
  absl::StatusOr<int64_t> id = s.RunReturningInt64();
  if (s.failure() == sql::Failure::kUniqueViolation) {
    return absl::AlreadyExistsError(absl::StrCat("user '", row.name, "' already exists"));
  }
  return id;
}

absl::StatusOr<UserRow> SqlDatabase::GetUser(int64_t id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get user", absl::StrCat(kSelectUser, " WHERE id = ?1"));
  s.BindInt64(1, id);
  return OneUser(s, absl::StrCat("user ", id));
}

absl::StatusOr<UserRow> SqlDatabase::GetUserByName(const std::string& name) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get user", absl::StrCat(kSelectUser, " WHERE name = ?1"));
  s.BindText(1, name);
  return OneUser(s, absl::StrCat("user '", name, "'"));
}

absl::StatusOr<std::vector<UserRow>> SqlDatabase::ListUsers() {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "list users", absl::StrCat(kSelectUser, " ORDER BY id"));
  return ReadAll<UserRow>(s, ReadUser);
}

absl::Status SqlDatabase::UpdateUser(const UserRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "update user",
          "UPDATE users SET password_hash = ?2, admin = ?3, active = ?4 WHERE id = ?1");
  s.BindInt64(1, row.id);
  s.BindText(2, row.password_hash);
  s.BindInt64(3, row.admin ? 1 : 0);
  s.BindInt64(4, row.active ? 1 : 0);
  return s.RunOnRow(absl::StrCat("user ", row.id));
}

absl::Status SqlDatabase::InsertToken(const TokenRow& row) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "insert token",
          "INSERT INTO tokens (hash, user_id, created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4)");
  s.BindText(1, row.hash);
  s.BindInt64(2, row.user_id);
  s.BindInt64(3, row.created_ms);
  s.BindInt64(4, row.expires_ms);
  absl::Status status = s.Run();
  if (s.failure() == sql::Failure::kForeignKeyViolation) {
    return absl::NotFoundError(absl::StrCat("user ", row.user_id, " not found"));
  }
  return status;
}

absl::StatusOr<TokenRow> SqlDatabase::GetToken(const std::string& hash) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "get token",
          "SELECT hash, user_id, created_ms, expires_ms FROM tokens WHERE hash = ?1");
  s.BindText(1, hash);
  COHORT_ASSIGN_OR_RETURN(bool has_row, s.Step());
  if (!has_row) return absl::NotFoundError("no such token");
  return TokenRow{s.Text(0), s.Int64(1), s.Int64(2), s.Int64(3)};
}

absl::Status SqlDatabase::DeleteToken(const std::string& hash) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "delete token", "DELETE FROM tokens WHERE hash = ?1");
  s.BindText(1, hash);
  return s.Run();
}

absl::Status SqlDatabase::DeleteUserTokens(int64_t user_id) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "delete user tokens", "DELETE FROM tokens WHERE user_id = ?1");
  s.BindInt64(1, user_id);
  return s.Run();
}

absl::StatusOr<int64_t> SqlDatabase::DeleteExpiredTokens(int64_t now_ms) {
  COHORT_ASSIGN_OR_RETURN(Lease c, Connect());
  Query s(*c, "delete expired tokens", "DELETE FROM tokens WHERE expires_ms <= ?1");
  s.BindInt64(1, now_ms);
  COHORT_RETURN_IF_ERROR(s.Run());
  return s.Changes();
}

}  // namespace cohort::master
