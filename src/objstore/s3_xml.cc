#include "objstore/s3_xml.h"

#include <expat.h>

#include <memory>

#include "absl/strings/str_cat.h"

namespace cohort::objstore {
namespace {

constexpr int kMaxDepth = 16;

struct Parse {
  XML_Parser parser = nullptr;
  std::vector<std::string> path;  // element names, root first
  std::vector<size_t> open;       // index in `fields` of each open element
  XmlFields fields;
  std::string error;
};

// "{namespace}Name" or "ns:Name" -> "Name".
std::string LocalName(const XML_Char* name) {
  std::string n(name);
  if (const size_t at = n.find_last_of("}:"); at != std::string::npos) n.erase(0, at + 1);
  return n;
}

void Fail(Parse& p, std::string error) {
  if (p.error.empty()) p.error = std::move(error);
  XML_StopParser(p.parser, XML_FALSE);
}

void OnStart(void* data, const XML_Char* name, const XML_Char** /*attributes*/) {
  Parse& p = *static_cast<Parse*>(data);
  if (static_cast<int>(p.path.size()) >= kMaxDepth) {
    Fail(p, absl::StrCat("nested deeper than ", kMaxDepth, " elements"));
    return;
  }
  p.path.push_back(LocalName(name));
  std::string joined;
  for (const std::string& part : p.path) absl::StrAppend(&joined, joined.empty() ? "" : "/", part);
  p.open.push_back(p.fields.size());
  p.fields.emplace_back(std::move(joined), "");
}

void OnEnd(void* data, const XML_Char* /*name*/) {
  Parse& p = *static_cast<Parse*>(data);
  if (!p.path.empty()) p.path.pop_back();
  if (!p.open.empty()) p.open.pop_back();
}

void OnText(void* data, const XML_Char* text, int len) {
  Parse& p = *static_cast<Parse*>(data);
  if (!p.open.empty()) p.fields[p.open.back()].second.append(text, static_cast<size_t>(len));
}

void OnDoctype(void* data, const XML_Char* /*name*/, const XML_Char* /*sysid*/,
               const XML_Char* /*pubid*/, int /*has_internal_subset*/) {
  Fail(*static_cast<Parse*>(data), "it declares a DOCTYPE (refused)");
}

}  // namespace

absl::StatusOr<XmlFields> ParseXmlFields(absl::string_view xml) {
  Parse p;
  std::unique_ptr<XML_ParserStruct, void (*)(XML_Parser)> parser(XML_ParserCreateNS("UTF-8", '}'),
                                                                 XML_ParserFree);
  if (parser == nullptr) return absl::ResourceExhaustedError("cannot create an XML parser");
  p.parser = parser.get();
  XML_SetUserData(p.parser, &p);
  XML_SetElementHandler(p.parser, OnStart, OnEnd);
  XML_SetCharacterDataHandler(p.parser, OnText);
  XML_SetStartDoctypeDeclHandler(p.parser, OnDoctype);
  const XML_Status status = XML_Parse(p.parser, xml.data(), static_cast<int>(xml.size()), 1);
  if (!p.error.empty()) return absl::InvalidArgumentError(absl::StrCat("XML answer: ", p.error));
  if (status != XML_STATUS_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("XML answer is not well-formed at line ", XML_GetCurrentLineNumber(p.parser),
                     ": ", XML_ErrorString(XML_GetErrorCode(p.parser))));
  }
  return std::move(p.fields);
}

std::string FirstField(const XmlFields& fields, absl::string_view path) {
  for (const auto& [at, text] : fields) {
    if (at == path) return text;
  }
  return "";
}

std::string XmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace cohort::objstore
