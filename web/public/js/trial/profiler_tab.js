// The trial's Profiler tab: the machines' system metrics (one chart per metric, one line per
// agent or GPU: the series' label), the step's timing breakdown (training/timings/<phase>: a
// chart and a table of mean milliseconds and share of a step) and the trace download
// (GET /api/v1/trials/{id}/trace, Trace Event Format JSON for chrome://tracing or Perfetto).

import { api, describeError, download } from '../api.js';
import { LineChart } from '../chart.js';
import { el, errorBox, fill, fmtBytes, fmtNum, table } from '../util.js';
import { isMetric, kTimingsPrefix, listSeries, seriesDataOf } from './series.js';

// Units of the system metrics (docs/observability.md#profiling).
const kSystem = {
  cpu_util_simple: { title: 'CPU utilization (% of all CPUs)', format: fmtNum },
  free_memory: { title: 'Free memory', format: fmtBytes },
  memory_free: { title: 'Free memory', format: fmtBytes },  // its name before issue 42
  net_throughput_sent: { title: 'Network sent (bytes/s)', format: perSecond },
  net_throughput_recv: { title: 'Network received (bytes/s)', format: perSecond },
  disk_iops: { title: 'Disk operations/s', format: fmtNum },
  disk_throughput_read: { title: 'Disk read (bytes/s)', format: perSecond },
  disk_throughput_write: { title: 'Disk written (bytes/s)', format: perSecond },
  gpu_util: { title: 'GPU utilization (%)', format: fmtNum },
  gpu_free_memory: { title: 'GPU free memory', format: fmtBytes },
};
function perSecond(v) {
  return v === null || v === undefined ? '—' : `${fmtBytes(v)}/s`;
}

// A step's phases in the order a batch runs them; train_batch holds forward .. optimizer_step.
const kPhases = ['dataloader_next', 'to_device', 'train_batch', 'forward', 'backward',
  'gradient_wait', 'optimizer_step', 'step_lr_schedulers', 'from_device', 'reduce_metrics'];
const kStepPhases = ['dataloader_next', 'to_device', 'train_batch', 'step_lr_schedulers', 'from_device'];
const kInsideTrainBatch = new Set(['forward', 'backward', 'gradient_wait', 'optimizer_step']);
// Batches of the per-batch chart (the master samples evenly past it): uPlot draws 10 phases of
// 5,000 points in a few milliseconds, and the read is ~300 KB every 2 s while the trial runs.
const kStepPoints = 5000;

export class ProfilerTab {
  constructor(trial, ctx) {
    this.trial = trial;
    this.ctx = ctx;
    const trace = el('button', { type: 'button', id: 'trace-download' }, 'Download trace (JSON)');
    this.traceButton = trace;
    this.traceNote = el('span', { id: 'trace-note', class: 'muted' }, 'Opens in chrome://tracing or ui.perfetto.dev.');
    trace.addEventListener('click', async () => {
      trace.disabled = true;
      try {
        await download(`/trials/${trial.id}/trace`, `trial-${trial.id}-trace.json`);
        this.message.replaceChildren();
      } catch (e) {
        this.message.replaceChildren(errorBox(`Could not download the trace: ${describeError(e)}`));
      } finally {
        trace.disabled = false;
      }
    });
    this.message = el('div', { 'aria-live': 'polite' });
    this.breakdown = el('div', { id: 'timing-breakdown' });
    this.ranks = el('div', { id: 'rank-timings' });
    this.system = el('div', { class: 'charts', id: 'system-charts' });
    this.timings = el('div', { class: 'charts', id: 'timing-charts' });
    this.panel = el('div', {},
      el('div', { class: 'controls' }, trace, this.traceNote),
      this.message,
      el('h2', {}, 'System metrics'), this.system,
      el('h2', {}, 'Step timings'), this.breakdown, this.ranks, this.timings);
    this.charts = new Map();
    this.started = false;
    this.finalRead = false;
    ctx.onCleanup(() => { for (const c of this.charts.values()) c.destroy(); });
  }

  show() {
    if (this.started) return;
    this.started = true;
    this.ctx.every(2000, () => this.refresh());
  }

  async refresh() {
    if (this.finalRead || !this.trial.state) return;
    const finished = !this.trial.running();
    try {
      const list = await listSeries(this.trial.id, this.ctx.signal);
      const timings = await api(`/trials/${this.trial.id}/profile/timings`, { signal: this.ctx.signal });
      // Per batch from the step timelines when there are any; else the reported timings, which
      // are means over a report window (scheduling_unit batches in the Trial API).
      const steps = timings.profiled_steps > 0
        ? await api(`/trials/${this.trial.id}/profile/steps?rank=0&max_points=${kStepPoints}`, { signal: this.ctx.signal })
        : null;
      const wanted = list.filter((s) => !isMetric(s.name) && !(steps && s.name.startsWith(kTimingsPrefix)));
      const series = await seriesDataOf(this.trial.id, wanted, this.ctx.signal);
      this.drawSystem(series.filter((s) => !s.name.startsWith('training/')));
      if (steps) {
        this.drawSteps(steps);
      } else {
        this.drawTimings(series.filter((s) => s.name.startsWith(kTimingsPrefix)));
      }
      fill(this.breakdown, breakdownTable(list));
      fill(this.ranks, rankTable(timings));
      this.traceState(timings.profiled_steps > 0, finished);
      this.finalRead = finished && this.trial.profiled !== undefined;
    } catch (e) {
      if (e.name !== 'AbortError') this.message.replaceChildren(errorBox(`Could not read the profile: ${describeError(e)}`));
    }
  }

  // The trace button only when there is a trace: step timelines are stored for profiled batches
  // only, and a trace without them is an empty document. `trial.profiled`: the config's
  // profiling.enabled (undefined until the trial page has read it).
  traceState(hasSteps, finished) {
    this.traceButton.disabled = !hasSteps;
    let note = 'Opens in chrome://tracing or ui.perfetto.dev.';
    if (!hasSteps && this.trial.profiled === false) {
      note = 'This trial was not profiled: there is no trace (profiling.enabled: true in the experiment config records one).';
    } else if (!hasSteps) {
      note = finished ? 'No trace: no profiled batch ran (see profiling.begin_on_batch).' : 'No trace yet: it is recorded as profiled batches run.';
    }
    if (this.traceNote.textContent !== note) this.traceNote.textContent = note;
  }

  chart(container, key, options) {
    let chart = this.charts.get(key);
    if (!chart) {
      const box = el('div', { class: 'chart-cell', dataset: { series: key } });
      container.append(box);
      chart = new LineChart(box, options);
      this.charts.set(key, chart);
    }
    return chart;
  }

  drawSystem(series) {
    if (series.length === 0) {
      fill(this.system, el('p', { class: 'muted' }, 'No system metrics: they are sampled while a trial with profiling.enabled: true runs.'));
      return;
    }
    this.system.querySelector(':scope > p')?.remove();
    const byName = groupBy([...series].sort((a, b) => a.name.localeCompare(b.name) || a.label.localeCompare(b.label)), (s) => s.name);
    for (const [name, group] of byName) {
      const info = kSystem[name] || { title: name, format: fmtNum };
      // By wall time: a machine is sampled every second, and several samples may share a batch.
      this.chart(this.system, name, { title: info.title, yFormat: info.format, xLabel: 'time', xTime: true })
        .setLines(group.map((s) => ({
          label: s.label || 'machine',
          points: s.points.map((p) => [p[1], p[2]]).sort((a, b) => a[0] - b[0]),
        })));
    }
  }

  // One line per phase of rank 0's profiled batches (GET .../profile/steps): every batch up to
  // kStepPoints, then every stride-th.
  drawSteps(steps) {
    this.timings.querySelector(':scope > p')?.remove();
    const order = (p) => { const i = kPhases.indexOf(p.name); return i < 0 ? 99 : i; };
    const phases = [...steps.phases].sort((a, b) => order(a) - order(b));
    const every = steps.stride > 1 ? `every ${steps.stride}th batch` : 'every batch';
    const chart = this.chart(this.timings, 'timings', { title: 'Milliseconds per batch, by phase', yFormat: msFormat });
    chart.setTitle(`Milliseconds per batch, by phase (rank 0, ${every})`);
    chart.setLines(phases.map((p) => ({
      label: p.name,
      points: steps.batches.map((b, i) => [b, p.ms[i]]).filter((pt) => pt[1] !== null),
    })));
  }

  drawTimings(series) {
    if (series.length === 0) {
      fill(this.timings, el('p', { class: 'muted' }, 'No step timings: the Trial API reports them for profiled trials.'));
      return;
    }
    this.timings.querySelector(':scope > p')?.remove();
    const order = (s) => { const i = kPhases.indexOf(s.name.slice(kTimingsPrefix.length)); return i < 0 ? 99 : i; };
    const sorted = [...series].sort((a, b) => order(a) - order(b));
    const chart = this.chart(this.timings, 'timings', { title: 'Milliseconds per batch, by phase', yFormat: msFormat });
    chart.setTitle('Milliseconds per batch, by phase (means over each report window)');
    chart.setLines(sorted.map((s) => ({ label: s.name.slice(kTimingsPrefix.length), points: s.points.map((p) => [p[0], p[2]]) })));
  }
}

function msFormat(v) {
  return v === null || v === undefined ? '—' : `${fmtNum(v)} ms`;
}

function groupBy(list, key) {
  const map = new Map();
  for (const item of list) {
    const k = key(item);
    if (!map.has(k)) map.set(k, []);
    map.get(k).push(item);
  }
  return map;
}

// Mean milliseconds and share of a step per phase, from the series' means.
function breakdownTable(list) {
  const mean = new Map(list.filter((s) => s.name.startsWith(kTimingsPrefix))
    .map((s) => [s.name.slice(kTimingsPrefix.length), s.mean_value]));
  const step = kStepPhases.reduce((sum, p) => sum + (mean.get(p) || 0), 0);
  if (mean.size === 0 || step <= 0) return '';
  const phases = [...kPhases.filter((p) => mean.has(p)), ...[...mean.keys()].filter((p) => !kPhases.includes(p))];
  const wait = mean.get('gradient_wait');
  return [
    table([
      { title: 'Phase', cell: (p) => (kInsideTrainBatch.has(p) ? el('span', { class: 'indent' }, p) : p) },
      { title: 'Mean ms', class: 'num', cell: (p) => fmtNum(mean.get(p)) },
      { title: 'Share of a step', class: 'num', cell: (p) => `${((100 * mean.get(p)) / step).toFixed(1)}%` },
    ], phases, { caption: 'Timing breakdown of a step' }),
    wait !== undefined ? el('p', {}, `Gradient wait: ${((100 * wait) / step).toFixed(1)}% of a step waits for the gradient exchange (the rest of it overlaps the backward pass).`) : null,
  ];
}

// Every rank's mean milliseconds per phase over the profiled batches (GET .../profile/timings,
// from the step timelines), a column per rank; nothing before the first timeline arrives.
function rankTable(timings) {
  const ranks = timings.ranks || [];
  if (ranks.length === 0) return '';
  const mean = ranks.map((r) => new Map(r.phases.map((p) => [p.name, p.mean_ms])));
  const names = new Set(ranks.flatMap((r) => r.phases.map((p) => p.name)));
  const order = [...kPhases, 'gradient_communication', 'validation', 'checkpoint', 'step'];
  const phases = [...order.filter((p) => names.has(p)), ...[...names].filter((p) => !order.includes(p))];
  const perRank = Math.round(timings.profiled_steps / ranks.length);
  return table([
    { title: 'Phase', cell: (p) => (kInsideTrainBatch.has(p) ? el('span', { class: 'indent' }, p) : p) },
    ...ranks.map((r, i) => ({ title: `Rank ${r.rank} ms`, class: 'num', cell: (p) => fmtNum(mean[i].get(p)) })),
  ], phases, { caption: `Every rank's step, over ${perRank} profiled batches each (gradient_communication: the communication thread's time per step)` });
}

