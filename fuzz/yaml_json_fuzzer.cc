// Fuzz target: YAML-to-JSON conversion (config/yaml_json.h), the first step of every config and
// template, with its limits on size, nesting, aliases and their expansion.
//
// Input: YAML text.
// Invariants: a refusal says what is wrong; an accepted document written back with ToYaml reads
// again as the same tree, and writing that tree gives the same text (ToYaml is a fixed point).
// Except when aliases expand the tree past kMaxYamlBytes of YAML: ParseYaml refuses that text by
// its size, so the round trip is not checked (config_fuzzer checks that a config never expands
// that far).

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "config/yaml_json.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cohort::config::Json;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Json> tree = cohort::config::ParseYaml(text);
  if (!tree.ok()) {
    FUZZ_CHECK_REFUSAL(tree.status());
    return 0;
  }
  FUZZ_CHECK(!cohort::config::DescribeValue(*tree).empty(), tree->dump());
  const std::string yaml = cohort::config::ToYaml(*tree);
  if (yaml.size() > cohort::config::kMaxYamlBytes) return 0;
  absl::StatusOr<Json> reread = cohort::config::ParseYaml(yaml);
  FUZZ_CHECK(reread.ok(),
             "ToYaml's output does not parse: " + reread.status().ToString() + "\n" + yaml);
  // dump() rather than ==: NaN is never equal to itself, and both dump it as null.
  FUZZ_CHECK(reread->dump() == tree->dump(),
             "the tree changes through ToYaml:\n" + tree->dump() + "\n" + reread->dump());
  FUZZ_CHECK(cohort::config::ToYaml(*reread) == yaml, "ToYaml is not a fixed point:\n" + yaml);
  return 0;
}
