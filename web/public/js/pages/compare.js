// Comparisons (issue 38), polled every 5 s while one of the compared trials is unfinished:
//   /compare/3,7,9               two to ten trials side by side;
//   /compare/experiments/4,5     two to ten experiments, each by its best trial (the searcher
//                                metric's best validation): a baseline against its fork.
// Both show the hyperparameters in one table (rows whose values differ are marked), the best and
// latest validation, progress, restarts, checkpoints and run time (from the experiments' trial
// tables and the trials' series), and one chart per metric with a line per trial; the x axis is
// batches, time since the trial's first report, or epochs (when every trial's config has
// records_per_epoch).

import { api, describeError } from '../api.js';
import { LineChart } from '../chart.js';
import { flatten } from '../experiment/search_views.js';
import { recordsPerEpoch, searcherOf } from '../experiment_summary.js';
import { isMetric, listSeries, seriesData } from '../trial/series.js';
import {
  el, errorBox, fill, fmtDuration, fmtNum, kFinalTrialStates, stateBadge,
} from '../util.js';

const kMinCompared = 2;
const kMaxCompared = 10;

function parseIds(list) {
  return [...new Set(list.split(',').filter(Boolean).map(Number))];
}

export function comparePage(main, [list], ctx) {
  const ids = parseIds(list);
  comparison(main, ctx, {
    title: `Comparing trials ${ids.join(', ')}`, ids, usage: '/compare/ID,ID,...', what: 'trials',
    load: (signal) => trialColumns(ids, signal),
  });
}

export function compareExperimentsPage(main, [list], ctx) {
  const ids = parseIds(list);
  comparison(main, ctx, {
    title: `Comparing experiments ${ids.join(', ')} (their best trials)`, ids,
    usage: '/compare/experiments/ID,ID,...', what: 'experiments',
    load: (signal) => experimentColumns(ids, signal),
  });
}

// The page: a table of facts and one chart per metric, for `load`'s columns.
function comparison(main, ctx, { title, ids, usage, what, load }) {
  const status = el('div', { 'aria-live': 'polite' });
  const facts = el('div', { id: 'compare-table' });
  const charts = el('div', { id: 'compare-charts', class: 'charts' });
  const axis = el('select', { id: 'compare-x' },
    el('option', { value: 'batch' }, 'Batches'), el('option', { value: 'time' }, 'Time since the first report'));
  fill(main, el('h1', {}, title), status, facts,
    el('section', { 'aria-labelledby': 'compare-charts-title' },
      el('h2', { id: 'compare-charts-title' }, 'Metrics'),
      el('div', { class: 'controls' }, el('label', { for: 'compare-x' }, 'X axis'), axis), charts));
  if (ids.length < kMinCompared || ids.length > kMaxCompared || ids.some((i) => !Number.isInteger(i) || i < 1)) {
    status.replaceChildren(errorBox(`Compare ${kMinCompared} to ${kMaxCompared} ${what}: ${usage}`));
    return;
  }
  const byName = new Map();  // metric -> LineChart
  const clear = () => { byName.forEach((c) => c.destroy()); byName.clear(); fill(charts); };
  ctx.onCleanup(clear);
  let columns = [];
  let series = [];  // per column: [{name, points}] of its metrics
  const draw = () => drawCharts(columns, series, charts, byName, axis.value);
  axis.addEventListener('change', () => { clear(); draw(); });
  let done = false;
  ctx.every(5000, async () => {
    if (done) return;
    try {
      columns = await load(ctx.signal);
      series = await readSeries(columns, ctx.signal);
      if (columns.every((c) => c.epochsPerBatch > 0) && !axis.querySelector('option[value=epoch]')) {
        axis.append(el('option', { value: 'epoch' }, 'Epochs'));
      }
      fill(facts, factsTable(columns, series));
      draw();
      done = columns.every((c) => c.trial === null || kFinalTrialStates.has(c.row.state));
      status.replaceChildren();
    } catch (e) {
      if (e.name !== 'AbortError') status.replaceChildren(errorBox(`Could not compare: ${describeError(e)}`));
    }
  });
}

// Per experiment id, its description and trial table (read once per load).
async function experimentsOf(ids, signal) {
  const out = new Map();
  await Promise.all([...new Set(ids)].map(async (id) => {
    const [detail, table] = await Promise.all([
      api(`/experiments/${id}`, { signal }), api(`/experiments/${id}/trials`, { signal })]);
    out.set(id, { detail, table });
  }));
  return out;
}

// A compared trial: {trial, label, href, experiment, name, metric, row, epochsPerBatch}; `trial`
// null for an experiment with no validated trial yet.
function column(trialId, experimentId, { detail, table }, label, href) {
  const row = table.trials.find((r) => r.trial_id === trialId) || { state: detail.state };
  const records = recordsPerEpoch(detail.config);
  const batchSize = Number(row.hparams?.global_batch_size);
  return {
    trial: trialId, label, href, experiment: experimentId, name: detail.name,
    metric: table.metric || searcherOf(detail.config).metric, row,
    epochsPerBatch: records > 0 && batchSize > 0 ? batchSize / records : 0,
  };
}

async function trialColumns(ids, signal) {
  const trials = await Promise.all(ids.map((id) => api(`/trials/${id}`, { signal })));
  const experiments = await experimentsOf(trials.map((t) => t.experiment_id), signal);
  return trials.map((t) => column(t.id, t.experiment_id, experiments.get(t.experiment_id),
    `Trial ${t.id}`, `/trials/${t.id}`));
}

async function experimentColumns(ids, signal) {
  const experiments = await experimentsOf(ids, signal);
  return ids.map((id) => {
    const e = experiments.get(id);
    const best = e.table.best_trial ?? null;
    const label = best === null ? `Experiment ${id}` : `Experiment ${id} · trial ${best}`;
    return column(best, id, e, label, `/experiments/${id}`);
  });
}

// Each column's training and validation series (batch, time, value per point).
async function readSeries(columns, signal) {
  return Promise.all(columns.map(async (c) => {
    if (c.trial === null) return [];
    const names = (await listSeries(c.trial, signal)).filter((s) => !s.label && isMetric(s.name)).map((s) => s.name);
    return seriesData(c.trial, [...new Set(names)].sort(), signal);
  }));
}

// Seconds from a trial's first report to its last (any metric): how long it trained so far.
function reportSpan(list) {
  const times = list.flatMap((s) => s.points.map((p) => p[1]));
  return times.length ? Math.max(...times) - Math.min(...times) : null;
}

function factsTable(columns, series) {
  const hp = columns.map((c) => flatten(c.row.hparams));
  const names = [...new Set(hp.flatMap((h) => Object.keys(h)))].sort();
  const v = (x) => (x === undefined || x === null ? '—' : typeof x === 'number' ? fmtNum(x) : String(x));
  const line = (label, values, mark) => {
    const cells = values.map(v);
    const differs = mark && new Set(cells).size > 1;
    return el('tr', { class: differs ? 'differs' : null, dataset: { field: label } },
      el('th', { scope: 'row' }, label, differs ? el('span', { class: 'differs-mark', title: 'the values differ' }, ' ≠') : ''),
      cells.map((c) => el('td', { class: 'num' }, c)));
  };
  const metricOf = (c, which) => (c.row[which] ? c.row[which].metrics[c.metric] : null);
  const span = series.map(reportSpan);
  return el('div', { class: 'table-wrap' }, el('table', { id: 'compare-facts' },
    el('caption', { class: 'visually-hidden' }, 'The compared trials side by side'),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Field'),
      columns.map((c) => el('th', { scope: 'col' }, el('a', { href: c.href }, c.label))))),
    el('tbody', {},
      el('tr', {}, el('th', { scope: 'row' }, 'State'), columns.map((c) => el('td', {}, stateBadge(c.row.state)))),
      line('Experiment', columns.map((c) => `${c.experiment} ${c.name}`), true),
      line('Trial', columns.map((c) => c.trial), false),
      line('Searcher metric', columns.map((c) => c.metric), true),
      names.map((n) => line(n, hp.map((h) => h[n]), true)),
      line('Best validation', columns.map((c) => metricOf(c, 'best_validation')), false),
      line('Best at batch', columns.map((c) => c.row.best_validation?.batches), false),
      line('Latest validation', columns.map((c) => metricOf(c, 'latest_validation')), false),
      line('Batches', columns.map((c) => c.row.batches), false),
      line('Run time (first to last report)', span.map((s) => (s === null ? null : fmtDuration(s * 1000))), false),
      line('Restarts', columns.map((c) => c.row.restarts), false),
      line('Checkpoints', columns.map((c) => c.row.checkpoints), false))));
}

// One chart per metric any compared trial reports, a line per column (x: `axis`).
function drawCharts(columns, series, box, byName, axis) {
  const names = [...new Set(series.flat().map((s) => s.name))].sort();
  const starts = series.map((list) => Math.min(...list.flatMap((s) => s.points.map((p) => p[1]))));
  const xOf = (i) => ({
    batch: (p) => p[0],
    time: (p) => p[1] - starts[i],
    epoch: (p) => p[0] * columns[i].epochsPerBatch,
  }[axis]);
  const label = { batch: 'batch', time: 'seconds since the first report', epoch: 'epoch' }[axis];
  for (const name of names) {
    if (!byName.has(name)) {
      const cell = el('div', { class: 'chart-cell', dataset: { series: name } });
      box.append(cell);
      byName.set(name, new LineChart(cell, { title: name, xLabel: label, height: 220 }));
    }
    byName.get(name).setLines(columns.map((c, i) => {
      const s = series[i].find((d) => d.name === name);
      const x = xOf(i);
      const points = s ? s.points.map((p) => [x(p), p[2]]) : [];
      points.sort((a, b) => a[0] - b[0]);
      return { label: c.label.toLowerCase(), points };
    }));
  }
}
