// Experiment: its summary and actions, its trials, the learning curves of all trials on one
// chart (GET /api/v1/experiments/{id}/series/data?name=validation/<searcher metric> by default,
// any metric selectable) and the effective config. Polled every 2 s while it is unfinished.

import { api, describeError } from '../api.js';
import { endedActions, experimentActions } from '../experiment_actions.js';
import { navigate } from '../main.js';
import { Checkpoints } from '../experiment/checkpoints.js';
import { CurvesChart } from '../experiment/curves_chart.js';
import { Rungs } from '../experiment/rungs.js';
import { SearchViews } from '../experiment/search_views.js';
import { bestMetric, experimentProgress, searcherOf } from '../experiment_summary.js';
import {
  el, errorBox, fill, fmtNum, fmtTime, kFinalExperimentStates, kFinalTrialStates, progressBar,
  redrawKeepingFocus,
  SortState, stateBadge, table,
} from '../util.js';

export function experimentPage(main, [id], ctx) {
  const title = el('h1', {}, `Experiment ${id}`);
  const status = el('div', { 'aria-live': 'polite' });
  const summary = el('div', { id: 'experiment-summary' });
  const trials = el('div', { id: 'trials' });
  const curves = el('section', { 'aria-labelledby': 'curves-title', id: 'curves' },
    el('h2', { id: 'curves-title' }, 'Learning curves'));
  const search = el('section', { 'aria-labelledby': 'search-title', id: 'search' },
    el('h2', { id: 'search-title' }, 'Hyperparameters and results'));
  const config = el('pre', { id: 'config', class: 'config', tabindex: '0' });
  const checkpoints = new Checkpoints(ctx);
  fill(main, title, status, summary,
    el('section', { 'aria-labelledby': 'trials-title' }, el('h2', { id: 'trials-title' }, 'Trials'), trials),
    search,
    curves,
    el('section', { 'aria-labelledby': 'checkpoints-title' }, el('h2', { id: 'checkpoints-title' }, 'Checkpoints'), checkpoints.box),
    el('section', { 'aria-labelledby': 'config-title' }, el('h2', { id: 'config-title' }, 'Effective config'), config));
  const chart = new CurvesChart(curves, id, ctx);
  const views = new SearchViews(search, id, ctx);
  views.onSelect = (selected) => chart.highlight(selected);  // selected trials stand out
  ctx.onCleanup(() => chart.destroy());

  let detail = null;
  let validations = null;  // the series of the searcher's validation metric, for the best
  let finalSeen = 0;
  const rungs = new Rungs(ctx);
  const sort = new SortState('trials', () => redrawKeepingFocus(trials, () => fill(trials, trialsTable(detail, sort, rungs))));
  ctx.every(2000, async () => {
    if (detail && kFinalExperimentStates.has(detail.state) && finalSeen++ > 1) return;
    try {
      detail = await api(`/experiments/${id}`, { signal: ctx.signal });
      status.replaceChildren();
    } catch (e) {
      if (e.name === 'AbortError') return;
      status.replaceChildren(errorBox(`Could not read experiment ${id}: ${describeError(e)}`));
      return;
    }
    const onDone = (error) => status.replaceChildren(error ? errorBox(error) : '');
    fill(title, `Experiment ${detail.id}: ${detail.name} `, stateBadge(detail.state));
    // Once deleted, the experiment is gone: back to the list, which shows it DELETING until then.
    const onDeleted = (error) => (error ? onDone(error) : navigate('/experiments'));
    // Archiving changes an ended experiment: read it again (its polls had stopped).
    const onArchived = (error) => { finalSeen = 0; onDone(error); };
    redrawKeepingFocus(summary, () => fill(summary, summaryList(detail, validations),
      kFinalExperimentStates.has(detail.state) ? endedActions(detail, onArchived, onDeleted)
        : experimentActions(detail, onDone)));
    await rungs.update(detail);
    redrawKeepingFocus(trials, () => fill(trials, trialsTable(detail, sort, rungs)));
    if (config.textContent !== detail.config) config.textContent = detail.config;
    await checkpoints.update(detail);
    await views.update(detail);
    await chart.update(detail);
    const read = await validationsOf(detail, chart, ctx);
    if (read) {
      validations = read;
      redrawKeepingFocus(summary, () => summary.querySelector('dl.summary')?.replaceWith(summaryList(detail, validations)));
    }
  });
}

// The experiment's validation/<searcher metric> series for the best metric: the chart's when it
// shows that series, else read (null when the config names no metric or the read fails: the
// best then comes from the trials' searcher_metric alone).
async function validationsOf(detail, chart, ctx) {
  const { metric } = searcherOf(detail.config);
  if (!metric) return null;
  const name = `validation/${metric}`;
  if (chart.data?.name === name) return chart.data;
  try {
    return await api(`/experiments/${detail.id}/series/data?name=${encodeURIComponent(name)}`, { signal: ctx.signal });
  } catch (e) {
    return null;
  }
}

function summaryList(d, validations) {
  const best = bestMetric(d, validations);
  const searcher = searcherOf(d.config);
  const item = (term, value) => [el('dt', {}, term), el('dd', {}, value)];
  return el('dl', { class: 'summary' },
    item('State', stateBadge(d.state)),
    item('Progress', progressBar(experimentProgress({
      trials: d.trials.length, trials_done: d.trials.filter((t) => kFinalTrialStates.has(t.state)).length,
    }, d), 'experiment progress')),
    item('Owner', d.owner || '—'),
    d.archived ? item('Archived', 'yes: hidden from the list unless asked for') : [],
    item('Template', d.template || 'none'),
    item('Created', fmtTime(d.created_ms)),
    item('Slots per trial', d.slots_per_trial),
    item('Priority', d.priority),
    item('Max restarts', d.max_restarts),
    item(`Best ${searcher.metric || 'metric'} (${searcher.smallerIsBetter ? 'smaller' : 'larger'} is better)`,
      best ? el('span', { id: 'experiment-best' }, `${fmtNum(best.value)} (`,
        el('a', { id: 'best-trial', href: `/trials/${best.trial}` }, `trial ${best.trial}`), ')') : '—'));
}

function trialsTable(d, sort, rungs) {
  return table([
    { title: 'Trial', class: 'num', cell: (t) => el('a', { href: `/trials/${t.id}` }, t.id), sort: (t) => t.id },
    { title: 'State', cell: (t) => stateBadge(t.state), sort: (t) => t.state },
    { title: 'Progress', cell: (t) => progressBar(t.total_batches ? t.batches / t.total_batches : null, `progress of trial ${t.id}`), sort: (t) => (t.total_batches ? t.batches / t.total_batches : null) },
    { title: 'Batches', class: 'num', cell: (t) => `${fmtNum(t.batches)} / ${t.total_batches ? fmtNum(t.total_batches) : '?'}`, sort: (t) => t.batches },
    { title: 'Searcher metric', class: 'num', cell: (t) => fmtNum(t.searcher_metric), sort: (t) => t.searcher_metric },
    { title: 'Hyperparameters', cell: (t) => el('code', { class: 'hparams' }, compactJson(t.hparams)) },
    { title: 'Restarts', class: 'num', cell: (t) => t.restarts, sort: (t) => t.restarts },
    ...(rungs.enabled ? [{ title: 'ASHA rungs', cell: (t) => rungs.cell(t), sort: (t) => rungs.reached(t) }] : []),
    { title: 'Checkpoint', cell: (t) => (t.latest_checkpoint ? el('code', { title: t.latest_checkpoint }, `${t.latest_checkpoint.slice(0, 8)}…`) : '—') },
    { title: 'Where / why waiting', cell: (t) => where(t) },
  ], d.trials, { empty: 'No trials yet.', caption: 'Trials', rowAttrs: (t) => ({ dataset: { key: t.id, trialId: t.id, state: t.state } }), sort });
}

export function where(t) {
  if (t.waiting_reason) return el('span', { class: 'reason' }, t.waiting_reason);
  if (t.agents && t.agents.length) return t.agents.map((a) => `${a.agent} (${a.slots})`).join(', ');
  return '—';
}

export function compactJson(value) {
  return Object.entries(value || {}).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' ');
}
