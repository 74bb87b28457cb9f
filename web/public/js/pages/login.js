// Login: POST /api/v1/auth/login with "cookie": the master sets the browser's session cookie
// (every tab shares it; api.js).

import { api, describeError, getSession, setSession } from '../api.js';
import { navigate } from '../main.js';
import { el, errorBox } from '../util.js';

// Only a path of this site (never another origin) is followed after login.
export function nextPath() {
  const next = new URLSearchParams(location.search).get('next') || '/experiments';
  return next.startsWith('/') && !next.startsWith('//') ? next : '/experiments';
}

export function loginPage(main) {
  if (getSession()) {
    navigate(nextPath(), { replace: true });
    return;
  }
  const expired = new URLSearchParams(location.search).has('expired');
  const message = el('div', { 'aria-live': 'polite' },
    expired ? errorBox('Your session ended (expired or revoked): log in again.') : null);
  const username = el('input', { id: 'username', name: 'username', autocomplete: 'username', required: true });
  const password = el('input', {
    id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true,
  });
  const submit = el('button', { type: 'submit', id: 'login' }, 'Log in');
  const form = el('form', { class: 'login', 'aria-labelledby': 'login-title' },
    el('h1', { id: 'login-title' }, 'Log in to Cohort'),
    el('label', { for: 'username' }, 'User name'), username,
    el('label', { for: 'password' }, 'Password'), password,
    submit, message,
    el('p', { class: 'muted hint' }, 'The first admin\'s password is in the master\'s ',
      el('code', {}, 'DATA_DIR/admin-password'), '.'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    submit.disabled = true;
    message.replaceChildren();
    try {
      const login = await api('/auth/login', {
        method: 'POST', body: { username: username.value, password: password.value, cookie: true },
      });
      setSession(login);
      navigate(nextPath(), { replace: true });
    } catch (e) {
      message.replaceChildren(errorBox(`Login failed: ${describeError(e)}`));
      submit.disabled = false;
      password.select();
    }
  });
  main.append(form);
  username.focus();
}
