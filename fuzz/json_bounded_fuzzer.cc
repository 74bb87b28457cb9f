// Fuzz target: the JSON depth guard (common/json_bounded.h), checked against nlohmann's parser.
//
// Input: one byte giving the depth limit (0 to 31), then the text; the target ignores texts
// longer than 64 KiB (nlohmann's own depth of those is measured recursively here).
// Invariants: ParseJsonBounded accepts a text exactly when nlohmann parses it and it nests at
// most the limit deep; CheckJsonDepth refuses every text that nests deeper (JSON or not, the
// scan must not be fooled by strings and escapes), with a message.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/json_bounded.h"
#include "fuzz/fuzz_check.h"
#include "nlohmann/json.hpp"

namespace {

constexpr size_t kMaxText = 64 << 10;

// How deep `value`'s arrays and objects nest (a scalar: 0).
int Depth(const nlohmann::json& value) {
  int deepest = 0;
  if (value.is_array() || value.is_object()) {
    for (const nlohmann::json& child : value) deepest = std::max(deepest, Depth(child));
    return deepest + 1;
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > kMaxText) return 0;
  const int max_depth = data[0] % 32;
  const absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const absl::Status depth = cohort::CheckJsonDepth(text, max_depth);
  if (!depth.ok()) FUZZ_CHECK_REFUSAL(depth);
  absl::StatusOr<nlohmann::json> bounded = cohort::ParseJsonBounded(text, max_depth);
  if (!bounded.ok()) FUZZ_CHECK_REFUSAL(bounded.status());

  // nlohmann reads a NUL byte as the end of the text; ParseJsonBounded refuses it.
  if (text.find('\0') != absl::string_view::npos) {
    FUZZ_CHECK(!bounded.ok(), "accepted a NUL byte");
    return 0;
  }
  const nlohmann::json plain = nlohmann::json::parse(text.begin(), text.end(), nullptr,
                                                     /*allow_exceptions=*/false);
  if (plain.is_discarded()) {
    FUZZ_CHECK(!bounded.ok(), "accepted text nlohmann refuses: " + std::string(text));
    return 0;
  }
  const int actual = Depth(plain);
  FUZZ_CHECK(depth.ok() == (actual <= max_depth),
             absl::StrCat("nests ", actual, " deep, limit ", max_depth,
                          ", CheckJsonDepth says: ", depth.ToString(), "\n", text));
  FUZZ_CHECK(bounded.ok() == (actual <= max_depth), bounded.status().ToString());
  if (bounded.ok()) FUZZ_CHECK(*bounded == plain || plain.dump() == bounded->dump(), plain.dump());
  return 0;
}
