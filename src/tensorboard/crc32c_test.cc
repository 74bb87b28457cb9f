#include "tensorboard/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace cohort::tensorboard::crc32c {
namespace {

TEST(Crc32cTest, GivesTheStandardCheckValue) { EXPECT_EQ(Value("123456789"), 0xE3069283u); }

TEST(Crc32cTest, GivesTheEmptyStringZero) { EXPECT_EQ(Value(""), 0u); }

// RFC 3720 (iSCSI), appendix B.4: CRC examples.
TEST(Crc32cTest, MatchesRfc3720TestVectors) {
  std::string zeros(32, '\0');
  EXPECT_EQ(Value(zeros), 0x8A9136AAu);

  std::string ones(32, '\xff');
  EXPECT_EQ(Value(ones), 0x62A8AB43u);

  std::string incrementing(32, '\0');
  for (int i = 0; i < 32; ++i) incrementing[i] = static_cast<char>(i);
  EXPECT_EQ(Value(incrementing), 0x46DD794Eu);

  std::string decrementing(32, '\0');
  for (int i = 0; i < 32; ++i) decrementing[i] = static_cast<char>(31 - i);
  EXPECT_EQ(Value(decrementing), 0x113FDB5Cu);

  const unsigned char kReadCommandPdu[48] = {
      0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  EXPECT_EQ(Value(std::string(reinterpret_cast<const char*>(kReadCommandPdu), 48)), 0xD9963A56u);
}

TEST(Crc32cTest, ExtendEqualsTheCrcOfTheConcatenation) {
  EXPECT_EQ(Extend(Value("hello "), "world"), Value("hello world"));
}

TEST(Crc32cTest, MaskRotatesAndOffsetsAndUnmaskInvertsIt) {
  uint32_t crc = Value("foo");
  EXPECT_NE(Mask(crc), crc);
  EXPECT_NE(Mask(Mask(crc)), crc);
  EXPECT_EQ(Unmask(Mask(crc)), crc);
  EXPECT_EQ(Unmask(Unmask(Mask(Mask(crc)))), crc);
  EXPECT_EQ(Mask(0), 0xa282ead8u);
  EXPECT_EQ(Mask(0x00008000u), 0xa282ead9u);  // bit 15 rotates to bit 0
}

}  // namespace
}  // namespace cohort::tensorboard::crc32c
