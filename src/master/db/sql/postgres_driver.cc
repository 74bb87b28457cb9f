#include "master/db/sql/postgres_driver.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <unordered_map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "master/db/open_database.h"

namespace cohort::master::sql {
namespace {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

std::string Trimmed(const char* message) {
  return std::string(absl::StripAsciiWhitespace(message == nullptr ? "" : message));
}

class PgConnection;

class PgStatement : public Statement {
 public:
  PgStatement(PgConnection& connection, std::string what, std::string name, int parameters,
              absl::Status error)
      : connection_(connection),
        what_(std::move(what)),
        name_(std::move(name)),
        values_(static_cast<size_t>(parameters)),
        error_(std::move(error)) {}

  void BindInt64(int index, int64_t value) override { Bind(index, absl::StrCat(value)); }
  void BindDouble(int index, double value) override {
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", value);
    Bind(index, text);
  }
  void BindNull(int index) override { Bind(index, std::nullopt); }
  void BindText(int index, absl::string_view value) override {
    if (absl::Status text = CheckTextParameter(what_, index, value); !text.ok()) {
      if (error_.ok()) {
        failure_ = Failure::kOther;
        error_ = text;
      }
      return;
    }
    Bind(index, std::string(value));
  }

  absl::StatusOr<bool> Step() override;
  absl::Status Run() override {
    absl::StatusOr<bool> row = Step();
    result_.reset();
    row_ = -1;
    return row.status();
  }
  void Reset() override {
    result_.reset();
    row_ = -1;
  }
  Failure failure() const override { return failure_; }
  int64_t Changes() const override { return changes_; }

  bool IsNull(int column) const override { return PQgetisnull(result_.get(), row_, column); }
  int64_t Int64(int column) const override {
    return std::strtoll(PQgetvalue(result_.get(), row_, column), nullptr, 10);
  }
  double Double(int column) const override {
    return std::strtod(PQgetvalue(result_.get(), row_, column), nullptr);
  }
  std::string Text(int column) const override {
    return std::string(PQgetvalue(result_.get(), row_, column),
                       PQgetlength(result_.get(), row_, column));
  }

 private:
  void Bind(int index, std::optional<std::string> value) {
    if (!error_.ok()) return;
    if (index < 1 || static_cast<size_t>(index) > values_.size()) {
      Fail(Failure::kOther,
           absl::StrCat(what_, ": no parameter ?", index, " (the SQL has ", values_.size(), ")"));
      return;
    }
    values_[index - 1] = std::move(value);
  }
  void Fail(Failure failure, std::string message) {
    failure_ = failure;
    error_ = FailureStatus(failure, std::move(message));
  }
  absl::Status Execute();

  PgConnection& connection_;
  const std::string what_;
  const std::string name_;  // the prepared statement's name on the server
  std::vector<std::optional<std::string>> values_;
  absl::Status error_;  // a failure to prepare or bind, returned by the next Step
  Failure failure_ = Failure::kNone;
  Result result_;  // null until executed; rows are read from it
  int row_ = -1;
  int64_t changes_ = 0;
};

class PgConnection : public Connection {
 public:
  PgConnection(PGconn* conn, std::string url) : conn_(conn), url_(std::move(url)) {}
  ~PgConnection() override { PQfinish(conn_); }

  std::unique_ptr<Statement> Prepare(absl::string_view what, absl::string_view sql) override;
  absl::Status Exec(absl::string_view what, absl::string_view sql) override {
    Result result(PQexec(conn_, std::string(sql).c_str()));
    Failure failure = Failure::kNone;
    return Check(result.get(), what, &failure);
  }
  bool healthy() const override { return !lost_ && PQstatus(conn_) == CONNECTION_OK; }
  bool StillConnected() override;
  absl::Status Begin(Isolation isolation) override {
    return Exec("begin transaction", isolation == Isolation::kRepeatableRead
                                         ? "BEGIN ISOLATION LEVEL REPEATABLE READ"
                                         : "BEGIN ISOLATION LEVEL READ COMMITTED");
  }
  absl::Status Commit() override;
  absl::Status Rollback() override { return Exec("rollback", "ROLLBACK"); }

  PGconn* conn() const { return conn_; }
  // OK when `result` succeeded; otherwise the error naming the database and `what`, its kind
  // in *failure (a lost connection also marks this connection unhealthy).
  absl::Status Check(const PGresult* result, absl::string_view what, Failure* failure);

 private:
  struct Prepared {
    std::string name;
    int parameters = 0;
  };
  PGconn* const conn_;
  const std::string url_;                               // masked
  std::unordered_map<std::string, Prepared> prepared_;  // by the SQL text as the caller wrote it
  bool lost_ = false;
};

absl::Status PgConnection::Check(const PGresult* result, absl::string_view what, Failure* failure) {
  const ExecStatusType status = result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    *failure = Failure::kNone;
    return absl::OkStatus();
  }
  const char* sqlstate = result == nullptr ? nullptr : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  *failure = sqlstate == nullptr || PQstatus(conn_) != CONNECTION_OK ? Failure::kConnectionLost
                                                                     : FailureOfSqlState(sqlstate);
  if (*failure == Failure::kConnectionLost) lost_ = true;
  std::string reason = Trimmed(result != nullptr ? PQresultErrorMessage(result) : nullptr);
  if (reason.empty()) reason = Trimmed(PQerrorMessage(conn_));
  return FailureStatus(*failure, absl::StrCat(url_, ": ", what, ": ",
                                              *failure == Failure::kConnectionLost
                                                  ? "the connection to the database is lost: "
                                                  : "",
                                              reason));
}

bool PgConnection::StillConnected() {
  if (!healthy()) return false;
  // Idle, the server sends nothing but notices and its goodbye: a readable socket means one of
  // those, or the connection's end. libpq reads what is there and says which.
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (fd.fd < 0 || ::poll(&fd, 1, 0) < 0) {
    lost_ = true;
    return false;
  }
  if ((fd.revents & (POLLIN | POLLHUP | POLLERR)) == 0) return true;
  if (PQconsumeInput(conn_) == 0 || PQstatus(conn_) != CONNECTION_OK) lost_ = true;
  return !lost_;
}

// COMMIT of a transaction a statement already failed succeeds with the tag ROLLBACK: that is
// not a commit, whatever the caller did with the failure.
absl::Status PgConnection::Commit() {
  Result result(PQexec(conn_, "COMMIT"));
  Failure failure = Failure::kNone;
  COHORT_RETURN_IF_ERROR(Check(result.get(), "commit", &failure));
  if (absl::string_view(PQcmdStatus(result.get())) == "ROLLBACK") {
    return FailureStatus(Failure::kSerialization,
                         absl::StrCat(url_,
                                      ": commit: the transaction had failed and was rolled "
                                      "back"));
  }
  return absl::OkStatus();
}

std::unique_ptr<Statement> PgConnection::Prepare(absl::string_view what, absl::string_view sql) {
  auto it = prepared_.find(std::string(sql));
  if (it == prepared_.end()) {
    Prepared p;
    const std::string text = PostgresPlaceholders(sql, &p.parameters);
    p.name = absl::StrCat("cohort_", prepared_.size());
    Result result(PQprepare(conn_, p.name.c_str(), text.c_str(), 0, nullptr));
    Failure failure = Failure::kNone;
    absl::Status status = Check(result.get(), absl::StrCat("preparing ", what), &failure);
    if (!status.ok()) {
      return std::make_unique<PgStatement>(*this, std::string(what), "", 0, status);
    }
    it = prepared_.emplace(std::string(sql), std::move(p)).first;
  }
  return std::make_unique<PgStatement>(*this, std::string(what), it->second.name,
                                       it->second.parameters, absl::OkStatus());
}

absl::Status PgStatement::Execute() {
  std::vector<const char*> values;
  values.reserve(values_.size());
  for (const std::optional<std::string>& v : values_) values.push_back(v ? v->c_str() : nullptr);
  result_.reset(PQexecPrepared(connection_.conn(), name_.c_str(), static_cast<int>(values.size()),
                               values.data(), nullptr, nullptr, 0));
  absl::Status status = connection_.Check(result_.get(), what_, &failure_);
  if (!status.ok()) {
    result_.reset();
    return status;
  }
  const char* changed = PQcmdTuples(result_.get());
  changes_ = changed != nullptr && *changed != '\0' ? std::strtoll(changed, nullptr, 10) : 0;
  row_ = -1;
  return absl::OkStatus();
}

absl::StatusOr<bool> PgStatement::Step() {
  if (!error_.ok()) return error_;
  if (result_ == nullptr) {
    absl::Status status = Execute();
    if (!status.ok()) return status;
  }
  if (row_ + 1 < PQntuples(result_.get())) {
    ++row_;
    return true;
  }
  result_.reset();  // done: the next Step runs the statement again
  row_ = -1;
  return false;
}

void IgnoreNotice(void*, const char*) {}

}  // namespace

std::string PostgresPlaceholders(absl::string_view sql, int* parameters) {
  *parameters = 0;
  std::string out;
  out.reserve(sql.size());
  for (size_t i = 0; i < sql.size();) {
    const char c = sql[i];
    const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
    size_t end = i + 1;  // what is copied unchanged: [i, end)
    if (c == '\'' || c == '"') {
      end = sql.find(c, i + 1);  // a doubled quote closes and reopens: the same text
      end = end == absl::string_view::npos ? sql.size() : end + 1;
    } else if (c == '-' && next == '-') {
      end = sql.find('\n', i);
      end = end == absl::string_view::npos ? sql.size() : end + 1;
    } else if (c == '/' && next == '*') {
      end = sql.find("*/", i + 2);
      end = end == absl::string_view::npos ? sql.size() : end + 2;
    } else if (c == '?' && absl::ascii_isdigit(static_cast<unsigned char>(next))) {
      size_t digits = i + 1;
      while (digits < sql.size() && absl::ascii_isdigit(static_cast<unsigned char>(sql[digits]))) {
        ++digits;
      }
      const int n = std::atoi(std::string(sql.substr(i + 1, digits - i - 1)).c_str());
      *parameters = std::max(*parameters, n);
      absl::StrAppend(&out, "$", n);
      i = digits;
      continue;
    }
    out.append(sql.data() + i, end - i);
    i = end;
  }
  return out;
}

Failure FailureOfSqlState(absl::string_view sqlstate) {
  if (sqlstate == "23505") return Failure::kUniqueViolation;
  if (sqlstate == "23503") return Failure::kForeignKeyViolation;
  if (sqlstate == "40001" || sqlstate == "40P01") return Failure::kSerialization;
  // Class 08 (connection exception); 57P01-57P03: the server shut down or is starting up.
  if (absl::StartsWith(sqlstate, "08") || sqlstate == "57P01" || sqlstate == "57P02" ||
      sqlstate == "57P03") {
    return Failure::kConnectionLost;
  }
  return Failure::kOther;
}

absl::StatusOr<std::unique_ptr<Connection>> ConnectPostgres(const std::string& url,
                                                            const PostgresOptions& options) {
  const std::string timeout =
      absl::StrCat(std::max<int64_t>(2, absl::ToInt64Seconds(options.connect_timeout)));
  const std::string server_options =
      absl::StrCat("-c statement_timeout=", absl::ToInt64Milliseconds(options.statement_timeout));
  std::vector<const char*> keys = {"dbname",           "connect_timeout",     "keepalives",
                                   "keepalives_idle",  "keepalives_interval", "keepalives_count",
                                   "application_name", "client_encoding",     "options"};
  std::vector<const char*> values = {
      url.c_str(), timeout.c_str(),       "1", "10", "5", "3", "cohort-master",
      "UTF8",      server_options.c_str()};
  if (!options.password.empty()) {
    keys.push_back("password");
    values.push_back(options.password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  const std::string masked = MaskDatabaseUrl(url);
  if (conn == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("connecting to ", masked, ": out of memory"));
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string reason = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to the database ", masked, ": ", reason));
  }
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  return std::unique_ptr<Connection>(new PgConnection(conn, masked));
}

}  // namespace cohort::master::sql
