#include "master/http/web_routes.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "master/http/web_assets.h"

namespace cohort::master::http {
namespace {

// Content-Security-Policy of every page and asset: only this master's own scripts, styles and
// API (no inline script, nothing from elsewhere), never framed by another site.
constexpr char kPolicy[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

Reply AssetReply(const WebAsset& asset, std::string cache_control) {
  Reply reply = Reply::Bytes(std::string(asset.bytes), std::string(asset.content_type));
  reply.headers = {{"Cache-Control", std::move(cache_control)},
                   {"Content-Security-Policy", kPolicy},
                   {"X-Content-Type-Options", "nosniff"},
                   {"X-Frame-Options", "DENY"},
                   {"Referrer-Policy", "no-referrer"}};
  return reply;
}

absl::StatusOr<Reply> Index() {
  const WebAsset* index = FindWebAsset("index.html");
  if (index == nullptr) return absl::InternalError("the web interface has no index.html");
  return AssetReply(*index, "no-cache");
}

absl::StatusOr<Reply> Asset(const Request& req) {
  const std::string version = req.PathPart(1);
  const std::string path = req.PathPart(2);
  const WebAsset* asset = version == WebAssetsVersion() ? FindWebAsset(path) : nullptr;
  if (asset == nullptr || path == "index.html") {
    return absl::NotFoundError(
        absl::StrCat("no such file of the web interface: ", req.raw().path.substr(0, 200),
                     version == WebAssetsVersion() ? "" : " (another version: reload the page)"));
  }
  return AssetReply(*asset, "public, max-age=31536000, immutable");
}

}  // namespace

void AddWebRoutes(Router& router) {
  const RouteOptions open{.require = Require::kAnyone};
  router.Get(R"(/assets/([0-9a-f]+)/(.+))", Asset, open);
  // Every other path outside the API is one of the page's own routes (/experiments/3): the
  // page itself, which reads the path and draws that view.
  router.Get(R"(/(?!api/|api$|metrics$|assets/).*)", [](const Request&) { return Index(); }, open);
}

}  // namespace cohort::master::http
