#include "runtime/idx_file.h"

#include <zlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace cohort::runtime {
namespace {

using ::cohort::testing_support::StatusIs;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

void WriteGz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

TEST(IdxFileTest, ReadsGzippedArrayWithItsDimensions) {
  const std::string path = TempPath("ok.idx.gz");
  WriteGz(path, {0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6});
  auto array = ReadIdxFile(path);
  ASSERT_OK(array);
  EXPECT_EQ(array->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array->data, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
}

TEST(IdxFileTest, TruncatedDataIsDataLossNamingTheFile) {
  const std::string path = TempPath("short.idx.gz");
  WriteGz(path, {0, 0, 8, 1, 0, 0, 0, 5, 1, 2});
  auto array = ReadIdxFile(path);
  EXPECT_THAT(array, StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_NE(array.status().message().find("short.idx.gz: truncated"), std::string::npos)
      << array.status();
}

TEST(IdxFileTest, WrongMagicIsDataLoss) {
  const std::string path = TempPath("float.idx.gz");
  WriteGz(path, {0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0});
  EXPECT_THAT(ReadIdxFile(path), StatusIs(absl::StatusCode::kDataLoss));
}

TEST(IdxFileTest, MissingFileIsNotFound) {
  auto array = ReadIdxFile(TempPath("does-not-exist.gz"));
  EXPECT_THAT(array, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_NE(array.status().message().find("does-not-exist.gz"), std::string::npos);
}

TEST(IdxFileTest, ReadsTheRealFashionMnistLabels) {
  const std::string path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  auto array = ReadIdxFile(path);
  ASSERT_OK(array) << " (scripts/install.sh installs the dataset)";
  EXPECT_EQ(array->dims, (std::vector<int64_t>{10000}));
  std::vector<int> counts(10, 0);
  for (uint8_t label : array->data) {
    ASSERT_LT(label, 10);
    ++counts[label];
  }
  for (int c : counts) EXPECT_EQ(c, 1000);  // the test split is balanced
}

}  // namespace
}  // namespace cohort::runtime
