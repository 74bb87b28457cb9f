// Pause, activate and kill an experiment (POST /api/v1/experiments/{id}/{action}), shared by the
// experiments list and the experiment page. Kill asks first.

import { api, describeError } from './api.js';
import { confirmDialog, el, kFinalExperimentStates } from './util.js';

// POSTs to `path` (after asking `confirm`, a [question, confirm label] pair, when given) with
// `button` disabled meanwhile; `onDone(error?)` after, with `failure`'s words and the master's
// when it failed. Shared by the experiments' actions and a trial's Kill.
export async function postAction(button, { path, confirm, failure }, onDone) {
  if (confirm && !(await confirmDialog(...confirm))) return;
  button.disabled = true;
  try {
    await api(path, { method: 'POST', body: {} });
    onDone(null);
  } catch (e) {
    onDone(`${failure}: ${describeError(e)}`);
  } finally {
    button.disabled = false;
  }
}

// Buttons for the actions that apply to an experiment in `state`. `onDone(error?)` is called
// after each action (with the error's words when it failed).
export function experimentActions(experiment, onDone) {
  const { id, name, state } = experiment;
  if (kFinalExperimentStates.has(state)) return el('span', { class: 'muted' }, '—');
  const run = (action, button) => postAction(button, {
    path: `/experiments/${id}/${action}`,
    confirm: action === 'kill' ? [
      `Kill experiment ${id} (${name})? Its running trials stop now and it cannot be resumed.`,
      `Kill experiment ${id}`] : null,
    failure: `Could not ${action} experiment ${id}`,
  }, onDone);
  const button = (action, label, cls) => {
    const b = el('button', {
      type: 'button', class: cls, 'data-action': action,
      'aria-label': `${label} experiment ${id}`,
    }, label);
    b.addEventListener('click', () => run(action, b));
    return b;
  };
  return el('span', { class: 'actions' },
    state === 'PAUSED' ? button('activate', 'Activate') : button('pause', 'Pause'),
    button('kill', 'Kill', 'danger'));
}
