#include "tensorboard/event_writer.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cohort::tensorboard {
namespace {

using ::cohort::testing_support::TempDir;
using ::testing::HasSubstr;

// An independent reader, written from the published formats alone (the TFRecord framing, the
// protobuf wire encoding, TensorFlow's field numbers), sharing no code with the library: its
// own bit-at-a-time CRC32C and its own protobuf decoder.

uint32_t ReferenceCrc32c(absl::string_view data) {
  uint32_t reg = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    reg ^= byte;
    for (int bit = 0; bit < 8; ++bit) reg = (reg & 1) ? (reg >> 1) ^ 0x82F63B78u : reg >> 1;
  }
  return ~reg;
}

uint32_t ReferenceMask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

uint64_t FromLittleEndian(absl::string_view bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i > 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[i - 1]);
  }
  return value;
}

std::string ToLittleEndian(uint64_t value, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  return out;
}

// One record as the format defines it.
std::string Frame(absl::string_view data) {
  std::string length = ToLittleEndian(data.size(), 8);
  return length + ToLittleEndian(ReferenceMask(ReferenceCrc32c(length)), 4) + std::string(data) +
         ToLittleEndian(ReferenceMask(ReferenceCrc32c(data)), 4);
}

// Splits `contents` into records, checking both CRCs of each. DataLoss on a mismatch or a
// truncated record.
absl::StatusOr<std::vector<std::string>> ReadRecords(absl::string_view contents) {
  std::vector<std::string> records;
  while (!contents.empty()) {
    if (contents.size() < 12) return absl::DataLossError("truncated record header");
    absl::string_view length_bytes = contents.substr(0, 8);
    if (FromLittleEndian(contents.substr(8, 4)) != ReferenceMask(ReferenceCrc32c(length_bytes))) {
      return absl::DataLossError(absl::StrCat("length CRC mismatch in record ", records.size()));
    }
    uint64_t length = FromLittleEndian(length_bytes);
    contents.remove_prefix(12);
    if (contents.size() < length + 4) return absl::DataLossError("truncated record data");
    absl::string_view data = contents.substr(0, length);
    if (FromLittleEndian(contents.substr(length, 4)) != ReferenceMask(ReferenceCrc32c(data))) {
      return absl::DataLossError(absl::StrCat("data CRC mismatch in record ", records.size()));
    }
    records.emplace_back(data);
    contents.remove_prefix(length + 4);
  }
  return records;
}

// A cursor over protobuf wire-format bytes; every read returns false on malformed input.
class WireReader {
 public:
  explicit WireReader(absl::string_view bytes) : bytes_(bytes) {}
  bool done() const { return bytes_.empty(); }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64 && !bytes_.empty(); shift += 7) {
      auto byte = static_cast<unsigned char>(bytes_[0]);
      bytes_.remove_prefix(1);
      *value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool ReadKey(uint64_t* field, int* wire_type) {
    uint64_t key;
    if (!ReadVarint(&key)) return false;
    *field = key >> 3;
    *wire_type = static_cast<int>(key & 7);
    return true;
  }
  bool ReadBytes(size_t size, absl::string_view* out) {
    if (bytes_.size() < size) return false;
    *out = bytes_.substr(0, size);
    bytes_.remove_prefix(size);
    return true;
  }
  bool ReadLengthDelimited(absl::string_view* out) {
    uint64_t size;
    return ReadVarint(&size) && ReadBytes(size, out);
  }
  // Skips a field of `wire_type` (varint 0, fixed64 1, length-delimited 2, fixed32 5).
  bool Skip(int wire_type) {
    uint64_t varint;
    absl::string_view ignored;
    switch (wire_type) {
      case 0:
        return ReadVarint(&varint);
      case 1:
        return ReadBytes(8, &ignored);
      case 2:
        return ReadLengthDelimited(&ignored);
      case 5:
        return ReadBytes(4, &ignored);
      default:
        return false;
    }
  }

 private:
  absl::string_view bytes_;
};

struct Scalar {
  std::string tag;
  float value = 0;
};

struct DecodedEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<Scalar> scalars;
};

// Summary.Value: tag = 1 (string), simple_value = 2 (float).
bool DecodeValue(absl::string_view bytes, Scalar* scalar) {
  WireReader reader(bytes);
  while (!reader.done()) {
    uint64_t field;
    int wire_type;
    absl::string_view raw;
    if (!reader.ReadKey(&field, &wire_type)) return false;
    if (field == 1 && wire_type == 2) {
      if (!reader.ReadLengthDelimited(&raw)) return false;
      scalar->tag = std::string(raw);
    } else if (field == 2 && wire_type == 5) {
      if (!reader.ReadBytes(4, &raw)) return false;
      uint32_t bits = static_cast<uint32_t>(FromLittleEndian(raw));
      std::memcpy(&scalar->value, &bits, 4);
    } else if (!reader.Skip(wire_type)) {
      return false;
    }
  }
  return true;
}

// Summary: repeated Value value = 1.
bool DecodeSummary(absl::string_view bytes, std::vector<Scalar>* scalars) {
  WireReader reader(bytes);
  while (!reader.done()) {
    uint64_t field;
    int wire_type;
    if (!reader.ReadKey(&field, &wire_type)) return false;
    if (field == 1 && wire_type == 2) {
      absl::string_view raw;
      scalars->emplace_back();
      if (!reader.ReadLengthDelimited(&raw) || !DecodeValue(raw, &scalars->back())) return false;
    } else if (!reader.Skip(wire_type)) {
      return false;
    }
  }
  return true;
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5.
absl::StatusOr<DecodedEvent> DecodeEvent(absl::string_view bytes) {
  DecodedEvent event;
  WireReader reader(bytes);
  bool ok = true;
  while (ok && !reader.done()) {
    uint64_t field, varint;
    int wire_type;
    absl::string_view raw;
    ok = reader.ReadKey(&field, &wire_type);
    if (!ok) break;
    if (field == 1 && wire_type == 1) {
      ok = reader.ReadBytes(8, &raw);
      uint64_t bits = ok ? FromLittleEndian(raw) : 0;
      std::memcpy(&event.wall_time, &bits, 8);
    } else if (field == 2 && wire_type == 0) {
      ok = reader.ReadVarint(&varint);
      event.step = static_cast<int64_t>(varint);
    } else if (field == 3 && wire_type == 2) {
      ok = reader.ReadLengthDelimited(&raw);
      event.file_version = std::string(raw);
    } else if (field == 5 && wire_type == 2) {
      ok = reader.ReadLengthDelimited(&raw) && DecodeSummary(raw, &event.scalars);
    } else {
      ok = reader.Skip(wire_type);
    }
  }
  if (!ok) return absl::DataLossError("malformed Event");
  return event;
}

absl::StatusOr<std::vector<DecodedEvent>> ReadEvents(absl::string_view contents) {
  absl::StatusOr<std::vector<std::string>> records = ReadRecords(contents);
  if (!records.ok()) return records.status();
  std::vector<DecodedEvent> events;
  for (const std::string& record : *records) {
    absl::StatusOr<DecodedEvent> event = DecodeEvent(record);
    if (!event.ok()) return event.status();
    events.push_back(*std::move(event));
  }
  return events;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Bytes(std::initializer_list<unsigned char> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

class EventWriterTest : public ::testing::Test {
 protected:
  std::unique_ptr<EventWriter> OpenWriter(const std::string& dir) {
    absl::StatusOr<std::unique_ptr<EventWriter>> writer =
        EventWriter::Open(dir, {.clock = &clock_, .hostname = "testhost"});
    EXPECT_OK(writer);
    return writer.ok() ? *std::move(writer) : nullptr;
  }

  FakeClock clock_{absl::FromUnixSeconds(2)};
  TempDir temp_{"event_writer"};  // removed after the test
  std::string root_ = temp_.path();
  std::string dir_ = root_ + "/trial/tensorboard";
};

TEST_F(EventWriterTest, WritesTheBytesThePublishedFormatDefines) {
  std::unique_ptr<EventWriter> writer = OpenWriter(dir_);
  ASSERT_NE(writer, nullptr);
  ASSERT_OK(writer->WriteScalar("loss", 7, 0.5, absl::FromUnixMillis(3500)));
  ASSERT_OK(writer->Close());

  EXPECT_EQ(writer->path(),
            absl::StrCat(dir_, "/events.out.tfevents.0000000002.testhost.", ::getpid()));
  // Event{wall_time: 2.0, file_version: "brain.Event:2"}
  std::string version =
      Bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0x40}) +  // field 1, fixed64: 2.0 is 0x4000000000000000
      Bytes({0x1A, 13}) + "brain.Event:2";        // field 3, length-delimited, 13 bytes
  // Event{wall_time: 3.5, step: 7, summary: {value: [{tag: "loss", simple_value: 0.5}]}}
  std::string scalar =
      Bytes({0x09, 0, 0, 0, 0, 0, 0, 0x0C, 0x40}) +  // field 1, fixed64: 3.5 is 0x400C000000000000
      Bytes({0x10, 7}) +                             // field 2, varint: 7
      Bytes({0x2A, 13}) +                            // field 5 (Summary), 13 bytes
      Bytes({0x0A, 11}) +                            //   field 1 (Value), 11 bytes
      Bytes({0x0A, 4}) + "loss" +                    //     field 1 (tag), 4 bytes
      Bytes({0x15, 0, 0, 0, 0x3F});                  //     field 2, fixed32: 0.5f is 0x3F000000
  EXPECT_EQ(ReadFile(writer->path()), Frame(version) + Frame(scalar));
}

TEST_F(EventWriterTest, ReadsBackSeveralScalarsWithAnIndependentReader) {
  std::unique_ptr<EventWriter> writer = OpenWriter(dir_);
  ASSERT_NE(writer, nullptr);
  ASSERT_OK(writer->WriteScalar("training/loss", 10, 2.25, absl::FromUnixSeconds(10)));
  ASSERT_OK(writer->WriteScalars({{"validation/accuracy", 0.75}, {"validation/loss", -1.5}}, 20,
                                 absl::FromUnixMillis(20500)));
  ASSERT_OK(writer->WriteScalar("training/loss", 30, 0.0, absl::FromUnixSeconds(30)));
  ASSERT_OK(writer->Flush());

  absl::StatusOr<std::vector<DecodedEvent>> events = ReadEvents(ReadFile(writer->path()));
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 4u);
  EXPECT_EQ((*events)[0].file_version, "brain.Event:2");
  EXPECT_EQ((*events)[0].wall_time, 2.0);
  EXPECT_TRUE((*events)[0].scalars.empty());

  const DecodedEvent& first = (*events)[1];
  EXPECT_EQ(first.step, 10);
  EXPECT_EQ(first.wall_time, 10.0);
  ASSERT_EQ(first.scalars.size(), 1u);
  EXPECT_EQ(first.scalars[0].tag, "training/loss");
  EXPECT_EQ(first.scalars[0].value, 2.25f);

  const DecodedEvent& validation = (*events)[2];
  EXPECT_EQ(validation.step, 20);
  EXPECT_EQ(validation.wall_time, 20.5);
  ASSERT_EQ(validation.scalars.size(), 2u);
  EXPECT_EQ(validation.scalars[0].tag, "validation/accuracy");
  EXPECT_EQ(validation.scalars[0].value, 0.75f);
  EXPECT_EQ(validation.scalars[1].tag, "validation/loss");
  EXPECT_EQ(validation.scalars[1].value, -1.5f);

  const DecodedEvent& zero = (*events)[3];  // a zero value is still written (a oneof member)
  EXPECT_EQ(zero.step, 30);
  ASSERT_EQ(zero.scalars.size(), 1u);
  EXPECT_EQ(zero.scalars[0].value, 0.0f);
}

TEST_F(EventWriterTest, ReaderDetectsACorruptedByte) {
  std::unique_ptr<EventWriter> writer = OpenWriter(dir_);
  ASSERT_NE(writer, nullptr);
  ASSERT_OK(writer->WriteScalar("training/loss", 1, 1.0, absl::FromUnixSeconds(3)));
  ASSERT_OK(writer->Close());
  std::string contents = ReadFile(writer->path());
  absl::StatusOr<std::vector<std::string>> intact = ReadRecords(contents);
  ASSERT_OK(intact);
  size_t second_record = 12 + (*intact)[0].size() + 4;  // header, version event, data CRC

  std::string bad_data = contents;
  bad_data[second_record + 12 + 5] ^= 0x01;  // a byte of the second record's data
  absl::StatusOr<std::vector<std::string>> records = ReadRecords(bad_data);
  EXPECT_TRUE(absl::IsDataLoss(records.status())) << records.status();
  EXPECT_THAT(records.status().message(), HasSubstr("data CRC mismatch in record 1"));

  std::string bad_length = contents;
  bad_length[second_record] ^= 0x01;  // the second record's length
  records = ReadRecords(bad_length);
  EXPECT_TRUE(absl::IsDataLoss(records.status())) << records.status();
  EXPECT_THAT(records.status().message(), HasSubstr("length CRC mismatch in record 1"));
}

TEST_F(EventWriterTest, GivesASecondWriterInTheSameSecondItsOwnFile) {
  std::unique_ptr<EventWriter> first = OpenWriter(dir_);
  std::unique_ptr<EventWriter> second = OpenWriter(dir_);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->path(), first->path() + ".1");
}

TEST_F(EventWriterTest, NamesTheDirectoryItCannotCreate) {
  std::string file = root_ + "/a_file";
  std::ofstream(file) << "not a directory";
  absl::StatusOr<std::unique_ptr<EventWriter>> writer =
      EventWriter::Open(file + "/tensorboard", {.clock = &clock_});
  EXPECT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr(file + "/tensorboard"));
}

TEST_F(EventWriterTest, RefusesAnEmptyTagAndWritesAfterClose) {
  std::unique_ptr<EventWriter> writer = OpenWriter(dir_);
  ASSERT_NE(writer, nullptr);
  absl::Status status = writer->WriteScalars({{"ok", 1.0}, {"", 2.0}}, 1, absl::Now());
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(writer->path()));
  ASSERT_OK(writer->Close());
  status = writer->WriteScalar("late", 2, 1.0, absl::Now());
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;

  absl::StatusOr<std::vector<DecodedEvent>> events = ReadEvents(ReadFile(writer->path()));
  ASSERT_OK(events);
  EXPECT_EQ(events->size(), 1u);  // the version record only
}

TEST_F(EventWriterTest, SaturatesValuesBeyondFloatRange) {
  std::unique_ptr<EventWriter> writer = OpenWriter(dir_);
  ASSERT_NE(writer, nullptr);
  ASSERT_OK(writer->WriteScalars({{"big", 1e300}, {"nan", std::nan("")}, {"small", -1e300}}, 1,
                                 absl::FromUnixSeconds(3)));
  absl::StatusOr<std::vector<DecodedEvent>> events = ReadEvents(ReadFile(writer->path()));
  ASSERT_OK(events);
  ASSERT_EQ(events->size(), 2u);
  const std::vector<Scalar>& scalars = (*events)[1].scalars;
  ASSERT_EQ(scalars.size(), 3u);
  EXPECT_EQ(scalars[0].value, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(scalars[1].value));
  EXPECT_EQ(scalars[2].value, -std::numeric_limits<float>::infinity());
}

TEST_F(EventWriterTest, KeepsEveryRecordWholeUnderConcurrentWriters) {
  std::unique_ptr<EventWriter> writer = OpenWriter(dir_);
  ASSERT_NE(writer, nullptr);
  constexpr int kThreads = 4;
  constexpr int kWritesPerThread = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      for (int i = 0; i < kWritesPerThread; ++i) {
        EXPECT_OK(writer->WriteScalar(absl::StrCat("thread", t), i, i, absl::Now()));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_OK(writer->Close());

  absl::StatusOr<std::vector<DecodedEvent>> events = ReadEvents(ReadFile(writer->path()));
  ASSERT_OK(events);
  EXPECT_EQ(events->size(), 1u + kThreads * kWritesPerThread);
}

}  // namespace
}  // namespace cohort::tensorboard
