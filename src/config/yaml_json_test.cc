#include "config/yaml_json.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config {
namespace {

using ::cohort::testing_support::StatusIs;
using ::testing::HasSubstr;

TEST(YamlJsonTest, ResolvesPlainScalarsWithTheCoreSchema) {
  auto tree = ParseYaml(
      "i: 12\nneg: -3\nf: 0.5\nexp: 1e-3\nt: true\nT: True\nn: ~\nempty:\ns: hello\n"
      "yes_is_string: yes\ninf: .inf\nversion: 1.2.3\n");
  ASSERT_OK(tree);
  EXPECT_TRUE((*tree)["i"].is_number_integer());
  EXPECT_EQ((*tree)["i"], 12);
  EXPECT_EQ((*tree)["neg"], -3);
  EXPECT_TRUE((*tree)["f"].is_number_float());
  EXPECT_DOUBLE_EQ((*tree)["exp"].get<double>(), 1e-3);
  EXPECT_EQ((*tree)["t"], true);
  EXPECT_EQ((*tree)["T"], true);
  EXPECT_TRUE((*tree)["n"].is_null());
  EXPECT_TRUE((*tree)["empty"].is_null());
  EXPECT_EQ((*tree)["s"], "hello");
  EXPECT_EQ((*tree)["yes_is_string"], "yes");
  EXPECT_TRUE(std::isinf((*tree)["inf"].get<double>()));
  EXPECT_EQ((*tree)["version"], "1.2.3");
}

TEST(YamlJsonTest, QuotedScalarsAreStrings) {
  auto tree = ParseYaml("a: \"12\"\nb: 'true'\n");
  ASSERT_OK(tree);
  EXPECT_EQ((*tree)["a"], "12");
  EXPECT_EQ((*tree)["b"], "true");
}

TEST(YamlJsonTest, KeepsKeyOrder) {
  auto tree = ParseYaml("zeta: 1\nalpha: 2\nmid: 3\n");
  ASSERT_OK(tree);
  std::vector<std::string> keys;
  for (const auto& [k, v] : tree->items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"zeta", "alpha", "mid"}));
}

TEST(YamlJsonTest, MalformedYamlNamesLineAndColumn) {
  auto tree = ParseYaml("a: 1\nb: [1, 2\n");
  ASSERT_THAT(tree, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(tree.status().message().find("line "), absl::string_view::npos);
}

TEST(YamlJsonTest, RejectsDuplicateKeys) {
  auto tree = ParseYaml("a: 1\na: 2\n");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("duplicate key 'a'"), absl::string_view::npos);
}

// Found by fuzz/yaml_json_fuzzer: such a tree made nlohmann's dump() throw (JSON is UTF-8).
TEST(YamlJsonTest, RefusesTextThatIsNotUtf8NamingWhere) {
  for (const char* yaml : {"a: 'sin\xe7le'\n", "a: [x, \xed\xa0\x80]\n", "\xff: 1\n",
                           "a: \xc0\x80\n", "a: \xf4\x90\x80\x80\n"}) {
    auto tree = ParseYaml(yaml);
    EXPECT_THAT(tree, StatusIs(absl::StatusCode::kInvalidArgument)) << yaml;
    EXPECT_THAT(tree.status().message(), HasSubstr("not UTF-8 text: an invalid byte at byte "))
        << yaml;
  }
  EXPECT_THAT(ParseYaml(std::string("e\0n\0t\0", 6)).status().message(),
              HasSubstr("not UTF-8 text: a NUL byte at byte 1"));
  EXPECT_THAT(ParseYaml("\xff\xfea\0:\0").status().message(),
              HasSubstr("not UTF-8 text: an invalid byte at byte 0"));
  auto tree = ParseYaml("name: caf\xc3\xa9 \xf0\x9f\x9a\x80\n\"\\u00e9\": 1\n");
  ASSERT_OK(tree);
  EXPECT_EQ((*tree)["name"], "caf\xc3\xa9 \xf0\x9f\x9a\x80");
}

// Found by fuzz/yaml_json_fuzzer: "\r" was written plain and read back as null.
TEST(YamlJsonTest, ToYamlQuotesStringsWithControlCharactersOrOuterBlanks) {
  for (const char* s : {"\r", "a\tb", " lead", "trail ", "x\x7f"}) {
    Json tree = Json::array({s});
    auto back = ParseYaml(ToYaml(tree));
    ASSERT_OK(back);
    EXPECT_EQ(*back, tree) << ToYaml(tree);
  }
  Json long_key = {{std::string(2000, 'k'), 1}};
  auto back = ParseYaml(ToYaml(long_key));
  ASSERT_OK(back);
  EXPECT_EQ(*back, long_key);
}

TEST(YamlJsonTest, RefusesACyclicAliasInsteadOfExpandingItForever) {
  auto tree = ParseYaml("a: &x [1, *x]");
  EXPECT_THAT(tree, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1")));
  EXPECT_THAT(tree.status().message(), HasSubstr("cyclic alias"));
}

TEST(YamlJsonTest, ExpandsAnAliasUsedBesideItsAnchor) {
  auto tree = ParseYaml("a: &x [1, 2]\nb: [*x, *x]\n");
  ASSERT_OK(tree);
  EXPECT_EQ((*tree)["b"][1][1], 2);
}

// Ten levels of ten aliases each: 10^10 nodes once expanded, in under 400 bytes.
std::string BillionLaughs() {
  std::string text = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += (j == 0 ? "" : ",") + prev;
    text += "]\n";
  }
  return text;
}

TEST(YamlJsonTest, RefusesABillionLaughsDocumentQuicklyNamingTheLimit) {
  const auto start = std::chrono::steady_clock::now();
  auto tree = ParseYaml(BillionLaughs());
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(tree, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("aliases expand to more than 1000000 nodes")));
  EXPECT_LT(elapsed, std::chrono::seconds(1));
}

TEST(YamlJsonTest, RefusesAliasesRepeatingALongStringPastTheTextLimit) {
  std::string text = "s: &s " + std::string(100000, 'x') + "\nl: &l [*s";
  for (int i = 0; i < 99; ++i) text += ", *s";
  text += "]\nm: &m [*l";
  for (int i = 0; i < 99; ++i) text += ", *l";
  text += "]\n";
  auto tree = ParseYaml(text);
  EXPECT_THAT(tree, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("aliases expand to more than 64 MiB of text")));
}

TEST(YamlJsonTest, AcceptsNestingAtTheDepthLimit) {
  const std::string text = std::string(kMaxYamlDepth, '[') + std::string(kMaxYamlDepth, ']');
  EXPECT_OK(ParseYaml(text));
}

TEST(YamlJsonTest, RefusesNestingOneLevelPastTheDepthLimit) {
  const std::string text =
      "a:\n  b: " + std::string(kMaxYamlDepth - 1, '[') + std::string(kMaxYamlDepth - 1, ']');
  auto tree = ParseYaml(text);
  EXPECT_THAT(tree, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 2")));
  EXPECT_THAT(tree.status().message(), HasSubstr("the YAML nests deeper than 128 levels"));
}

TEST(YamlJsonTest, RefusesAHundredThousandOpenBracketsWithoutCrashing) {
  for (const std::string& text : {std::string(100000, '['), std::string(100000, '{')}) {
    auto tree = ParseYaml(text);
    EXPECT_THAT(tree.status().message(), HasSubstr("the YAML nests deeper than 128 levels"));
  }
  std::string dashes;
  for (int i = 0; i < 100000; ++i) dashes += "- ";
  EXPECT_THAT(ParseYaml(dashes + "1\n").status().message(), HasSubstr("nests deeper than 128"));
}

TEST(YamlJsonTest, RefusesTextLongerThanTheLimitNamingIt) {
  auto tree = ParseYaml("a: " + std::string(kMaxYamlBytes, 'x'));
  EXPECT_THAT(tree, StatusIs(absl::StatusCode::kInvalidArgument,
                             HasSubstr("more than the limit of 1048576 bytes")));
}

// A file under the test's temporary directory holding `text`.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/yaml_json_test_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(YamlJsonTest, ReadYamlTextNamesThePathOfEveryFileItCannotTake) {
  const std::string missing = ::testing::TempDir() + "/yaml_json_test_no_such.yaml";
  absl::StatusOr<std::string> r = ReadYamlText(missing);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kNotFound, HasSubstr(missing + " does not exist")));
  // A directory opens like a file on Linux and reads as nothing; it was "the config is empty".
  r = ReadYamlText(::testing::TempDir());
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(r.status().message(), HasSubstr(": is a directory; expected a YAML file"));
  const std::string big = WriteFile("big.yaml", "a: " + std::string(kMaxYamlBytes, 'x'));
  r = ReadYamlText(big);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr(big + ": the file is longer than the limit of 1048576 bytes")));
  const std::string ok = WriteFile("ok.yaml", "a: 1\n");
  EXPECT_EQ(ReadYamlText(ok).value_or(""), "a: 1\n");
}

TEST(YamlJsonTest, LoadYamlFileNamesThePathInAParseError) {
  const std::string path = WriteFile("broken.yaml", "a: [1\n");
  absl::StatusOr<Json> tree = LoadYamlFile(path);
  EXPECT_THAT(
      tree, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(path + ": line 2, column 1: ")));
  EXPECT_EQ(LoadYamlFile(WriteFile("fine.yaml", "a: 1\n")).value_or(Json()), Json({{"a", 1}}));
}

TEST(YamlJsonTest, ToYamlRoundTripsTypes) {
  Json tree = {{"int", 3},
               {"float", 1.0},
               {"small", 1e-4},
               {"str_num", "12"},
               {"str_bool", "true"},
               {"empty", ""},
               {"bool", false},
               {"null", nullptr},
               {"list", {1, "a"}},
               {"map", {{"k", "v"}}},
               {"empty_list", Json::array()},
               {"empty_map", Json::object()}};
  std::string yaml = ToYaml(tree);
  auto back = ParseYaml(yaml);
  ASSERT_OK(back) << "\n" << yaml;
  EXPECT_EQ(*back, tree) << yaml;
  EXPECT_TRUE((*back)["float"].is_number_float()) << yaml;
}

TEST(YamlJsonTest, DescribesValuesForErrors) {
  EXPECT_EQ(DescribeValue(Json("two")), "string \"two\"");
  EXPECT_EQ(DescribeValue(Json(3)), "integer 3");
  EXPECT_EQ(DescribeValue(Json(1.5)), "float 1.5");
  EXPECT_EQ(DescribeValue(Json(true)), "boolean true");
  EXPECT_EQ(DescribeValue(Json::array()), "list");
  EXPECT_EQ(DescribeValue(Json::object()), "map");
  EXPECT_EQ(DescribeValue(Json(nullptr)), "null");
}

}  // namespace
}  // namespace cohort::config
