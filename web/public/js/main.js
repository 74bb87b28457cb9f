// The single-page app: a router over the History API. Each path draws one page into <main>;
// leaving the page stops its polls and aborts its requests (PageContext). A page that needs a
// session without one redirects to /login?next=PATH. The login is the browser's (api.js): a
// logout in any tab takes every tab to the login page at once, and a page the browser restores
// from its back/forward cache after a logout is drawn again (as the login), never shown as it
// was.

import {
  api, clearSession, describeError, getSession, kSessionKey, setUnauthenticatedHandler,
} from './api.js';
import { el, fill } from './util.js';
import { loginPage, nextPath } from './pages/login.js';
import { experimentsPage } from './pages/experiments.js';
import { experimentPage } from './pages/experiment.js';
import { trialPage } from './pages/trial.js';
import { clusterPage } from './pages/cluster.js';
import { modelPage, modelsPage } from './pages/models.js';
import { templatesPage } from './pages/templates.js';
import { compareExperimentsPage, comparePage } from './pages/compare.js';

const kRoutes = [
  { pattern: /^\/login$/, page: loginPage, open: true, title: 'Log in' },
  { pattern: /^\/(?:experiments)?$/, page: experimentsPage, nav: 'experiments', title: 'Experiments' },
  { pattern: /^\/experiments\/(\d+)$/, page: experimentPage, nav: 'experiments', title: 'Experiment' },
  { pattern: /^\/trials\/(\d+)$/, page: trialPage, nav: 'experiments', title: 'Trial' },
  { pattern: /^\/compare\/([\d,]+)$/, page: comparePage, nav: 'experiments', title: 'Compare trials' },
  { pattern: /^\/compare\/experiments\/([\d,]+)$/, page: compareExperimentsPage, nav: 'experiments', title: 'Compare experiments' },
  { pattern: /^\/cluster$/, page: clusterPage, nav: 'cluster', title: 'Cluster' },
  { pattern: /^\/templates$/, page: templatesPage, nav: 'templates', title: 'Templates' },
  { pattern: /^\/models$/, page: modelsPage, nav: 'models', title: 'Models' },
  { pattern: /^\/models\/([A-Za-z0-9._-]+)$/, page: modelPage, nav: 'models', title: 'Model' },
];

// What a page gets: its parameters, a signal aborted when it is left, and timers that stop then.
class PageContext {
  constructor() {
    this.controller = new AbortController();
    this.cleanups = [];
  }
  get signal() { return this.controller.signal; }
  get alive() { return !this.controller.signal.aborted; }
  onCleanup(fn) { this.cleanups.push(fn); }
  // Runs `fn` now and then `ms` after each run ends, until the page is left.
  every(ms, fn) {
    let timer = null;
    const tick = async () => {
      if (!this.alive) return;
      try {
        await fn();
      } catch (e) {
        if (e.name !== 'AbortError') console.error(e);
      }
      if (this.alive) timer = setTimeout(tick, ms);
    };
    this.onCleanup(() => clearTimeout(timer));
    tick();
  }
  close() {
    this.controller.abort();
    for (const fn of this.cleanups) fn();
  }
}

let current = null;

export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

function header(route, session) {
  const top = document.getElementById('top');
  if (!session) {
    top.hidden = true;
    return;
  }
  const link = (href, text, key) => el('a', {
    href, 'aria-current': route.nav === key ? 'page' : false,
  }, text);
  fill(top,
    el('a', { href: '/', class: 'brand' }, 'Cohort'),
    el('nav', { 'aria-label': 'Main' },
      link('/experiments', 'Experiments', 'experiments'),
      link('/cluster', 'Cluster', 'cluster'),
      link('/templates', 'Templates', 'templates'),
      link('/models', 'Models', 'models')),
    el('span', { class: 'user' },
      el('span', { id: 'whoami' }, `${session.username}${session.admin ? ' (admin)' : ''}`),
      el('button', { type: 'button', id: 'logout', onclick: logout }, 'Log out')));
  top.hidden = false;
}

async function logout() {
  try {
    await api('/auth/logout', { method: 'POST', body: {} });
  } catch (e) {
    console.warn('logout:', describeError(e));
  }
  clearSession();
  navigate('/login', { replace: true });
}

function render() {
  if (current) current.close();
  current = new PageContext();
  const path = location.pathname;
  const route = kRoutes.find((r) => r.pattern.test(path));
  const main = document.getElementById('main');
  const session = getSession();
  if (!route) {
    header({}, session);
    fill(main, el('h1', {}, 'Not found'), el('p', {}, `There is no page at ${path}. `,
      el('a', { href: '/experiments' }, 'Go to the experiments.')));
    return;
  }
  if (!route.open && !session) {
    navigate(`/login?next=${encodeURIComponent(path + location.search)}`, { replace: true });
    return;
  }
  header(route, session);
  document.title = `${route.title} · Cohort`;
  const params = path.match(route.pattern).slice(1);
  fill(main);
  route.page(main, params, current);
}

// Same-origin links are the router's (a modified click or a download keeps the browser's way).
document.addEventListener('click', (event) => {
  const a = event.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download') || event.defaultPrevented) return;
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
  event.preventDefault();
  if (url.hash && url.pathname === location.pathname) {
    document.getElementById(url.hash.slice(1))?.focus();
    return;
  }
  navigate(url.pathname + url.search);
});

window.addEventListener('popstate', render);
// Another tab logged in or out (localStorage's `storage` event fires in the other tabs only).
window.addEventListener('storage', (event) => {
  if (event.key !== kSessionKey && event.key !== null) return;
  const route = kRoutes.find((r) => r.pattern.test(location.pathname));
  if (!getSession() && route && !route.open) {
    fill(document.getElementById('main'));  // nothing of the session stays on screen
    navigate(`/login?next=${encodeURIComponent(location.pathname + location.search)}`,
      { replace: true });
  } else if (getSession() && location.pathname === '/login') {
    navigate(nextPath(), { replace: true });
  }
});
// Restored from the back/forward cache: drawn again if the session ended meanwhile.
window.addEventListener('pageshow', (event) => {
  if (event.persisted && !getSession()) render();
});
setUnauthenticatedHandler(() => {
  const next = location.pathname + location.search;
  if (location.pathname !== '/login') {
    navigate(`/login?next=${encodeURIComponent(next)}&expired=1`, { replace: true });
  }
});
render();
