#include "wire/series_bodies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::wire {
namespace {

using ::testing::HasSubstr;

TEST(SeriesBodiesTest, EveryBodyRoundTrips) {
  SeriesList list{{{"validation/loss", "", 3, 10, 30, 1700000000.5, 0.25, 0.25, 0.9, 0.5},
                   {"gpu_util", "agent-1/GPU-1", 2, 1, 2, 5, 80, 70, 80, 75}}};
  EXPECT_EQ(ParseSeriesList(list.ToJson()).value().ToJson(), list.ToJson());
  SeriesData data{{{"training/loss", "", {{1, 2.5, 0.9}, {2, 3.5, 0.8}}}}, 42};
  EXPECT_EQ(ParseSeriesData(data.ToJson()).value().ToJson(), data.ToJson());
  EXPECT_EQ(data.ToJson()["series"][0]["points"][1], Json::array({2, 3.5, 0.8}));
  ExperimentSeriesData curves{"validation/loss", "", {{1, {{10, 1, 0.5}}}, {2, {}}}};
  EXPECT_EQ(ParseExperimentSeriesData(curves.ToJson()).value().ToJson(), curves.ToJson());
}

TEST(SeriesBodiesTest, AMalformedPointIsNamed) {
  Json bad = SeriesData{{{"x", "", {{1, 2, 3}}}}, 1}.ToJson();
  bad["series"][0]["points"][0] = Json::array({1, 2});
  EXPECT_THAT(ParseSeriesData(bad).status().message(),
              HasSubstr("\"points\"[0]: must be [batch, time, value], got [1,2]"));
}

}  // namespace
}  // namespace cohort::wire
