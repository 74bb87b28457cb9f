// ParseDatabaseUrl's grammar and refusals, MaskDatabaseUrl, and OpenDatabase on a real SQLite
// file.

#include "master/db/open_database.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/db/testing/db_test_helpers.h"

namespace cohort::master {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// The path a URL names (it must parse, as SQLite).
std::string SqlitePath(const std::string& url) {
  absl::StatusOr<DatabaseUrl> parsed = ParseDatabaseUrl(url);
  EXPECT_TRUE(parsed.ok()) << url << ": " << parsed.status();
  if (!parsed.ok()) return "<refused>";
  EXPECT_EQ(parsed->backend, DatabaseUrl::Backend::kSqlite) << url;
  return parsed->path;
}

TEST(ParseDatabaseUrlTest, SqliteUrlsNameAFileRelativeOrAbsolute) {
  EXPECT_EQ(SqlitePath("sqlite:master.db"), "master.db");
  EXPECT_EQ(SqlitePath("sqlite:data/master.db"), "data/master.db");
  EXPECT_EQ(SqlitePath("sqlite:../master.db"), "../master.db");
  EXPECT_EQ(SqlitePath("sqlite:/var/lib/cohort/master.db"), "/var/lib/cohort/master.db");
  EXPECT_EQ(SqlitePath("sqlite:///var/lib/cohort/master.db"), "/var/lib/cohort/master.db");
  EXPECT_EQ(SqlitePath("SQLite:master.db"), "master.db") << "a scheme is case-insensitive";
  EXPECT_EQ(SqlitePath("sqlite::memory:"), ":memory:");
  EXPECT_EQ(SqlitePath("sqlite:a:b.db"), "a:b.db") << "after the scheme, taken as written";
  EXPECT_EQ(SqlitePath("sqlite:my%20file.db"), "my%20file.db") << "no %-decoding";
}

TEST(ParseDatabaseUrlTest, APathWithoutASchemeIsASqliteFileAsBefore) {
  EXPECT_EQ(SqlitePath("master.db"), "master.db");
  EXPECT_EQ(SqlitePath("/var/lib/cohort/master.db"), "/var/lib/cohort/master.db");
  EXPECT_EQ(SqlitePath("./a:b.db"), "./a:b.db");
  EXPECT_EQ(SqlitePath("data/a:b.db"), "data/a:b.db") << "a '/' before the colon: no scheme";
  EXPECT_EQ(SqlitePath("1backup:old.db"), "1backup:old.db") << "a scheme starts with a letter";
  EXPECT_EQ(SqlitePath(":memory:"), ":memory:");
}

TEST(ParseDatabaseUrlTest, RefusesWhatNamesNoLocalFileSayingWhatToWrite) {
  EXPECT_THAT(ParseDatabaseUrl("").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sqlite:PATH")));
  EXPECT_THAT(ParseDatabaseUrl("sqlite:").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("names no file"), HasSubstr("sqlite:PATH"))));
  EXPECT_THAT(ParseDatabaseUrl("sqlite://").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sqlite:PATH")));
  EXPECT_THAT(ParseDatabaseUrl("sqlite://data/master.db").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("sqlite://data/master.db"), HasSubstr("local file"),
                             HasSubstr("sqlite:PATH"), HasSubstr("sqlite:///ABSOLUTE/PATH"))));
  EXPECT_THAT(ParseDatabaseUrl("sqlite:master.db?mode=ro").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("takes no options")));
}

TEST(ParseDatabaseUrlTest, AcceptsPostgresqlUrlsAsWritten) {
  for (const char* url : {"postgresql://cohort@db.example:5432/cohort?sslmode=verify-full",
                          "postgres://db.example/cohort", "POSTGRESQL://cohort@[::1]:5432/c"}) {
    ASSERT_OK_AND_ASSIGN(DatabaseUrl parsed, ParseDatabaseUrl(url));
    EXPECT_EQ(parsed.backend, DatabaseUrl::Backend::kPostgres);
    EXPECT_EQ(parsed.path, url);
  }
}

TEST(ParseDatabaseUrlTest, RefusesAPostgresqlPasswordOnTheCommandLineWithoutPrintingIt) {
  for (const char* url : {"postgres://alice:s3cret@db.example:5432/cohort",
                          "postgresql://alice:s3cret@db.example/cohort?sslmode=require",
                          "POSTGRES://alice:s3cret@db.example/cohort",
                          "postgresql://db.example/cohort?password=s3cret"}) {
    const absl::Status status = ParseDatabaseUrl(url).status();
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                                 AllOf(HasSubstr("***"), HasSubstr("PGPASSWORD"),
                                       HasSubstr("--db-password-file"), Not(HasSubstr("s3cret")))))
        << url;
  }
}

TEST(ParseDatabaseUrlTest, RefusesAPostgresqlUrlWithoutAHostOrADatabase) {
  EXPECT_THAT(
      ParseDatabaseUrl("postgresql://cohort@db.example").status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("names no database"), HasSubstr("USER@HOST:PORT/DATABASE"))));
  EXPECT_THAT(ParseDatabaseUrl("postgresql:///cohort").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names no host")));
}

TEST(ParseDatabaseUrlTest, RefusesAnyOtherSchemeNamingItAndTheAcceptedForms) {
  const absl::Status status = ParseDatabaseUrl("mysql://root:hunter2@db/cohort").status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               AllOf(HasSubstr("unknown database scheme 'mysql'"),
                                     HasSubstr("sqlite:PATH"), HasSubstr("sqlite:///ABSOLUTE/PATH"),
                                     HasSubstr("file path"), Not(HasSubstr("hunter2")))));
  // A relative file whose name has a colon is told how to write itself.
  EXPECT_THAT(ParseDatabaseUrl("backup:2024.db").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'backup'"), HasSubstr("./NAME"))));
  EXPECT_THAT(ParseDatabaseUrl("file:master.db").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'file'")));
}

TEST(MaskDatabaseUrlTest, MasksPasswordsAndKeepsTheRest) {
  EXPECT_EQ(MaskDatabaseUrl("postgres://alice:s3cret@db.example:5432/cohort"),
            "postgres://alice:***@db.example:5432/cohort");
  EXPECT_EQ(MaskDatabaseUrl("postgres://alice:p@ss@db.example/cohort"),
            "postgres://alice:***@db.example/cohort")
      << "an '@' in the password: masked up to the last one";
  EXPECT_EQ(MaskDatabaseUrl("postgres://alice@db.example/cohort"),
            "postgres://alice@db.example/cohort");
  EXPECT_EQ(MaskDatabaseUrl("postgres://db.example:5432/cohort"),
            "postgres://db.example:5432/cohort");
  EXPECT_EQ(MaskDatabaseUrl("postgres://db.example/cohort?sslmode=require&password=s3cret&x=1"),
            "postgres://db.example/cohort?sslmode=require&password=***&x=1");
  EXPECT_EQ(MaskDatabaseUrl("host=db password=s3cret dbname=cohort"),
            "host=db password=*** dbname=cohort");
  EXPECT_EQ(MaskDatabaseUrl("host=db PASSWORD = 's3 \\' cret' dbname=cohort"),
            "host=db PASSWORD = *** dbname=cohort");
  EXPECT_EQ(MaskDatabaseUrl("sqlite:/var/lib/cohort/master.db"),
            "sqlite:/var/lib/cohort/master.db");
  EXPECT_EQ(MaskDatabaseUrl("/var/lib/cohort/master.db"), "/var/lib/cohort/master.db");
  EXPECT_EQ(MaskDatabaseUrl(""), "");
}

class OpenDatabaseTest : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string path_ = dir_.path() + "/master.db";
};

TEST_F(OpenDatabaseTest, OpensASqliteFileAndKeepsItsRowsAcrossReopening) {
  ASSERT_OK_AND_ASSIGN(DatabaseUrl url, ParseDatabaseUrl("sqlite:" + path_));
  int64_t id = 0;
  {
    ASSERT_OK_AND_ASSIGN(OpenedDatabase opened, OpenDatabase(url));
    ASSERT_NE(opened.database, nullptr);
    EXPECT_EQ(opened.integrity_check, IntegrityCheck::kSkipped) << "a new database";
    ASSERT_OK_AND_ASSIGN(id, opened.database->InsertExperiment(MakeExperiment("kept")));
  }
  ASSERT_TRUE(fs::exists(path_));
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // The same file by its plain path, as --db FILE names it; the check's limit is passed on.
  ASSERT_OK_AND_ASSIGN(DatabaseUrl plain, ParseDatabaseUrl(path_));
  {
    ASSERT_OK_AND_ASSIGN(OpenedDatabase opened, OpenDatabase(plain));
    EXPECT_EQ(opened.integrity_check, IntegrityCheck::kPassed);
    ASSERT_OK_AND_ASSIGN(ExperimentRow row, opened.database->GetExperiment(id));
    EXPECT_EQ(row.name, "kept");
  }
  ASSERT_OK_AND_ASSIGN(OpenedDatabase unchecked,
                       OpenDatabase(plain, {.check_time_limit = absl::ZeroDuration()}));
  EXPECT_EQ(unchecked.integrity_check, IntegrityCheck::kSkipped);
}

// A file an older master made readable by others is made the master's alone when opened.
TEST_F(OpenDatabaseTest, MakesAnExistingFilePrivate) {
  std::ofstream(path_).close();  // empty: a new database
  fs::permissions(path_, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::others_read);
  ASSERT_OK(OpenDatabase({DatabaseUrl::Backend::kSqlite, path_}).status());
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(OpenDatabaseTest, PassesOnSqlitesRefusalOfAForeignFile) {
  std::ofstream(path_) << "not a database\n";
  EXPECT_THAT(OpenDatabase({DatabaseUrl::Backend::kSqlite, path_}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(path_)));
}

TEST_F(OpenDatabaseTest, OpensAPrivateInMemoryDatabase) {
  ASSERT_OK_AND_ASSIGN(DatabaseUrl url, ParseDatabaseUrl("sqlite::memory:"));
  ASSERT_OK_AND_ASSIGN(OpenedDatabase opened, OpenDatabase(url));
  ASSERT_OK(opened.database->InsertExperiment(MakeExperiment("gone")).status());
  EXPECT_FALSE(fs::exists(":memory:")) << "no file of that name";
}

}  // namespace
}  // namespace cohort::master
