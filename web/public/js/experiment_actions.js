// Pause, activate and kill an experiment (POST /api/v1/experiments/{id}/{action}), shared by the
// experiments list and the experiment page. Kill asks first.

import { api, describeError } from './api.js';
import { confirmDialog, el, kFinalExperimentStates } from './util.js';

// Buttons for the actions that apply to an experiment in `state`. `onDone(error?)` is called
// after each action (with the error's words when it failed).
export function experimentActions(experiment, onDone) {
  const { id, name, state } = experiment;
  if (kFinalExperimentStates.has(state)) return el('span', { class: 'muted' }, '—');
  const run = async (action, button) => {
    if (action === 'kill' && !(await confirmDialog(
      `Kill experiment ${id} (${name})? Its running trials stop now and it cannot be resumed.`,
      `Kill experiment ${id}`))) return;
    button.disabled = true;
    try {
      await api(`/experiments/${id}/${action}`, { method: 'POST', body: {} });
      onDone(null);
    } catch (e) {
      onDone(`Could not ${action} experiment ${id}: ${describeError(e)}`);
    } finally {
      button.disabled = false;
    }
  };
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
