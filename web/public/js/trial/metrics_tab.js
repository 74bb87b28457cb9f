// The trial's Metrics tab: one live chart per training/validation metric, x by batch, by wall
// time or (when the config has records_per_epoch) by epoch. Re-read every 2 s while the trial
// runs (the master downsamples each series to at most 1,000 points, keeping spikes).

import { describeError } from '../api.js';
import { LineChart } from '../chart.js';
import { el, errorBox, fill } from '../util.js';
import { isMetric, listSeries, seriesDataOf } from './series.js';

export class MetricsTab {
  constructor(trial, ctx) {
    this.trial = trial;
    this.ctx = ctx;
    this.axis = el('select', { id: 'metrics-x' },
      el('option', { value: 'batch' }, 'Batches'), el('option', { value: 'time' }, 'Wall time'));
    this.axis.addEventListener('change', () => { this.clearCharts(); this.refresh(); });
    this.message = el('div', { 'aria-live': 'polite' });
    this.grid = el('div', { class: 'charts', id: 'metric-charts' });
    this.panel = el('div', {},
      el('div', { class: 'controls' }, el('label', { for: 'metrics-x' }, 'X axis'), this.axis),
      this.message, this.grid);
    this.charts = new Map();
    this.started = false;
    this.finalRead = false;
    ctx.onCleanup(() => this.clearCharts());
  }

  // Adds "Epochs" to the x axis: an epoch is 1 / epochsPerBatch batches.
  enableEpochs(epochsPerBatch) {
    this.epochsPerBatch = epochsPerBatch;
    this.axis.append(el('option', { value: 'epoch' }, 'Epochs'));
  }

  show() {
    if (this.started) return;
    this.started = true;
    this.ctx.every(2000, () => this.refresh());
  }

  clearCharts() {
    for (const chart of this.charts.values()) chart.destroy();
    this.charts.clear();
    fill(this.grid);
    this.finalRead = false;
  }

  async refresh() {
    if (this.finalRead || !this.trial.state) return;
    const finished = !this.trial.running();
    try {
      const metrics = (await listSeries(this.trial.id, this.ctx.signal)).filter((s) => isMetric(s.name));
      const series = await seriesDataOf(this.trial.id, metrics, this.ctx.signal);
      this.draw(series.sort((a, b) => metricOrder(a.name, b.name)));
      this.message.replaceChildren(metrics.length ? '' : el('p', { class: 'muted' }, 'The trial has reported no metrics yet.'));
      this.finalRead = finished;
    } catch (e) {
      if (e.name !== 'AbortError') this.message.replaceChildren(errorBox(`Could not read the metrics: ${describeError(e)}`));
    }
  }

  draw(series) {
    const axis = this.axis.value;
    const byTime = axis === 'time';
    const x = { batch: (p) => p[0], time: (p) => p[1], epoch: (p) => p[0] * this.epochsPerBatch }[axis];
    for (const s of series) {
      const key = `${s.name}\u0000${s.label}`;
      let chart = this.charts.get(key);
      if (!chart) {
        const box = el('div', { class: 'chart-cell', dataset: { series: s.name } });
        this.grid.append(box);
        chart = new LineChart(box, { title: s.name, xLabel: axis, xTime: byTime });
        this.charts.set(key, chart);
      }
      const points = s.points.map((p) => [x(p), p[2]]);
      if (byTime) points.sort((a, b) => a[0] - b[0]);
      chart.setLines([{ label: s.label ? `${s.name} (${s.label})` : s.name, points }]);
    }
  }
}

// Validation metrics first (what a searcher judges), then training ones, each by name.
function metricOrder(a, b) {
  const rank = (n) => (n.startsWith('validation/') ? 0 : 1);
  return rank(a) - rank(b) || a.localeCompare(b);
}
