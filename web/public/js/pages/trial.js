// Trial: its summary and, until it ends, a Kill button; then tabs: metric charts (live), logs
// (follow, rank filter, search, download), checkpoints, hyperparameters and the profiler (system
// metrics per agent, the step's timings, the trace download).

import { api, describeError } from '../api.js';
import { profilingEnabled, recordsPerEpoch } from '../experiment_summary.js';
import { el, errorBox, fill, fmtNum, fmtTime, kFinalTrialStates, progressBar, stateBadge, table } from '../util.js';
import { postAction } from '../experiment_actions.js';
import { tabView } from '../tabs.js';
import { where } from './experiment.js';
import { MetricsTab } from '../trial/metrics_tab.js';
import { LogsTab } from '../trial/logs_tab.js';
import { ProfilerTab } from '../trial/profiler_tab.js';
import { checkpointsPanel, hparamsPanel } from '../trial/info_tabs.js';

export function trialPage(main, [id], ctx) {
  const title = el('h1', {}, `Trial ${id}`);
  const status = el('div', { 'aria-live': 'polite' });
  const summary = el('div', { id: 'trial-summary' });
  const actions = el('div', { id: 'trial-actions', class: 'actions' });
  const hparams = el('div', { id: 'hparams' });
  const checkpoints = el('div', { id: 'checkpoints' });
  const trial = { id, state: null, running: () => trial.state && !kFinalTrialStates.has(trial.state) };
  const metrics = new MetricsTab(trial, ctx);
  const logs = new LogsTab(trial, ctx);
  const profiler = new ProfilerTab(trial, ctx);
  fill(main, title, actions, status, summary);
  let actionsFor = null;  // the state the actions were drawn for (redrawn only when it changes)

  let started = false;
  let finalSeen = 0;
  ctx.every(2000, async () => {
    if (trial.state && !trial.running() && finalSeen++ > 2) return;
    let t;
    try {
      t = await api(`/trials/${id}`, { signal: ctx.signal });
      status.replaceChildren();
    } catch (e) {
      if (e.name !== 'AbortError') status.replaceChildren(errorBox(`Could not read trial ${id}: ${describeError(e)}`));
      return;
    }
    trial.state = t.state;
    trial.description = t;
    fill(title, `Trial ${t.id} `, stateBadge(t.state));
    if (t.state !== actionsFor) {
      actionsFor = t.state;
      fill(actions, killButton(t, (error) => status.replaceChildren(error ? errorBox(error) : '')));
    }
    fill(summary, summaryList(t));
    fill(hparams, hparamsPanel(t));
    checkpointsPanel(checkpoints, t, ctx);
    if (!started) {
      started = true;
      loadEpochs(t, trial, metrics, ctx);
      main.append(tabView([
        { id: 'metrics', label: 'Metrics', panel: metrics.panel, onShow: () => metrics.show() },
        { id: 'logs', label: 'Logs', panel: logs.panel, onShow: () => logs.show() },
        { id: 'checkpoints', label: 'Checkpoints', panel: checkpoints },
        { id: 'hparams', label: 'Hyperparameters', panel: hparams },
        { id: 'profiler', label: 'Profiler', panel: profiler.panel, onShow: () => profiler.show() },
      ], 'metrics'));
    }
  });
}

// Kill (POST /api/v1/trials/{id}/kill) while the trial has not ended; its experiment goes on
// with its other trials. Asks first. `onDone(error?)` after the request.
function killButton(t, onDone) {
  if (['COMPLETED', 'CANCELED', 'ERROR'].includes(t.state)) return null;
  const button = el('button', {
    type: 'button', class: 'danger', 'data-action': 'kill', 'aria-label': `Kill trial ${t.id}`,
  }, 'Kill trial');
  button.addEventListener('click', () => postAction(button, {
    path: `/trials/${t.id}/kill`,
    confirm: [`Kill trial ${t.id}? It stops now and cannot be resumed; experiment ` +
      `${t.experiment_id} goes on with its other trials.`, `Kill trial ${t.id}`],
    failure: `Could not kill trial ${t.id}`,
  }, onDone));
  return button;
}

function summaryList(t) {
  const item = (term, value) => [el('dt', {}, term), el('dd', {}, value)];
  return el('dl', { class: 'summary' },
    item('Experiment', el('a', { href: `/experiments/${t.experiment_id}` }, `Experiment ${t.experiment_id}`)),
    item('State', stateBadge(t.state)),
    item('Progress', progressBar(t.total_batches ? t.batches / t.total_batches : null, 'trial progress')),
    item('Batches', `${fmtNum(t.batches)} / ${t.total_batches ? fmtNum(t.total_batches) : '?'}`),
    item('Searcher metric', fmtNum(t.searcher_metric)),
    item('Restarts', t.restarts),
    item('Where / why waiting', where(t)),
    t.error_lines ? item('Error', el('pre', { class: 'error-lines' }, t.error_lines)) : null,
    t.log_policy_matches && t.log_policy_matches.length
      ? item('Log policies matched', logPolicyMatches(t.log_policy_matches)) : null);
}

// The first line of each run that matched each of the experiment's log policies, and what the
// policy did (cancel_retries: no restart; exclude_node: later runs avoid the agent).
function logPolicyMatches(matches) {
  return el('div', { id: 'log-policy-matches' }, table([
    { title: 'Policy', cell: (m) => m.policy },
    { title: 'Action', cell: (m) => m.action || '—' },
    { title: 'Agent', cell: (m) => m.agent },
    { title: 'Rank', class: 'num', cell: (m) => (m.rank < 0 ? '—' : m.rank) },
    { title: 'When', cell: (m) => fmtTime(m.time_ms) },
    { title: 'Line', cell: (m) => el('code', {}, m.line) },
  ], matches, { caption: 'Log policies matched' }));
}

// Offers epochs on the metrics' x axis when the experiment's config says how many records an
// epoch has and the trial its global batch size.
// The experiment's config: epochs for the metrics' x axis, and whether the trial is profiled.
async function loadEpochs(t, trial, metrics, ctx) {
  try {
    const experiment = await api(`/experiments/${t.experiment_id}`, { signal: ctx.signal });
    trial.profiled = profilingEnabled(experiment.config);
    const records = recordsPerEpoch(experiment.config);
    const batchSize = Number(t.hparams.global_batch_size);
    if (records > 0 && batchSize > 0) metrics.enableEpochs(batchSize / records);
  } catch (e) {
    if (e.name !== 'AbortError') console.warn(`epochs of trial ${t.id}: ${describeError(e)}`);
  }
}
