// The experiment page's learning curves: one metric (the searcher's validation metric by
// default, any training or validation metric selectable) of every trial on one chart, from
// GET /api/v1/experiments/{id}/series/data?name=...

import { api, describeError } from '../api.js';
import { LineChart } from '../chart.js';
import { searcherOf } from '../experiment_summary.js';
import { el, errorBox, fill, kFinalExperimentStates } from '../util.js';

// The chart of one metric for every trial, with a select of the metrics the trials report.
// `data`: the last series read ({name, trials}, as the API answers), for the page's other parts.
export class CurvesChart {
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
      this.data = { name, trials: data.trials };
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
