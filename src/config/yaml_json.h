#pragma once
// YAML <-> JSON trees. Experiment configs are read from YAML into an order-preserving JSON tree
// (Json), merged and validated as such, and written back as YAML. Thread-safe (stateless).
//
// Scalars are resolved with the YAML 1.2 core schema: quoted scalars are strings; plain
// `true`/`false` (any case form True/TRUE) are booleans; `~`, `null` and empty are null;
// integers and floats (`1e-3`, `.inf`, `.nan`) are numbers; everything else is a string.
// YAML 1.1's yes/no/on/off stay strings.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(Json tree, ParseYaml(text));
//   std::string out = ToYaml(tree);

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cohort/config/json.h"

namespace cohort::config {

// Parses one YAML document. An empty document is null. Malformed YAML: InvalidArgument with the
// line and column, e.g. "line 3, column 5: illegal map value". Map keys must be scalars.
absl::StatusOr<Json> ParseYaml(absl::string_view text);

// Reads and parses a YAML file. Unreadable: NotFound/PermissionDenied naming the path.
absl::StatusOr<Json> LoadYamlFile(const std::string& path);

// Block-style YAML for `tree`, ending in a newline. Strings that would read back as another type
// ("true", "12", "") are quoted; floats always carry a '.' or exponent so they read back as
// floats, with the shortest round-trip digits.
std::string ToYaml(const Json& tree);

// A short description of a value's type for error messages: `string "two"`, `integer 3`,
// `float 1.5`, `boolean true`, `null`, `list`, `map`.
std::string DescribeValue(const Json& value);

}  // namespace cohort::config
