#include "tensorboard/record_writer.h"

#include <fstream>
#include <iterator>
#include <string>

#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensorboard/crc32c.h"

namespace cohort::tensorboard {
namespace {

using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;

// Each test writes in a temporary directory of its own, removed afterwards.
class RecordWriterTest : public ::testing::Test {
 protected:
  TempDir temp_{"record_writer"};
  std::string root_ = temp_.path();
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
  ASSERT_OK(writer);
  ASSERT_OK((*writer)->Write("first"));
  ASSERT_OK((*writer)->Write("second"));
  EXPECT_EQ(ReadFile(path), EncodeRecord("first") + EncodeRecord("second"));  // before Close
  ASSERT_OK((*writer)->Close());
  EXPECT_OK((*writer)->Close());
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
  ASSERT_OK(writer);
  ASSERT_OK((*writer)->Close());
  absl::Status status = (*writer)->Write("late");
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(path));
}

}  // namespace
}  // namespace cohort::tensorboard
