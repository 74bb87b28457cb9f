#pragma once
// YAML <-> JSON trees. Experiment configs are read from YAML into an order-preserving JSON tree
// (Json), merged and validated as such, and written back as YAML. Thread-safe (stateless).
//
// Scalars are resolved with the YAML 1.2 core schema: quoted scalars are strings; plain
// `true`/`false` (any case form True/TRUE) are booleans; `~`, `null` and empty are null;
// integers and floats (`1e-3`, `.inf`, `.nan`) are numbers; everything else is a string.
// YAML 1.1's yes/no/on/off stay strings.
//
// Limits: configs and templates arrive from anyone who can reach the master, so a document is
// bounded before and while it is read (docs/security.md, "Input limits"): at most kMaxYamlBytes
// of text, nesting at most kMaxYamlDepth deep, and at most kMaxYamlNodes nodes and
// kMaxYamlExpandedBytes of scalar text once every alias is expanded (a "billion laughs"
// document of 400 bytes would otherwise expand to gigabytes). An alias inside the node it names
// (`a: &x [1, *x]`) is refused rather than expanded forever.
//
// Example:
//   COHORT_ASSIGN_OR_RETURN(Json tree, ParseYaml(text));
//   std::string out = ToYaml(tree);

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cohort/config/json.h"

namespace cohort::config {

// The longest YAML text read (the same 1 MiB as wire::kMaxConfigBytes, a submitted config).
inline constexpr size_t kMaxYamlBytes = size_t{1} << 20;
// The deepest nesting of lists and maps; a real config nests about 5 deep.
inline constexpr int kMaxYamlDepth = 128;
// The most nodes (scalars, lists, maps), counting each alias's node again wherever it is used.
inline constexpr int64_t kMaxYamlNodes = 1'000'000;
// The most scalar text, counting each alias's text again wherever it is used.
inline constexpr size_t kMaxYamlExpandedBytes = size_t{64} << 20;

// Parses one YAML document. An empty document is null. Malformed YAML: InvalidArgument with the
// line and column, e.g. "line 3, column 5: illegal map value". Map keys must be scalars. Past a
// limit above: InvalidArgument naming it, e.g. "line 1: the YAML nests deeper than 128 levels",
// "line 1: aliases expand to more than 1000000 nodes (a 'billion laughs' document?)",
// "line 1, column 4: an alias is used inside the node it names (a cyclic alias)" (the line and
// column of the anchored node: yaml-cpp keeps no alias names).
absl::StatusOr<Json> ParseYaml(absl::string_view text);

// Reads a YAML file's text, unparsed (what the CLI uploads as a config or template), with
// ReadSmallFile's bound. Every error names the path: missing, NotFound; unreadable (no
// permission, an I/O error), FailedPrecondition with the system's reason; a directory, or longer
// than kMaxYamlBytes (it stops reading there), InvalidArgument.
absl::StatusOr<std::string> ReadYamlText(const std::string& path);

// ReadYamlText, then ParseYaml; ParseYaml's errors are prefixed with the path too ("PATH: line
// 3, column 1: ..."), keeping their code.
absl::StatusOr<Json> LoadYamlFile(const std::string& path);

// Block-style YAML for `tree`, ending in a newline. Strings that would read back as another type
// ("true", "12", "") are quoted; floats always carry a '.' or exponent so they read back as
// floats, with the shortest round-trip digits.
std::string ToYaml(const Json& tree);

// A short description of a value's type for error messages: `string "two"`, `integer 3`,
// `float 1.5`, `boolean true`, `null`, `list`, `map`.
std::string DescribeValue(const Json& value);

}  // namespace cohort::config
