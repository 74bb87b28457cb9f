// Experiment: its summary and actions, its trials, the learning curves of all trials on one
// chart (GET /api/v1/experiments/{id}/series/data?name=validation/<searcher metric> by default,
// any metric selectable) and the effective config. Polled every 2 s while it is unfinished.

import { api, describeError } from '../api.js';
import { LineChart } from '../chart.js';
import { experimentActions } from '../experiment_actions.js';
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
  const curves = el('section', { 'aria-labelledby': 'curves-title' },
    el('h2', { id: 'curves-title' }, 'Learning curves'));
  const config = el('pre', { id: 'config', class: 'config', tabindex: '0' });
  const checkpoints = new Checkpoints(ctx);
  fill(main, title, status, summary,
    el('section', { 'aria-labelledby': 'trials-title' }, el('h2', { id: 'trials-title' }, 'Trials'), trials),
    curves,
    el('section', { 'aria-labelledby': 'checkpoints-title' }, el('h2', { id: 'checkpoints-title' }, 'Checkpoints'), checkpoints.box),
    el('section', { 'aria-labelledby': 'config-title' }, el('h2', { id: 'config-title' }, 'Effective config'), config));
  const chart = new CurvesChart(curves, id, ctx);
  ctx.onCleanup(() => chart.destroy());

  let detail = null;
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
    redrawKeepingFocus(summary, () => fill(summary, summaryList(detail),
      kFinalExperimentStates.has(detail.state) ? null : experimentActions(detail, onDone)));
    await rungs.update(detail);
    redrawKeepingFocus(trials, () => fill(trials, trialsTable(detail, sort, rungs)));
    if (config.textContent !== detail.config) config.textContent = detail.config;
    await checkpoints.update(detail);
    await chart.update(detail);
  });
}

function summaryList(d) {
  const best = bestMetric(d);
  const searcher = searcherOf(d.config);
  const item = (term, value) => [el('dt', {}, term), el('dd', {}, value)];
  return el('dl', { class: 'summary' },
    item('State', stateBadge(d.state)),
    item('Progress', progressBar(experimentProgress({ trials: d.trials.length, trials_done: 0 }, d), 'experiment progress')),
    item('Owner', d.owner || '—'),
    item('Template', d.template || 'none'),
    item('Created', fmtTime(d.created_ms)),
    item('Slots per trial', d.slots_per_trial),
    item('Priority', d.priority),
    item('Max restarts', d.max_restarts),
    item(`Best ${searcher.metric || 'metric'} (${searcher.smallerIsBetter ? 'smaller' : 'larger'} is better)`,
      best ? `${fmtNum(best.value)} (trial ${best.trial})` : '—'));
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

// The chart of one metric for every trial, with a select of the metrics the trials report.
class CurvesChart {
  constructor(section, id, ctx) {
    this.id = id;
    this.ctx = ctx;
    this.select = el('select', { id: 'curve-metric' });
    this.select.addEventListener('change', () => this.load());
    this.message = el('div', { 'aria-live': 'polite' });
    section.append(el('div', { class: 'controls' }, el('label', { for: 'curve-metric' }, 'Metric'), this.select), this.message);
    this.chart = new LineChart(section, { title: 'Metric by batch, one line per trial', xLabel: 'batch', height: 300 });
    this.names = '';
    this.loadedFor = '';
  }

  async update(detail) {
    this.detail = detail;
    const first = detail.trials[0];
    if (!first) return;
    const list = await api(`/trials/${first.id}/series`, { signal: this.ctx.signal });
    const names = [...new Set(list.series.map((s) => s.name))]
      .filter((n) => /^(training|validation)\//.test(n) && !n.startsWith('training/timings/')).sort();
    if (names.join('\n') !== this.names) {
      this.names = names.join('\n');
      const chosen = this.select.value;
      const { metric } = searcherOf(detail.config);
      const preferred = [chosen, `validation/${metric}`, names.find((n) => n.startsWith('validation/')), names[0]]
        .find((n) => n && names.includes(n));
      fill(this.select, names.map((n) => el('option', { value: n }, n)));
      if (preferred) this.select.value = preferred;
    }
    const running = !kFinalExperimentStates.has(detail.state);
    if (running || this.loadedFor !== this.select.value) await this.load();
  }

  async load() {
    const name = this.select.value;
    if (!name) return;
    try {
      const data = await api(`/experiments/${this.id}/series/data?name=${encodeURIComponent(name)}`, { signal: this.ctx.signal });
      this.chart.setLines(data.trials.map((t) => ({
        label: `trial ${t.trial_id}`, points: t.points.map((p) => [p[0], p[2]]),
      })));
      this.loadedFor = name;
      this.message.replaceChildren();
    } catch (e) {
      if (e.name !== 'AbortError') this.message.replaceChildren(errorBox(`Could not read ${name}: ${describeError(e)}`));
    }
  }

  destroy() { this.chart.destroy(); }
}

// A finished trial whose last rung is short of its length: adaptive_asha did not promote it.
function stoppedEarly(t, lastRung) {
  return kFinalTrialStates.has(t.state) && t.total_batches > 0 && lastRung < t.total_batches;
}

// adaptive_asha's record of each trial: the rungs it reached (length and searcher metric, from
// GET /api/v1/trials/{id}/metrics?kind=searcher) and where it was stopped. Read again while
// the trial is unfinished.
class Rungs {
  constructor(ctx) {
    this.ctx = ctx;
    this.enabled = false;
    this.byTrial = new Map();  // id -> {state, rows: [{steps_completed, metrics}]}
  }

  async update(detail) {
    this.enabled = searcherOf(detail.config).name === 'adaptive_asha';
    if (!this.enabled) return;
    const stale = detail.trials.filter((t) => {
      const known = this.byTrial.get(t.id);
      return !known || !kFinalTrialStates.has(known.state);
    });
    await Promise.all(stale.map(async (t) => {
      try {
        const page = await api(`/trials/${t.id}/metrics?kind=searcher`, { signal: this.ctx.signal });
        this.byTrial.set(t.id, { state: t.state, rows: page.metrics });
      } catch (e) {
        if (e.name !== 'AbortError') this.byTrial.set(t.id, { state: null, rows: [], error: describeError(e) });
      }
    }));
  }

  reached(t) {
    const rows = this.byTrial.get(t.id)?.rows || [];
    return rows.length ? rows[rows.length - 1].steps_completed : null;
  }

  cell(t) {
    const known = this.byTrial.get(t.id);
    if (!known) return '—';
    if (known.error) return el('span', { class: 'reason' }, known.error);
    if (known.rows.length === 0) return el('span', { class: 'muted' }, 'no rung yet');
    const rows = known.rows.map((r) => `${fmtNum(r.steps_completed)}: ${fmtNum(r.metrics.searcher_metric)}`);
    const last = known.rows[known.rows.length - 1].steps_completed;
    return el('span', { class: 'rungs', dataset: { rungs: known.rows.length } }, rows.join(' → '),
      stoppedEarly(t, last) ? el('strong', {}, ` (stopped at rung ${fmtNum(last)})`) : null);
  }
}

// Every trial's checkpoints (GET /api/v1/trials/{id}/checkpoints), read again when a trial's
// latest checkpoint changes.
class Checkpoints {
  constructor(ctx) {
    this.ctx = ctx;
    this.box = el('div', { id: 'experiment-checkpoints' });
    this.byTrial = new Map();  // id -> {latest, list}
  }

  async update(detail) {
    const changed = detail.trials.filter((t) => t.latest_checkpoint &&
      this.byTrial.get(t.id)?.latest !== t.latest_checkpoint);
    if (changed.length === 0 && this.byTrial.size) return;
    await Promise.all(changed.map(async (t) => {
      try {
        const page = await api(`/trials/${t.id}/checkpoints`, { signal: this.ctx.signal });
        this.byTrial.set(t.id, { latest: t.latest_checkpoint, list: page.checkpoints });
      } catch (e) {
        if (e.name !== 'AbortError') this.box.replaceChildren(errorBox(`Could not read trial ${t.id}'s checkpoints: ${describeError(e)}`));
      }
    }));
    const rows = [...this.byTrial].flatMap(([trial, { list }]) => list.map((c) => ({ trial, ...c })))
      .sort((a, b) => a.trial - b.trial || a.steps_completed - b.steps_completed);
    fill(this.box, table([
      { title: 'Trial', class: 'num', cell: (c) => el('a', { href: `/trials/${c.trial}?tab=checkpoints` }, c.trial) },
      { title: 'Batches', class: 'num', cell: (c) => fmtNum(c.steps_completed) },
      { title: 'Storage id', cell: (c) => el('code', {}, c.storage_id) },
      { title: 'Path', cell: (c) => el('code', { class: 'hparams' }, c.path) },
    ], rows, { empty: 'No checkpoints yet.', caption: 'Checkpoints', rowAttrs: (c) => ({ dataset: { storageId: c.storage_id } }) }));
  }
}
