#include "tensorboard/record_writer.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensorboard/crc32c.h"

namespace cohort::tensorboard {
namespace {

using ::testing::HasSubstr;

std::string MakeTempDir() {
  std::string dir = ::testing::TempDir() + "/record_writer_XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

// Each test writes in a temporary directory of its own, removed afterwards.
class RecordWriterTest : public ::testing::Test {
 protected:
  ~RecordWriterTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }

  std::string root_ = MakeTempDir();
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(RecordWriterTest, EncodesAnEmptyRecordAsLengthZeroAndTheMaskedCrcs) {
  std::string record = EncodeRecord("");
  ASSERT_EQ(record.size(), 16u);
  EXPECT_EQ(record.substr(0, 8), std::string(8, '\0'));
  // Mask(CRC32C of "") = Mask(0) = 0xa282ead8, little-endian.
  EXPECT_EQ(record.substr(12, 4), std::string("\xd8\xea\x82\xa2", 4));
}

TEST_F(RecordWriterTest, WritesFramedRecordsInOrder) {
  std::string path = root_ + "/records";
  absl::StatusOr<std::unique_ptr<RecordWriter>> writer = RecordWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write("first").ok());
  ASSERT_TRUE((*writer)->Write("second").ok());
  EXPECT_EQ(ReadFile(path), EncodeRecord("first") + EncodeRecord("second"));  // before Close
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_TRUE((*writer)->Close().ok());
}

TEST_F(RecordWriterTest, RefusesAnExistingFile) {
  std::string path = root_ + "/records";
  std::ofstream(path) << "keep me";
  absl::StatusOr<std::unique_ptr<RecordWriter>> writer = RecordWriter::Create(path);
  EXPECT_TRUE(absl::IsAlreadyExists(writer.status())) << writer.status();
  EXPECT_THAT(writer.status().message(), HasSubstr(path));
  EXPECT_EQ(ReadFile(path), "keep me");
}

TEST_F(RecordWriterTest, NamesThePathWhenItCannotCreateTheFile) {
  std::string path = root_ + "/missing/records";
  absl::StatusOr<std::unique_ptr<RecordWriter>> writer = RecordWriter::Create(path);
  EXPECT_TRUE(absl::IsNotFound(writer.status())) << writer.status();
  EXPECT_THAT(writer.status().message(), HasSubstr(path));
}

TEST_F(RecordWriterTest, RefusesWritesAfterClose) {
  std::string path = root_ + "/records";
  absl::StatusOr<std::unique_ptr<RecordWriter>> writer = RecordWriter::Create(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Close().ok());
  absl::Status status = (*writer)->Write("late");
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(path));
}

}  // namespace
}  // namespace cohort::tensorboard
