#include "master/db/open_database.h"

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/postgres_database.h"

namespace cohort::master {
namespace {

constexpr char kAccepted[] =
    "sqlite:PATH (e.g. sqlite:/var/lib/cohort/master.db), sqlite:///ABSOLUTE/PATH, a file "
    "path, or postgresql://USER@HOST:PORT/DATABASE";

// The scheme `url` starts with (RFC 3986: a letter, then letters, digits, '+', '-' or '.',
// then ':'), as written; empty when it has none.
absl::string_view SchemeOf(absl::string_view url) {
  if (url.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(url[0]))) return {};
  for (size_t i = 1; i < url.size(); ++i) {
    const char c = url[i];
    if (c == ':') return url.substr(0, i);
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return {};
    }
  }
  return {};
}

absl::StatusOr<DatabaseUrl> ParseSqliteUrl(absl::string_view url, absl::string_view rest) {
  if (absl::StartsWith(rest, "//")) {
    rest.remove_prefix(2);  // sqlite:///ABSOLUTE: an empty host, then the absolute path
    if (!absl::StartsWith(rest, "/")) {
      return absl::InvalidArgumentError(absl::StrCat(
          MaskDatabaseUrl(url),
          ": a SQLite database is a local file, not one on a host; write sqlite:PATH (e.g. "
          "sqlite:data/master.db) or sqlite:///ABSOLUTE/PATH"));
    }
  }
  if (rest.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(MaskDatabaseUrl(url),
                     ": names no file; write sqlite:PATH, e.g. sqlite:/var/lib/cohort/master.db"));
  }
  if (rest.find('?') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        MaskDatabaseUrl(url),
        ": a SQLite URL takes no options (the part from '?'); name the file alone (a file whose "
        "name has a '?' is given as a plain path)"));
  }
  return DatabaseUrl{DatabaseUrl::Backend::kSqlite, std::string(rest)};
}

// Masks the value of every `password=` (any case, spaces around '=' allowed, as libpq's
// keyword strings do) in `text`: up to '&' or a space, or a quoted value up to its quote.
void MaskPasswordParameters(std::string& text) {
  constexpr char kKey[] = "password";
  constexpr size_t kKeySize = sizeof(kKey) - 1;
  size_t from = 0;
  for (;;) {
    const std::string lower = absl::AsciiStrToLower(text);
    const size_t key = lower.find(kKey, from);
    if (key == std::string::npos) return;
    size_t i = key + kKeySize;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size() || text[i] != '=') {
      from = key + kKeySize;
      continue;
    }
    ++i;
    while (i < text.size() && text[i] == ' ') ++i;
    size_t end = i;
    if (end < text.size() && text[end] == '\'') {
      for (++end; end < text.size() && text[end] != '\''; ++end) {
        if (text[end] == '\\') ++end;  // libpq's \' inside a quoted value
      }
      end = std::min(end + 1, text.size());
    } else {
      end = text.find_first_of("& ", i);
      if (end == std::string::npos) end = text.size();
    }
    text.replace(i, end - i, "***");
    from = i + 3;
  }
}

// The SQLite file and its journal files: only this user may read them (a database made by an
// older master was 0644).
absl::Status MakeSqliteFilesPrivate(const std::string& path) {
  if (path.empty() || path == ":memory:") return absl::OkStatus();
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string file = path + suffix;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) continue;
    std::filesystem::permissions(
        file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("chmod 600 ", file, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// A postgresql:// URL is handed to libpq as written; what is checked here is that it holds no
// password (a command line shows in ps and shell history) and names a host and a database.
absl::StatusOr<DatabaseUrl> ParsePostgresUrl(absl::string_view url) {
  const std::string masked = MaskDatabaseUrl(url);
  if (masked != url) {
    return absl::InvalidArgumentError(absl::StrCat(
        masked,
        ": holds a password, which a command line shows to every user of the machine (ps, "
        "shell history); remove it and give it in PGPASSWORD, ~/.pgpass or --db-password-file"));
  }
  absl::string_view rest =
      url.substr(url.find("://") == absl::string_view::npos ? url.size() : url.find("://") + 3);
  const size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  absl::string_view database =
      slash == absl::string_view::npos ? absl::string_view() : rest.substr(slash + 1);
  database = database.substr(0, database.find('?'));
  if (authority.empty() || database.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(url, ": names ", authority.empty() ? "no host" : "no database",
                     "; write postgresql://USER@HOST:PORT/DATABASE (e.g. "
                     "postgresql://cohort@db.example:5432/cohort?sslmode=verify-full)"));
  }
  DatabaseUrl parsed;
  parsed.backend = DatabaseUrl::Backend::kPostgres;
  parsed.path = std::string(url);
  return parsed;
}

}  // namespace

absl::StatusOr<DatabaseUrl> ParseDatabaseUrl(absl::string_view url) {
  if (url.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no database named; accepted: ", kAccepted));
  }
  const absl::string_view scheme = SchemeOf(url);
  if (scheme.empty()) return DatabaseUrl{DatabaseUrl::Backend::kSqlite, std::string(url)};
  const std::string lower = absl::AsciiStrToLower(scheme);
  if (lower == "sqlite") return ParseSqliteUrl(url, url.substr(scheme.size() + 1));
  if (lower == "postgres" || lower == "postgresql") return ParsePostgresUrl(url);
  // Only the scheme is named: the rest of an unknown URL may hold a secret in a form
  // MaskDatabaseUrl does not know.
  return absl::InvalidArgumentError(
      absl::StrCat("unknown database scheme '", scheme, "'; accepted: ", kAccepted,
                   " (a relative file whose name has a colon: ./NAME)"));
}

std::string MaskDatabaseUrl(absl::string_view url) {
  std::string masked(url);
  // user:password@ after "://", up to the last '@' (a password may hold an '@' of its own).
  if (const size_t slashes = masked.find("://"); slashes != std::string::npos) {
    const size_t userinfo = slashes + 3;
    const size_t at = masked.rfind('@');
    if (at != std::string::npos && at > userinfo) {
      const size_t colon = masked.find(':', userinfo);
      if (colon != std::string::npos && colon < at) {
        masked.replace(colon + 1, at - colon - 1, "***");
      }
    }
  }
  MaskPasswordParameters(masked);
  return masked;
}

absl::StatusOr<OpenedDatabase> OpenDatabase(const DatabaseUrl& url,
                                            const DatabaseOptions& options) {
  switch (url.backend) {
    case DatabaseUrl::Backend::kSqlite: {
      COHORT_RETURN_IF_ERROR(MakeSqliteFilesPrivate(url.path));
      SqliteOptions sqlite;
      sqlite.check_time_limit = options.check_time_limit;
      COHORT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDatabase> database,
                              SqliteDatabase::Open(url.path, sqlite));
      // Again for the files opening created, whatever the process's umask.
      COHORT_RETURN_IF_ERROR(MakeSqliteFilesPrivate(url.path));
      OpenedDatabase opened;
      opened.integrity_check = database->integrity_check();
      opened.database = std::move(database);
      return opened;
    }
    case DatabaseUrl::Backend::kPostgres: {
      PostgresDatabaseOptions postgres;
      postgres.connection.password = options.postgres_password;
      postgres.pool_size = options.pool_size;
      COHORT_ASSIGN_OR_RETURN(std::unique_ptr<PostgresDatabase> database,
                              PostgresDatabase::Open(url.path, postgres));
      OpenedDatabase opened;
      opened.database = std::move(database);
      return opened;
    }
  }
  return absl::InternalError("OpenDatabase: a backend this build does not know");
}

}  // namespace cohort::master
