#include "config/internal/object_reader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::config::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Json Yaml(const std::string& text) { return ParseYaml(text).value(); }

TEST(ObjectReaderTest, IgnoredFieldsAreCheckedKeptAndValidOnesWarnedAboutOnce) {
  const Json node = Yaml("{shm_size: 4G, label: 3, pool: ''}");
  ErrorList errors;
  Json effective;
  ObjectReader r(node, "resources", &errors, &effective);
  EXPECT_EQ(r.Ignored("shm_size", "no container", [&] { return r.String("shm_size"); }), "4G");
  r.Ignored("label", "no labels", [&] { return r.String("label"); });
  r.Ignored("pool", "one pool", [&] { return r.String("pool"); });
  r.Ignored("absent", "never given", [&] { return r.String("absent"); });
  r.Finish();
  EXPECT_THAT(errors.warnings(), ElementsAre("resources.shm_size: ignored: no container"));
  EXPECT_THAT(errors.errors(), ElementsAre("resources.label: expected a string, got integer 3"));
  EXPECT_EQ(effective, Yaml("{shm_size: 4G, pool: ''}"));
}

TEST(ObjectReaderTest, AValueThatAsksForNothingOrIsTheDefaultIsNotWarnedAbout) {
  const Json node = Yaml("{a: false, b: [], c: {}, d: ~, e: 1, f: 2}");
  ErrorList errors;
  ObjectReader r(node, "", &errors, nullptr);
  for (const char* key : {"a", "b", "c", "d"}) r.Warn(key, "why");
  r.Warn("e", "why", Json(1));
  r.Warn("f", "why", Json(1));
  EXPECT_THAT(errors.warnings(), ElementsAre("f: ignored: why"));
}

TEST(ObjectReaderTest, ListsOfMapsAndIntegersNameTheItemAtFault) {
  const Json node = Yaml("{mounts: [{p: 1}, 3], rungs: [1, x, -1]}");
  ErrorList errors;
  Json effective;
  ObjectReader r(node, "s", &errors, &effective);
  std::vector<std::string> paths;
  r.ForEachItem("mounts", [&](const Json& item, const std::string& path, Json* out) {
    paths.push_back(path);
    ObjectReader m(item, path, &errors, out);
    m.Int("p");
    m.Finish();
  });
  EXPECT_THAT(paths, ElementsAre("s.mounts[0]", "s.mounts[1]"));
  EXPECT_FALSE(r.IntList("rungs", AtLeast(0)).has_value());
  EXPECT_THAT(errors.errors(), ElementsAre("s.mounts[1]: expected a map, got integer 3",
                                           "s.rungs[1]: expected an integer, got string \"x\"",
                                           "s.rungs[2]: must be >= 0, got -1"));
  EXPECT_THAT(errors.warnings(), IsEmpty());
}

}  // namespace
}  // namespace cohort::config::internal
