#pragma once
// The few shapes of XML an S3 store answers with (ListObjectsV2, CreateMultipartUpload, errors),
// read through expat into (path, text) pairs: "ListBucketResult/Contents/Key" -> "a/b.pt".
// The answer is untrusted: a document that is not well-formed, deeper than 16 elements or
// larger than the caller's bound is InvalidArgument naming what was wrong; nothing is expanded
// (expat does not fetch external entities, and a DOCTYPE is refused outright).

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cohort::objstore {

// Every element's text, in document order, keyed by its path from the root (namespaces
// dropped: "ListBucketResult/Contents/Key"). Elements without text are listed with "".
using XmlFields = std::vector<std::pair<std::string, std::string>>;
absl::StatusOr<XmlFields> ParseXmlFields(absl::string_view xml);

// The first text at `path`, or "" when there is none.
std::string FirstField(const XmlFields& fields, absl::string_view path);

// Escapes &, <, >, " and ' for an XML text or attribute.
std::string XmlEscape(absl::string_view text);

}  // namespace cohort::objstore
