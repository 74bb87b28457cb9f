#include "wire/internal/field_reader.h"

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire::internal {
namespace {

using ::testing::HasSubstr;

TEST(FieldReaderTest, ReadsRequiredAndOptionalFieldsAndIgnoresUnknownOnes) {
  const Json json = {{"name", "a"}, {"count", 3}, {"ratio", 0.5}, {"flag", true}, {"extra", 1}};
  FieldReader r(json, "thing");
  std::string name;
  int count = 0;
  double ratio = 0;
  bool flag = false;
  std::string missing = "default";
  r.Required("name", &name);
  r.Required("count", &count, {.min = 1});
  r.Required("ratio", &ratio);
  r.Required("flag", &flag);
  r.Optional("absent", &missing);
  ASSERT_OK(r.status());
  EXPECT_EQ(name, "a");
  EXPECT_EQ(count, 3);
  EXPECT_EQ(ratio, 0.5);
  EXPECT_TRUE(flag);
  EXPECT_EQ(missing, "default");
}

TEST(FieldReaderTest, AMissingRequiredFieldIsNamedWithTheContext) {
  const Json r_json = Json::object();
  FieldReader r(r_json, "report line 3");
  std::string kind;
  r.Required("kind", &kind);
  EXPECT_EQ(r.status().message(), "report line 3: missing \"kind\"");
}

TEST(FieldReaderTest, AWrongTypeNamesTheFieldTheRuleAndTheValue) {
  const Json r_json = Json{{"slots", "two"}};
  FieldReader r(r_json, "start action");
  int slots = 0;
  r.Required("slots", &slots, {.min = 1});
  EXPECT_EQ(r.status().message(), "start action: \"slots\" must be an integer >= 1, got \"two\"");
}

TEST(FieldReaderTest, AnIntegerOutOfRangeIsAnError) {
  const Json r_json = Json{{"port", 70000}};
  FieldReader r(r_json, "agent");
  int port = 0;
  r.Required("port", &port, {.min = 1, .max = 65535});
  EXPECT_THAT(r.status().message(), HasSubstr("\"port\" must be an integer in [1, 65535]"));
}

TEST(FieldReaderTest, AnIntegralDoubleIsAnIntegerButAFractionIsNot) {
  int64_t v = 0;
  const Json whole_json = Json{{"n", 100.0}};
  FieldReader whole(whole_json, "x");
  whole.Required("n", &v);
  EXPECT_OK(whole.status());
  EXPECT_EQ(v, 100);
  const Json fraction_json = Json{{"n", 1.5}};
  FieldReader fraction(fraction_json, "x");
  fraction.Required("n", &v);
  EXPECT_FALSE(fraction.ok());
}

TEST(FieldReaderTest, TheFirstErrorWins) {
  const Json r_json = Json{{"b", 1}};
  FieldReader r(r_json, "x");
  std::string a, b;
  r.Required("a", &a);
  r.Required("b", &b);
  EXPECT_THAT(r.status().message(), HasSubstr("missing \"a\""));
}

TEST(FieldReaderTest, ANonObjectIsRefused) {
  const Json r_json = Json::array();
  FieldReader r(r_json, "exit report");
  EXPECT_THAT(r.status().message(), HasSubstr("exit report: must be a JSON object, got []"));
}

TEST(FieldReaderTest, LongStringsAndArraysAreRefused) {
  const Json r_json = Json{{"s", std::string(11, 'x')}};
  FieldReader r(r_json, "x");
  std::string s;
  r.Required("s", &s, 10);
  EXPECT_THAT(r.status().message(), HasSubstr("\"s\" must be at most 10 bytes, got 11"));
  const Json a_json = Json{{"list", {"a", "b", "c"}}};
  FieldReader a(a_json, "x");
  std::vector<std::string> list;
  a.Array("list", &list, 2, FieldReader::kRequired, ParseStringElement);
  EXPECT_THAT(a.status().message(), HasSubstr("\"list\" must have at most 2 elements, got 3"));
}

TEST(FieldReaderTest, ArrayElementErrorsNameTheIndex) {
  const Json r_json = Json{{"ops", {1, "x"}}};
  FieldReader r(r_json, "start action");
  std::vector<int64_t> ops;
  r.Array("ops", &ops, 10, FieldReader::kRequired, ParsePositiveIntElement);
  EXPECT_THAT(r.status().message(), HasSubstr("start action: \"ops\"[1]: must be an integer"));
}

TEST(FieldReaderTest, NullIsNaNForNullableNumbersAndMissingForOptionalOnes) {
  const Json r_json = Json{{"m", nullptr}, {"s", nullptr}};
  FieldReader r(r_json, "x");
  double m = 1;
  std::string s = "kept";
  r.Nullable("m", &m);
  r.Optional("s", &s);
  EXPECT_OK(r.status());
  EXPECT_TRUE(std::isnan(m));
  EXPECT_EQ(s, "kept");
}

}  // namespace
}  // namespace cohort::wire::internal
