#pragma once
// The web page's login: one per browser, in a cookie the page's scripts cannot read.
//
// `POST /api/v1/auth/login` with `"cookie": true` answers without the token in its body and
// sets it as the cookie `cohort_session` (HttpOnly: no script reads it; SameSite=Strict: no
// other site's page makes the browser send it; Path=/api/; Secure when the master serves
// HTTPS; it lasts as long as the token). Every tab of the browser then shares the login, and
// `POST /api/v1/auth/logout` revokes the token and clears the cookie: the login ends in every
// tab at once.
//
// CSRF: besides SameSite and BrowserGuard's Origin check, the cookie counts only on requests
// that carry the header `X-Cohort-Request` (any value). A page on another site can make a
// browser send a form or an <img> request with its cookies, never with a custom header (that
// needs a CORS preflight, which the master never allows). The CLI and agents send
// `Authorization: Bearer`, which wins over any cookie.
// Thread-safe (functions of their arguments).

#include <string>

#include <httplib.h>

#include "absl/time/time.h"

namespace cohort::master::http {

inline constexpr char kSessionCookie[] = "cohort_session";
inline constexpr char kPageRequestHeader[] = "X-Cohort-Request";

// Where a user's credential came from.
enum class CredentialSource { kNone, kBearer, kCookie, kCookieWithoutHeader };

struct Credential {
  CredentialSource source = CredentialSource::kNone;
  std::string token;  // empty unless kBearer or kCookie
};

// The credential of `Authorization: Bearer CREDENTIAL`; empty when there is none.
std::string BearerCredential(const httplib::Request& request);

// The request's user credential: `Authorization: Bearer` if present, else the session cookie
// when the page's header is there too (kCookieWithoutHeader: a cookie without it, not used).
Credential UserCredential(const httplib::Request& request);

// The value of cookie `name` in a `Cookie:` header ("a=1; b=2"); empty when absent.
std::string CookieValue(const std::string& cookie_header, const std::string& name);

// `Set-Cookie` values: the session `token` for `lifetime` (the token's), and one that deletes it.
std::string SessionCookie(const std::string& token, absl::Duration lifetime, bool https);
std::string ExpiredSessionCookie(bool https);

}  // namespace cohort::master::http
