#include "tensorboard/crc32c.h"

#include <array>

namespace cohort::tensorboard::crc32c {
namespace {

constexpr uint32_t kReflectedPolynomial = 0x82F63B78u;

// table[b]: the CRC register after shifting the byte b through it, eight bits at a time.
constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t reg = byte;
    for (int bit = 0; bit < 8; ++bit) {
      reg = (reg & 1) ? (reg >> 1) ^ kReflectedPolynomial : reg >> 1;
    }
    table[byte] = reg;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

}  // namespace

uint32_t Extend(uint32_t crc, absl::string_view data) {
  uint32_t reg = ~crc;
  for (unsigned char byte : data) {
    reg = kTable[(reg ^ byte) & 0xFF] ^ (reg >> 8);
  }
  return ~reg;
}

}  // namespace cohort::tensorboard::crc32c
