// Trial comparison (issue 38): two to ten trials side by side, /compare/3,7,9. Their
// hyperparameters in one table (rows whose values differ are marked), their best and latest
// validation, progress, restarts and checkpoints (from their experiments' trial tables), and one
// chart per metric with a line per trial (from each trial's series), x in batches. Polled every
// 5 s while one of them is unfinished.

import { api, describeError } from '../api.js';
import { LineChart } from '../chart.js';
import { flatten } from '../experiment/search_views.js';
import { isMetric, listSeries, seriesData } from '../trial/series.js';
import { el, errorBox, fill, fmtNum, kFinalTrialStates, stateBadge } from '../util.js';

export function comparePage(main, [list], ctx) {
  const ids = [...new Set(list.split(',').filter(Boolean).map(Number))];
  const status = el('div', { 'aria-live': 'polite' });
  const facts = el('div', { id: 'compare-table' });
  const charts = el('div', { id: 'compare-charts' });
  fill(main, el('h1', {}, `Comparing trials ${ids.join(', ')}`), status, facts,
    el('section', { 'aria-labelledby': 'compare-charts-title' }, el('h2', { id: 'compare-charts-title' }, 'Metrics'), charts));
  if (ids.length < 2 || ids.length > 10 || ids.some((i) => !Number.isInteger(i) || i < 1)) {
    status.replaceChildren(errorBox('Compare 2 to 10 trials: /compare/ID,ID,...'));
    return;
  }
  const byName = new Map();  // metric -> LineChart
  ctx.onCleanup(() => byName.forEach((c) => c.destroy()));
  let done = false;
  ctx.every(5000, async () => {
    if (done) return;
    try {
      const rows = await loadRows(ids, ctx.signal);
      fill(facts, factsTable(ids, rows));
      await drawCharts(ids, charts, byName, ctx.signal);
      done = rows.every((r) => kFinalTrialStates.has(r.state));
      status.replaceChildren();
    } catch (e) {
      if (e.name !== 'AbortError') status.replaceChildren(errorBox(`Could not compare: ${describeError(e)}`));
    }
  });
}

// Each trial's row of its experiment's trial table, with its experiment and searcher metric.
async function loadRows(ids, signal) {
  const trials = await Promise.all(ids.map((id) => api(`/trials/${id}`, { signal })));
  const tables = new Map();
  for (const t of trials) {
    if (!tables.has(t.experiment_id)) tables.set(t.experiment_id, await api(`/experiments/${t.experiment_id}/trials`, { signal }));
  }
  return trials.map((t) => {
    const table = tables.get(t.experiment_id);
    const row = table.trials.find((r) => r.trial_id === t.id) || {};
    return { ...row, id: t.id, experiment: t.experiment_id, metric: table.metric, state: t.state };
  });
}

function factsTable(ids, rows) {
  const hp = rows.map((r) => flatten(r.hparams));
  const names = [...new Set(hp.flatMap((h) => Object.keys(h)))].sort();
  const metric = rows[0].metric;
  const v = (x) => (x === undefined || x === null ? '—' : typeof x === 'number' ? fmtNum(x) : String(x));
  const line = (label, values, mark) => {
    const cells = values.map(v);
    const differs = mark && new Set(cells).size > 1;
    return el('tr', { class: differs ? 'differs' : null, dataset: { field: label } },
      el('th', { scope: 'row' }, label, differs ? el('span', { class: 'differs-mark', title: 'the values differ' }, ' ≠') : ''),
      cells.map((c) => el('td', { class: 'num' }, c)));
  };
  const point = (r, which) => r[which] || null;
  return el('div', { class: 'table-wrap' }, el('table', { id: 'compare-facts' },
    el('caption', { class: 'visually-hidden' }, 'The trials side by side'),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Field'),
      ids.map((id) => el('th', { scope: 'col' }, el('a', { href: `/trials/${id}` }, `Trial ${id}`))))),
    el('tbody', {},
      el('tr', {}, el('th', { scope: 'row' }, 'State'), rows.map((r) => el('td', {}, stateBadge(r.state)))),
      line('Experiment', rows.map((r) => r.experiment), false),
      names.map((n) => line(n, hp.map((h) => h[n]), true)),
      line(`Best ${metric}`, rows.map((r) => (point(r, 'best_validation') ? point(r, 'best_validation').metrics[metric] : null)), false),
      line('Best at batch', rows.map((r) => (point(r, 'best_validation') ? point(r, 'best_validation').batches : null)), false),
      line(`Latest ${metric}`, rows.map((r) => (point(r, 'latest_validation') ? point(r, 'latest_validation').metrics[metric] : null)), false),
      line('Batches', rows.map((r) => r.batches), false),
      line('Restarts', rows.map((r) => r.restarts), false),
      line('Checkpoints', rows.map((r) => r.checkpoints), false))));
}

// One chart per metric any of the trials reports, a line per trial.
async function drawCharts(ids, box, byName, signal) {
  const lists = await Promise.all(ids.map((id) => listSeries(id, signal)));
  const names = [...new Set(lists.flatMap((l) => l.filter((s) => !s.label && isMetric(s.name)).map((s) => s.name)))].sort();
  const data = await Promise.all(ids.map((id, i) => seriesData(id, names.filter((n) => lists[i].some((s) => s.name === n)), signal)));
  for (const name of names) {
    if (!byName.has(name)) byName.set(name, new LineChart(box, { title: name, xLabel: 'batch', height: 220 }));
    byName.get(name).setLines(ids.map((id, i) => {
      const s = data[i].find((d) => d.name === name);
      return { label: `trial ${id}`, points: s ? s.points.map((p) => [p[0], p[2]]) : [] };
    }));
  }
}
