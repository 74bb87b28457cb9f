#include "config/yaml_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cohort/status.h"
#include "common/small_file.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/yaml.h"

namespace cohort::config {
namespace {

bool LooksNumeric(absl::string_view s) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i >= s.size()) return false;
  if (!(absl::ascii_isdigit(s[i]) || s[i] == '.')) return false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (!(absl::ascii_isdigit(c) || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')) {
      return false;
    }
  }
  return true;
}

// Resolves a plain (unquoted) scalar with the YAML 1.2 core schema.
Json ResolvePlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s == ".inf" || s == "+.inf" || s == ".Inf" || s == ".INF") {
    return std::numeric_limits<double>::infinity();
  }
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return -std::numeric_limits<double>::infinity();
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  if (LooksNumeric(s)) {
    int64_t i;
    if (absl::SimpleAtoi(s, &i)) return i;
    double d;
    if (s.find_first_of(".eE") != std::string::npos && absl::SimpleAtod(s, &d)) return d;
  }
  return s;
}

// Whether `s` is valid UTF-8, as JSON text must be (nlohmann's dump() throws otherwise): no
// stray continuation byte, overlong form, surrogate or code point past U+10FFFF. yaml-cpp checks
// none of this, and writes a "\ud800" escape as a surrogate's bytes.
// The offset of the first byte of `s` that is not part of valid UTF-8, or npos.
size_t FirstInvalidUtf8(absl::string_view s);

bool IsValidUtf8(absl::string_view s) { return FirstInvalidUtf8(s) == absl::string_view::npos; }

size_t FirstInvalidUtf8(absl::string_view s) {
  static constexpr uint32_t kMinCodePoint[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    const size_t more = (lead & 0xE0) == 0xC0   ? 1
                        : (lead & 0xF0) == 0xE0 ? 2
                        : (lead & 0xF8) == 0xF0 ? 3
                                                : 0;
    if (more == 0 || s.size() - i <= more) return i;
    uint32_t code_point = lead & (0x7F >> (more + 1));
    for (size_t k = 1; k <= more; ++k) {
      const unsigned char next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xC0) != 0x80) return i;
      code_point = (code_point << 6) | (next & 0x3F);
    }
    if (code_point < kMinCodePoint[more] || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF)) {
      return i;
    }
    i += more + 1;
  }
  return absl::string_view::npos;
}

std::string Where(const YAML::Mark& mark) {
  return absl::StrCat("line ", mark.line + 1, ", column ", mark.column + 1);
}

// What reading one document has seen so far, to hold it to the limits of yaml_json.h.
struct Walk {
  int64_t nodes = 0;
  size_t scalar_bytes = 0;
  std::vector<YAML::Node> open;  // the lists and maps being read, outermost first
};

absl::Status NotUtf8(const YAML::Node& node) {
  return absl::InvalidArgumentError(
      absl::StrCat(Where(node.Mark()), ": the text is not valid UTF-8 (configs are UTF-8 text)"));
}

// Counts `node` against the limits; for a list or map, also checks that it is not one of the
// nodes it is inside (yaml-cpp shares an alias's node, so `&x [*x]` is a cycle) and that it does
// not nest too deep; for a scalar, that it is UTF-8.
absl::Status Enter(const YAML::Node& node, Walk& walk) {
  if (++walk.nodes > kMaxYamlNodes) {
    return absl::InvalidArgumentError(absl::StrCat(Where(node.Mark()),
                                                   ": aliases expand to more than ", kMaxYamlNodes,
                                                   " nodes (a 'billion laughs' document?)"));
  }
  if (node.IsScalar()) {
    walk.scalar_bytes += node.Scalar().size();
    if (walk.scalar_bytes > kMaxYamlExpandedBytes) {
      return absl::InvalidArgumentError(absl::StrCat(Where(node.Mark()),
                                                     ": aliases expand to more than ",
                                                     kMaxYamlExpandedBytes >> 20, " MiB of text"));
    }
    return IsValidUtf8(node.Scalar()) ? absl::OkStatus() : NotUtf8(node);
  }
  if (!node.IsSequence() && !node.IsMap()) return absl::OkStatus();
  for (const YAML::Node& outer : walk.open) {
    if (node.is(outer)) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(node.Mark()), ": an alias is used inside the node it names (a cyclic alias)"));
    }
  }
  if (walk.open.size() >= static_cast<size_t>(kMaxYamlDepth)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Where(node.Mark()), ": the YAML nests deeper than ", kMaxYamlDepth, " levels"));
  }
  walk.open.push_back(node);
  return absl::OkStatus();
}

absl::StatusOr<Json> FromNode(const YAML::Node& node, Walk& walk);

absl::StatusOr<Json> FromSequence(const YAML::Node& node, Walk& walk) {
  Json list = Json::array();
  for (const YAML::Node& item : node) {
    absl::StatusOr<Json> value = FromNode(item, walk);
    if (!value.ok()) return value.status();
    list.push_back(*std::move(value));
  }
  return list;
}

absl::StatusOr<Json> FromMap(const YAML::Node& node, Walk& walk) {
  Json map = Json::object();
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(entry.first.Mark()), ": map keys must be plain strings"));
    }
    const std::string key = entry.first.Scalar();
    if (!IsValidUtf8(key)) return NotUtf8(entry.first);
    if (map.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(entry.first.Mark()), ": duplicate key '", key, "'"));
    }
    absl::StatusOr<Json> value = FromNode(entry.second, walk);
    if (!value.ok()) return value.status();
    map[key] = *std::move(value);
  }
  return map;
}

// Recurses once per level, at most kMaxYamlDepth deep (Enter refuses deeper).
absl::StatusOr<Json> FromNode(const YAML::Node& node, Walk& walk) {
  if (absl::Status limits = Enter(node, walk); !limits.ok()) return limits;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Json(nullptr);
    case YAML::NodeType::Scalar:
      // "!" marks a quoted scalar (or the non-specific tag): always a string.
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return Json(node.Scalar());
      return ResolvePlainScalar(node.Scalar());
    case YAML::NodeType::Sequence:
    case YAML::NodeType::Map: {
      absl::StatusOr<Json> value =
          node.IsSequence() ? FromSequence(node, walk) : FromMap(node, walk);
      walk.open.pop_back();
      return value;
    }
  }
  return Json(nullptr);
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, result.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// Whether yaml-cpp would write `s` plain in a way that reads back as something else: control
// characters (a lone "\r" reads back as null) or leading or trailing blanks. Found by
// fuzz/yaml_json_fuzzer.
bool NeedsQuotes(absl::string_view s) {
  if (!s.empty() && (absl::ascii_isspace(s.front()) || absl::ascii_isspace(s.back()))) return true;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return true;
  }
  return false;
}

void Emit(const Json& value, YAML::Emitter& out) {
  switch (value.type()) {
    case Json::value_t::object:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        // YAML limits an implicit key to 1024 characters as written, escapes included (up to
        // 4 per byte); a longer key is written "? key". Found by fuzz/yaml_json_fuzzer.
        if (key.size() > 250) out << YAML::LongKey;
        out << YAML::Key << key << YAML::Value;
        Emit(item, out);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (value.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const Json& item : value) Emit(item, out);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      if (!ResolvePlainScalar(s).is_string() || NeedsQuotes(s)) {
        out << YAML::DoubleQuoted << s;
      } else {
        out << s;
      }
      return;
    }
    case Json::value_t::boolean:
      out << (value.get<bool>() ? "true" : "false");
      return;
    case Json::value_t::number_integer:
      out << value.get<int64_t>();
      return;
    case Json::value_t::number_unsigned:
      out << value.get<uint64_t>();
      return;
    case Json::value_t::number_float:
      out << FormatDouble(value.get<double>());
      return;
    default:
      out << YAML::Null;
      return;
  }
}

}  // namespace

absl::StatusOr<Json> ParseYaml(absl::string_view text) {
  if (text.size() > kMaxYamlBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the YAML is ", text.size(), " bytes, more than the limit of ", kMaxYamlBytes, " bytes"));
  }
  // UTF-8 only, and no NUL (which YAML forbids): yaml-cpp would otherwise guess UTF-16 or
  // UTF-32 from NULs or a byte-order mark, and what it decodes does not survive ToYaml. Found
  // by fuzz/yaml_json_fuzzer.
  const size_t nul = text.find('\0');
  const size_t bad = std::min(nul, FirstInvalidUtf8(text));
  if (bad != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("the YAML is not UTF-8 text: ", bad == nul ? "a NUL byte" : "an invalid byte",
                     " at byte ", bad));
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own parser stops a few hundred levels down ("[[[[..."), past kMaxYamlDepth.
    return absl::InvalidArgumentError(
        absl::StrCat(Where(e.mark), ": the YAML nests deeper than ", kMaxYamlDepth, " levels"));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Where(e.mark), ": ", e.msg));
  }
  Walk walk;
  return FromNode(root, walk);
}

absl::StatusOr<std::string> ReadYamlText(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory; expected a YAML file"));
  }
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxYamlBytes);
  if (absl::IsResourceExhausted(text.status())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the file is longer than the limit of ",
                                                   kMaxYamlBytes, " bytes for YAML"));
  }
  return text;
}

absl::StatusOr<Json> LoadYamlFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadYamlText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<Json> tree = ParseYaml(*text);
  if (!tree.ok()) return Annotate(tree.status(), path);
  return tree;
}

std::string ToYaml(const Json& tree) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(tree, out);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

std::string DescribeValue(const Json& value) {
  switch (value.type()) {
    case Json::value_t::string:
      return absl::StrCat("string \"", value.get_ref<const std::string&>(), "\"");
    case Json::value_t::boolean:
      return value.get<bool>() ? "boolean true" : "boolean false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return absl::StrCat("integer ", value.dump());
    case Json::value_t::number_float:
      return absl::StrCat("float ", FormatDouble(value.get<double>()));
    case Json::value_t::array:
      return "list";
    case Json::value_t::object:
      return "map";
    default:
      return "null";
  }
}

}  // namespace cohort::config
