// The experiment page's learning curves: one metric (the searcher's validation metric by
// default, any training or validation metric selectable) of every trial on one chart, from
// GET /api/v1/experiments/{id}/series/data?name=...; the trials selected in the search table are
// highlighted, and a trial the searcher stopped early (adaptive ASHA) says so in its label.
// Up to kUplotLines trials are drawn with uPlot (a legend with every value under the cursor);
// more with ManyLinesChart (canvas, each line its own points). The master downsamples each
// trial's series: the page asks for about kPointBudget points in all (at most 1,000 per trial),
// so 1,000 trials of 10,000 points each arrive as 200 points per trial.

import { api, describeError } from '../api.js';
import { LineChart } from '../chart.js';
import { searcherOf } from '../experiment_summary.js';
import { el, errorBox, fill, kFinalExperimentStates, kFinalTrialStates } from '../util.js';
import { ManyLinesChart } from './many_lines.js';

const kUplotLines = 20;
const kPointBudget = 200000;

export function pointsPerTrial(trials) {
  return Math.max(20, Math.min(1000, Math.floor(kPointBudget / Math.max(1, trials))));
}

// The chart of one metric for every trial, with a select of the metrics the trials report.
// `data`: the last series read ({name, trials}, as the API answers), for the page's other parts.
export class CurvesChart {
  constructor(section, id, ctx) {
    this.id = id;
    this.ctx = ctx;
    this.select = el('select', { id: 'curve-metric' });
    this.select.addEventListener('change', () => { this.select.dataset.chosen = 'user'; this.load(); });
    this.message = el('div', { 'aria-live': 'polite' });
    this.area = el('div', { id: 'learning-curves' });
    section.append(el('div', { class: 'controls' }, el('label', { for: 'curve-metric' }, 'Metric'), this.select), this.message, this.area);
    this.chart = null;
    this.selected = new Set();
    this.names = '';
    this.loadedFor = '';
    this.nextLoad = 0;  // performance.now() before which a running experiment is not read again
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
      const chosen = this.select.dataset.chosen === 'user' ? this.select.value : '';
      const { metric } = searcherOf(detail.config);
      const preferred = [chosen, `validation/${metric}`, names.find((n) => n.startsWith('validation/')), names[0]]
        .find((n) => n && names.includes(n));
      fill(this.select, names.map((n) => el('option', { value: n }, n)));
      if (preferred) this.select.value = preferred;
    }
    // Read again when a trial moved on since the last read; while the experiment runs, not
    // sooner than 4 times the last read took (the master scans every trial's series: 6.6 s at
    // 1,000 trials of 10,000 points); once it ended, at once (its last points).
    const running = !kFinalExperimentStates.has(detail.state);
    const moved = detail.trials.map((t) => `${t.id}:${t.batches}:${t.state}`).join(',');
    const due = !running || performance.now() >= this.nextLoad;
    if (this.loadedFor !== this.select.value || (due && moved !== this.moved)) {
      this.moved = moved;
      await this.load();
    }
  }

  // Highlights the trials in `selected` (a Set of trial ids; empty: none).
  highlight(selected) {
    this.selected = new Set(selected);
    this.draw();
  }

  async load() {
    const name = this.select.value;
    if (!name) return;
    try {
      const started = performance.now();
      const perTrial = pointsPerTrial(this.detail ? this.detail.trials.length : 1);
      const data = await api(`/experiments/${this.id}/series/data?name=${encodeURIComponent(name)}&max_datapoints=${perTrial}`,
        { signal: this.ctx.signal });
      this.data = { name, trials: data.trials };
      this.nextLoad = performance.now() + 4 * (performance.now() - started);
      this.draw();
      this.loadedFor = name;
      this.message.replaceChildren();
    } catch (e) {
      if (e.name !== 'AbortError') this.message.replaceChildren(errorBox(`Could not read ${name}: ${describeError(e)}`));
    }
  }

  draw() {
    if (!this.data) return;
    const byId = new Map((this.detail ? this.detail.trials : []).map((t) => [t.id, t]));
    this.show(this.data.trials.map((t) => ({
      label: `trial ${t.trial_id}${stoppedEarly(byId.get(t.trial_id)) ? ' (stopped early)' : ''}`,
      points: t.points.map((p) => [p[0], p[2]]),
      emphasis: this.selected.has(t.trial_id),
    })), this.data.name);
  }

  // Draws `lines` with the chart that fits their number (made again when that changes).
  show(lines, name) {
    const many = lines.length > kUplotLines;
    const title = `${name} by batch, one line per trial`;
    if (!this.chart || this.many !== many) {
      this.destroy();
      fill(this.area);
      this.chart = many ? new ManyLinesChart(this.area, { title, xLabel: 'batch', height: 300 })
        : new LineChart(this.area, { title, xLabel: 'batch', height: 300 });
      this.many = many;
    }
    this.chart.setTitle(title);  // another metric chosen
    this.chart.setLines(lines);
  }

  destroy() {
    if (this.chart) this.chart.destroy();
    this.chart = null;
  }
}

// A trial that ended before its length: the searcher stopped it (adaptive ASHA) or it failed.
function stoppedEarly(t) {
  return !!t && kFinalTrialStates.has(t.state) && t.state !== 'ERROR' && t.total_batches > 0 &&
    t.batches < t.total_batches;
}
