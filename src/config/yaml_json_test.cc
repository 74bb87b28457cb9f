#include "config/yaml_json.h"

#include <cmath>

#include "gtest/gtest.h"

namespace cohort::config {
namespace {

TEST(YamlJsonTest, ResolvesPlainScalarsWithTheCoreSchema) {
  auto tree = ParseYaml(
      "i: 12\nneg: -3\nf: 0.5\nexp: 1e-3\nt: true\nT: True\nn: ~\nempty:\ns: hello\n"
      "yes_is_string: yes\ninf: .inf\nversion: 1.2.3\n");
  ASSERT_TRUE(tree.ok()) << tree.status();
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
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ((*tree)["a"], "12");
  EXPECT_EQ((*tree)["b"], "true");
}

TEST(YamlJsonTest, KeepsKeyOrder) {
  auto tree = ParseYaml("zeta: 1\nalpha: 2\nmid: 3\n");
  ASSERT_TRUE(tree.ok());
  std::vector<std::string> keys;
  for (const auto& [k, v] : tree->items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"zeta", "alpha", "mid"}));
}

TEST(YamlJsonTest, MalformedYamlNamesLineAndColumn) {
  auto tree = ParseYaml("a: 1\nb: [1, 2\n");
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tree.status().message().find("line "), absl::string_view::npos);
}

TEST(YamlJsonTest, RejectsDuplicateKeys) {
  auto tree = ParseYaml("a: 1\na: 2\n");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("duplicate key 'a'"), absl::string_view::npos);
}

TEST(YamlJsonTest, ToYamlRoundTripsTypes) {
  Json tree = {{"int", 3},      {"float", 1.0},   {"small", 1e-4}, {"str_num", "12"},
               {"str_bool", "true"}, {"empty", ""}, {"bool", false}, {"null", nullptr},
               {"list", {1, "a"}},   {"map", {{"k", "v"}}}, {"empty_list", Json::array()},
               {"empty_map", Json::object()}};
  std::string yaml = ToYaml(tree);
  auto back = ParseYaml(yaml);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
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
