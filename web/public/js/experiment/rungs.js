// The experiment page's adaptive_asha column.

import { api, describeError } from '../api.js';
import { searcherOf } from '../experiment_summary.js';
import { el, fmtNum, kFinalTrialStates } from '../util.js';

// A finished trial whose last rung is short of its length: adaptive_asha did not promote it.
function stoppedEarly(t, lastRung) {
  return kFinalTrialStates.has(t.state) && t.total_batches > 0 && lastRung < t.total_batches;
}

// adaptive_asha's record of each trial: the rungs it reached (length and searcher metric, from
// GET /api/v1/trials/{id}/metrics?kind=searcher) and where it was stopped. Read again while
// the trial is unfinished.
export class Rungs {
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
