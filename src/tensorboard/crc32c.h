#pragma once
// CRC32C (Castagnoli, the polynomial 0x1EDC6F41, reflected 0x82F63B78) and the masking the
// TFRecord format applies to the checksums it stores. Thread-safe (pure functions).
//
// Why our own: none of the libraries Cohort links exposes CRC32C. Abseil gained absl/crc in
// 20230125, after Debian 12's 20220623; zlib's crc32 is the IEEE polynomial, not Castagnoli;
// LibTorch, Gloo, libarchive, OpenSSL and protobuf export none. Event files are small (a few
// records per reported step), so a byte-at-a-time table is fast enough and easy to check.
//
// Example:
//   uint32_t crc = crc32c::Value("123456789");  // 0xE3069283, the standard check value
//   uint32_t stored = crc32c::Mask(crc);        // what a TFRecord header holds

#include <cstdint>

#include "absl/strings/string_view.h"

namespace cohort::tensorboard::crc32c {

// Returns the CRC32C of the concatenation of A and `data`, where `crc` is the CRC32C of A.
uint32_t Extend(uint32_t crc, absl::string_view data);

// Returns the CRC32C of `data`.
inline uint32_t Value(absl::string_view data) { return Extend(0, data); }

// TFRecord stores masked CRCs: a CRC of a string that itself holds CRCs is weak, so the stored
// value is rotated right by 15 bits and offset by a constant.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

// The inverse of Mask.
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace cohort::tensorboard::crc32c
