#pragma once
// The web interface's files (web/public), built into the master by web/CMakeLists.txt: the
// implementation is generated from the files at build time (web/embed_assets.cmake), so the
// master serves them with nothing installed beside it and nothing fetched at run time.
// Thread-safe (constant data).

#include <string_view>

namespace cohort::master::http {

// One file of web/public.
struct WebAsset {
  std::string_view path;          // relative to web/public, '/'-separated: "js/app.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view bytes;         // index.html with "{{ASSETS}}" replaced (see below)
};

// A hash of every file's path and content (16 hex digits). Assets are served under
// /assets/<version>/<path>, so a changed file has a new URL and each URL may be cached forever;
// index.html names them through "{{ASSETS}}", replaced by "/assets/<version>".
std::string_view WebAssetsVersion();

// The file at `path` exactly (no normalization: "a/../b" is not found); nullptr when there is
// none.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace cohort::master::http
