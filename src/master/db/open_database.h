#pragma once
// Which database the master runs on, by URL (cohort-master --db), and opening it as a Database
// whatever its backend. Thread-safe (no shared state).
//
// The URLs ParseDatabaseUrl accepts (the scheme in any case):
//   sqlite:PATH            a SQLite file; PATH relative (to the working directory) or absolute,
//                          taken as written (no %-decoding): sqlite:master.db,
//                          sqlite:/var/lib/cohort/master.db; sqlite::memory: is a private
//                          in-memory database (tests: gone when the master stops)
//   sqlite:///ABSOLUTE     the same as sqlite:/ABSOLUTE (the URL form, as file:///)
//   PATH                   without a scheme: a SQLite file, as `--db FILE` always was
//   postgresql://USER@HOST:PORT/DATABASE?OPTIONS  (or postgres://) a PostgreSQL database, in
//                          libpq's URL syntax (options such as sslmode=verify-full); the
//                          password comes from elsewhere (DatabaseOptions::postgres_password,
//                          PGPASSWORD, ~/.pgpass)
// Refused (InvalidArgument, naming the way out): an empty URL or PATH; sqlite://HOST/... (a
// SQLite database is a local file); sqlite:PATH?OPTIONS (none are taken); a PostgreSQL URL with
// a password in it (a command line is seen by every user: ps, shell history) or without a host
// or a database; any other scheme, named. A scheme is what
// RFC 3986 calls one (a letter, then letters, digits, '+', '-' or '.', then ':'), so a relative
// file whose name has a colon before any '/' is written ./NAME or sqlite:NAME.
// Messages never hold a password the URL may carry (MaskDatabaseUrl).
//
// Example (cohort-master):
//   COHORT_ASSIGN_OR_RETURN(DatabaseUrl url, ParseDatabaseUrl("sqlite:/var/lib/cohort/master.db"));
//   COHORT_ASSIGN_OR_RETURN(OpenedDatabase opened, OpenDatabase(url));
//   Master::Create(std::move(opened.database), options);

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "master/db/database.h"
#include "master/db/sqlite_database.h"  // IntegrityCheck

namespace cohort::master {

struct DatabaseUrl {
  enum class Backend {
    kSqlite,    // path: the file (or ":memory:")
    kPostgres,  // path: the URL as given (it holds no password)
  };
  Backend backend = Backend::kSqlite;
  std::string path;
};

absl::StatusOr<DatabaseUrl> ParseDatabaseUrl(absl::string_view url);

// `url` as it may be printed: the password of a user:password@ in its authority becomes ***
// (postgres://alice:***@db.example/cohort), and so does the value of any password= parameter (a
// URL's query, a libpq keyword string). Everything else is kept. When unsure where the password
// ends (an '@' inside it), more is masked, never less.
std::string MaskDatabaseUrl(absl::string_view url);

struct DatabaseOptions {
  // How long opening may spend checking the stored data for damage (SQLite: PRAGMA quick_check
  // over an existing file's pages, SqliteOptions::check_time_limit); zero skips the check.
  absl::Duration check_time_limit = absl::Seconds(60);
  // PostgreSQL: the password (from --db-password-file); empty: libpq's own sources
  // (PGPASSWORD, ~/.pgpass). Never printed.
  std::string postgres_password;
  // PostgreSQL: connections at most (the master's threads that use the database).
  int pool_size = 16;
};

struct OpenedDatabase {
  std::unique_ptr<Database> database;
  // How the check at opening went (kSkipped: a new or in-memory database, or a zero limit).
  IntegrityCheck integrity_check = IntegrityCheck::kSkipped;
};

// Opens the database `url` names, creating it if needed, with its schema brought up to date.
// SQLite: SqliteDatabase::Open's refusals and errors (a foreign file, a damaged one, a newer
// schema). PostgreSQL: PostgresDatabase::Open's (Unavailable naming the masked URL when the
// server cannot be reached or refuses the login). The file and its journal files (-wal, -shm) are
// made readable by this user only (chmod 600), before opening (a database made by an older master
// was 0644) and after (the files opening created, whatever the umask); Unavailable when that fails.
absl::StatusOr<OpenedDatabase> OpenDatabase(const DatabaseUrl& url,
                                            const DatabaseOptions& options = {});

}  // namespace cohort::master
