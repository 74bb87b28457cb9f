#include "master/db/sqlite_to_postgres.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cohort/status.h"
#include "common/utf8_text.h"
#include "master/db/open_database.h"
#include "master/db/sql/driver.h"
#include "master/db/sql/postgres_driver.h"
#include "master/db/sql/sqlite_driver.h"
#include "master/db/sqlite_database.h"

namespace cohort::master {
namespace {

// Cohort's tables, each after the tables it refers to; identity: the column PostgreSQL numbers
// (empty: none).
struct Table {
  const char* name;
  const char* identity;
};
constexpr Table kTables[] = {
    {"experiments", "id"},
    {"trials", "id"},
    {"metrics", "id"},
    {"checkpoints", ""},
    {"logs", "seq"},
    {"templates", ""},
    {"agents", ""},
    {"users", "id"},
    {"tokens", ""},
    {"series", "id"},
    {"series_points", "id"},
    {"step_profiles", "id"},
    {"step_timings", ""},
    {"allocations", ""},
    {"log_policy_matches", ""},
    {"log_stats", ""},
    {"models", "id"},
    {"model_versions", "id"},
    {"webhooks", "id"},
    {"webhook_deliveries", "id"},
};

enum class Type { kInteger, kReal, kText };

struct Column {
  std::string name;
  Type type;
};

// The columns of `table` in the SQLite database, with the type each is declared.
absl::StatusOr<std::vector<Column>> ColumnsOf(sql::Connection& sqlite, const std::string& table) {
  sql::Query s(sqlite, "read the columns",
               "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid");
  s.BindText(1, table);
  std::vector<Column> columns;
  for (;;) {
    COHORT_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    const std::string type = s.Text(1);
    columns.push_back({s.Text(0), type == "INTEGER" ? Type::kInteger
                                  : type == "REAL"  ? Type::kReal
                                                    : Type::kText});
  }
  if (columns.empty()) return absl::DataLossError(absl::StrCat("table ", table, " is missing"));
  return columns;
}

absl::StatusOr<int64_t> CountRows(sql::Connection& c, const std::string& table) {
  sql::Query s(c, "count rows", absl::StrCat("SELECT COUNT(*) FROM ", table));
  COHORT_ASSIGN_OR_RETURN(bool row, s.Step());
  return row ? s.Int64(0) : 0;
}

// An INSERT of `rows` rows of `columns` into `table`: ?1.. numbered row by row.
std::string InsertSql(const std::string& table, const std::vector<Column>& columns, size_t rows) {
  std::vector<std::string> names, tuples;
  for (const Column& c : columns) names.push_back(c.name);
  int n = 0;
  for (size_t r = 0; r < rows; ++r) {
    std::vector<std::string> params;
    for (size_t i = 0; i < columns.size(); ++i) params.push_back(absl::StrCat("?", ++n));
    tuples.push_back(absl::StrCat("(", absl::StrJoin(params, ", "), ")"));
  }
  return absl::StrCat("INSERT INTO ", table, " (", absl::StrJoin(names, ", "), ") VALUES ",
                      absl::StrJoin(tuples, ", "));
}

// Copies one table, `batch` rows per INSERT; the target's columns that SQLite lacks (seq)
// number themselves in the order the rows arrive, which is SQLite's insertion order.
class TableCopy {
 public:
  TableCopy(sql::Connection& sqlite, sql::Connection& postgres, std::string table,
            std::vector<Column> columns, CopyReport& report)
      : sqlite_(sqlite),
        postgres_(postgres),
        table_(std::move(table)),
        columns_(std::move(columns)),
        report_(report),
        batch_(std::max<size_t>(1, std::min<size_t>(500, 30000 / columns_.size()))),
        batch_sql_(InsertSql(table_, columns_, batch_)) {}

  absl::Status Run(int64_t total, const CopyProgress& progress) {
    std::vector<std::string> names;
    for (const Column& c : columns_) names.push_back(c.name);
    sql::Query read(
        sqlite_, absl::StrCat("read ", table_),
        absl::StrCat("SELECT ", absl::StrJoin(names, ", "), " FROM ", table_, " ORDER BY rowid"));
    int64_t done = 0;
    for (bool more = true; more;) {
      COHORT_ASSIGN_OR_RETURN(more, read.Step());
      if (more) Keep(read);
      const size_t rows = pending_.size() / columns_.size();
      if (rows == batch_ || (!more && rows > 0)) {
        COHORT_RETURN_IF_ERROR(Write(rows));
        done += static_cast<int64_t>(rows);
        if (progress) progress(table_, done, total);
      }
    }
    report_.rows += done;
    if (progress && done == 0) progress(table_, 0, total);
    return absl::OkStatus();
  }

 private:
  struct Value {
    bool null = false;
    Type type = Type::kText;
    int64_t integer = 0;
    double real = 0;
    std::string text;
  };

  // Keeps the current row of `read` for the next Write, its text made storable.
  void Keep(const sql::Query& read) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      const int c = static_cast<int>(i);
      Value v;
      v.type = columns_[i].type;
      v.null = read.IsNull(c);
      if (!v.null && v.type == Type::kInteger) v.integer = read.Int64(c);
      if (!v.null && v.type == Type::kReal) v.real = read.Double(c);
      if (!v.null && v.type == Type::kText) {
        v.text = read.Text(c);
        if (!IsCleanUtf8(v.text)) {
          v.text = CleanUtf8(v.text);
          ++report_.cleaned_texts;
        }
      }
      pending_.push_back(std::move(v));
    }
  }

  // Inserts the `rows` rows kept: a full batch with the statement made once, the last with one
  // of its own size.
  absl::Status Write(size_t rows) {
    sql::Query insert(postgres_, absl::StrCat("copy ", table_),
                      rows == batch_ ? batch_sql_ : InsertSql(table_, columns_, rows));
    for (size_t i = 0; i < pending_.size(); ++i) {
      const Value& v = pending_[i];
      const int index = static_cast<int>(i) + 1;
      if (v.null) {
        insert.BindNull(index);
      } else if (v.type == Type::kInteger) {
        insert.BindInt64(index, v.integer);
      } else if (v.type == Type::kReal) {
        insert.BindDouble(index, v.real);
      } else {
        insert.BindText(index, v.text);
      }
    }
    pending_.clear();
    return insert.Run();
  }

  sql::Connection& sqlite_;
  sql::Connection& postgres_;
  const std::string table_;
  const std::vector<Column> columns_;
  CopyReport& report_;
  const size_t batch_;
  const std::string batch_sql_;
  std::vector<Value> pending_;  // the rows read and not yet written, column by column
};

// Refuses a target that holds any row.
absl::Status CheckEmpty(sql::Connection& postgres, const std::string& url) {
  for (const Table& table : kTables) {
    COHORT_ASSIGN_OR_RETURN(int64_t rows, CountRows(postgres, table.name));
    if (rows > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          MaskDatabaseUrl(url), ": table ", table.name, " holds ", rows,
          " rows; --migrate-from copies into an empty database only (make a new one: createdb "
          "--owner USER DATABASE)"));
    }
  }
  return absl::OkStatus();
}

// Each identity continues after the larger of the table's largest id and SQLite's
// AUTOINCREMENT counter for it (ids of deleted rows are not handed out again).
absl::Status ContinueIdentities(sql::Connection& sqlite, sql::Connection& postgres) {
  std::map<std::string, int64_t> counters;
  {
    using Counter = std::pair<std::string, int64_t>;
    sql::Query s(sqlite, "read the AUTOINCREMENT counters",
                 "SELECT name, seq FROM sqlite_sequence");
    COHORT_ASSIGN_OR_RETURN(std::vector<Counter> rows,
                            sql::ReadAll<Counter>(s, [](const sql::Query& r) {
                              return Counter(r.Text(0), r.Int64(1));
                            }));
    counters.insert(rows.begin(), rows.end());
  }
  for (const Table& table : kTables) {
    if (*table.identity == '\0') continue;
    sql::Query max(postgres, "read the largest id",
                   absl::StrCat("SELECT COALESCE(MAX(", table.identity, "), 0) FROM ", table.name));
    COHORT_ASSIGN_OR_RETURN(bool row, max.Step());
    const int64_t last = std::max(row ? max.Int64(0) : 0, counters[table.name]);
    if (last == 0) continue;
    sql::Query set(postgres, "continue the identity",
                   "SELECT setval(pg_get_serial_sequence(?1, ?2), ?3, true)");
    set.BindText(1, table.name);
    set.BindText(2, table.identity);
    set.BindInt64(3, last);
    COHORT_RETURN_IF_ERROR(set.Step().status());
  }
  return absl::OkStatus();
}

// Every table's count on both sides.
absl::Status CompareCounts(sql::Connection& sqlite, sql::Connection& postgres) {
  for (const Table& table : kTables) {
    COHORT_ASSIGN_OR_RETURN(int64_t from, CountRows(sqlite, table.name));
    COHORT_ASSIGN_OR_RETURN(int64_t to, CountRows(postgres, table.name));
    if (from != to) {
      return absl::DataLossError(absl::StrCat("table ", table.name, ": ", from, " rows in SQLite, ",
                                              to, " in PostgreSQL"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CopyReport> CopySqliteToPostgres(const std::string& sqlite_path,
                                                const std::string& url,
                                                const PostgresDatabaseOptions& options,
                                                const CopyProgress& progress) {
  // Both opened as a master would: the source checked and brought up to date, the target's
  // schema made.
  COHORT_RETURN_IF_ERROR(SqliteDatabase::Open(sqlite_path).status());
  COHORT_RETURN_IF_ERROR(PostgresDatabase::Open(url, options).status());
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Connection> sqlite, sql::OpenSqlite(sqlite_path));
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Connection> postgres,
                          sql::ConnectPostgres(url, options.connection));
  // The source's write lock for the whole copy: one snapshot, nothing written meanwhile.
  sql::Transaction reading(*sqlite);
  COHORT_RETURN_IF_ERROR(reading.status());
  CopyReport report;
  sql::Transaction writing(*postgres);
  COHORT_RETURN_IF_ERROR(writing.status());
  COHORT_RETURN_IF_ERROR(CheckEmpty(*postgres, url));
  for (const Table& table : kTables) {
    COHORT_ASSIGN_OR_RETURN(std::vector<Column> columns, ColumnsOf(*sqlite, table.name));
    COHORT_ASSIGN_OR_RETURN(int64_t total, CountRows(*sqlite, table.name));
    TableCopy copy(*sqlite, *postgres, table.name, std::move(columns), report);
    COHORT_RETURN_IF_ERROR(Annotate(copy.Run(total, progress), table.name));
    ++report.tables;
  }
  COHORT_RETURN_IF_ERROR(ContinueIdentities(*sqlite, *postgres));
  COHORT_RETURN_IF_ERROR(writing.Commit());
  COHORT_RETURN_IF_ERROR(CompareCounts(*sqlite, *postgres));
  return report;
}

}  // namespace cohort::master
