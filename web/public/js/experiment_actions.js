// Pause, activate and kill an experiment (POST /api/v1/experiments/{id}/{action}), shared by the
// experiments list and the experiment page; archive, unarchive and delete an ended one (the
// experiment page; DELETE /api/v1/experiments/{id}). Kill and delete ask first.

import { api, describeError } from './api.js';
import { confirmDialog, el, kFinalExperimentStates } from './util.js';

// POSTs (or `method`s) to `path` (after asking `confirm`, a [question, confirm label] pair, when
// given) with `button` disabled meanwhile; `onDone(error?)` after, with `failure`'s words and the
// master's when it failed. Shared by the experiments' actions and a trial's Kill.
export async function postAction(button, { path, method = 'POST', confirm, failure }, onDone) {
  if (confirm && !(await confirmDialog(...confirm))) return;
  button.disabled = true;
  try {
    await api(path, method === 'POST' ? { method, body: {} } : { method });
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

// The buttons of an ended experiment (none for one already DELETING): Archive or Unarchive,
// then Delete, which asks first. `onDone(error?)` after Archive or Unarchive, `onDeleted(error?)`
// after Delete, as postAction's.
export function endedActions(experiment, onDone, onDeleted) {
  const { id, state, archived } = experiment;
  if (!kFinalExperimentStates.has(state) || state === 'DELETING') return null;
  const action = archived ? 'unarchive' : 'archive';
  const label = archived ? 'Unarchive' : 'Archive';
  const toggle = el('button', {
    type: 'button', 'data-action': action, 'aria-label': `${label} experiment ${id}`,
  }, label);
  toggle.addEventListener('click', () => postAction(toggle, {
    path: `/experiments/${id}/${action}`, failure: `Could not ${action} experiment ${id}`,
  }, onDone));
  return el('span', { class: 'actions' }, toggle, deleteButton(experiment, onDeleted));
}

function deleteButton(experiment, onDone) {
  const { id, name } = experiment;
  const b = el('button', {
    type: 'button', class: 'danger', 'data-action': 'delete',
    'aria-label': `Delete experiment ${id}`,
  }, 'Delete');
  b.addEventListener('click', () => postAction(b, {
    path: `/experiments/${id}`,
    method: 'DELETE',
    confirm: [`Delete experiment ${id} (${name}) with its trials, checkpoints, logs and metrics? ` +
      'This cannot be undone.', `Delete experiment ${id}`],
    failure: `Could not delete experiment ${id}`,
  }, onDone));
  return b;
}
