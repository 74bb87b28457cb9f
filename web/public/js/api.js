// The master's REST API (/api/v1), as the page uses it: one login per browser, in the
// master's HttpOnly session cookie (no script here can read the token), which the master
// counts only on requests that carry the page's header X-Cohort-Request (its CSRF defence,
// master/http/session_cookie.h). Every failure becomes an ApiError whose message is the
// master's own words ({"error", "errors"}) or says what went wrong on the way.
//
// localStorage keeps who is logged in ({username, admin, expires_ms}, never the token), shared
// by the browser's tabs: a login or logout in one tab reaches the others as a `storage` event
// (main.js follows it).

export const kSessionKey = 'cohort.session';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;  // HTTP status; 0: no answer
  }
}

// {username, admin, expires_ms} of the logged-in user, or null.
export function getSession() {
  try {
    const session = JSON.parse(localStorage.getItem(kSessionKey) || 'null');
    if (!session || !session.username) return null;
    if (session.expires_ms && session.expires_ms < Date.now()) {
      clearSession();
      return null;
    }
    return session;
  } catch {
    return null;
  }
}

export function setSession(login) {
  localStorage.setItem(kSessionKey, JSON.stringify({
    username: login.username, admin: !!login.admin, expires_ms: login.expires_ms || 0,
  }));
}

export function clearSession() {
  localStorage.removeItem(kSessionKey);
}

// Called when the master refuses the session's token (expired, revoked): set by main.js.
let onUnauthenticated = () => {};
export function setUnauthenticatedHandler(handler) { onUnauthenticated = handler; }

function errorText(status, json, statusText) {
  if (json && typeof json.error === 'string') {
    const more = Array.isArray(json.errors) ? json.errors : [];
    return [json.error, ...more].join('\n');
  }
  return `the master answered HTTP ${status}${statusText ? ' ' + statusText : ''}`;
}

// `body`: sent as JSON; `text`: sent as it is (a template's YAML).
async function send(path, { method = 'GET', body, text, signal } = {}) {
  const headers = { 'X-Cohort-Request': '1' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (text !== undefined) headers['Content-Type'] = 'text/plain; charset=utf-8';
  try {
    return await fetch(path, {
      method, headers, signal, cache: 'no-store', credentials: 'same-origin',
      body: text !== undefined ? text : body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, `no answer from the master (${e.message}): is it running and reachable?`);
  }
}

async function check(response, path) {
  if (response.ok) return response;
  const text = await response.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON: use the status */ }
  const message = errorText(response.status, json, response.statusText);
  if (response.status === 401 && path !== '/api/v1/auth/login') {
    clearSession();
    onUnauthenticated(message);
  }
  throw new ApiError(response.status, message);
}

// GET (or `method`) /api/v1 + `path`; resolves to the parsed JSON answer.
export async function api(path, options = {}) {
  const full = `/api/v1${path}`;
  const response = await check(await send(full, options), full);
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(response.status, `the master's answer to ${path} is not JSON`);
  }
}

// Fetches /api/v1 + `path` in the session and saves it as `filename`.
export async function download(path, filename) {
  const full = `/api/v1${path}`;
  const response = await check(await send(full), full);
  saveBlob(await response.blob(), filename);
}

export function saveBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// The text of any error for the page: an ApiError's words, else the exception's message.
export function describeError(e) {
  if (e instanceof ApiError) return e.message;
  return e && e.message ? e.message : String(e);
}
