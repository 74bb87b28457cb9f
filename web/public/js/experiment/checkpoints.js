// The experiment page's checkpoints section.

import { api, describeError } from '../api.js';
import { registerCheckpoint } from '../pages/models.js';
import { el, errorBox, fill, fmtNum, stateBadge, table } from '../util.js';

const kPageRows = 100;  // rows drawn at first (and added by "Show more")

// Every trial's checkpoints (GET /api/v1/trials/{id}/checkpoints), read again when a trial's
// latest checkpoint or state changes or the experiment's state does (the GC deletes checkpoints
// when a trial or the experiment ends). The GC's deleted ones (state DELETED: their files are
// gone, their records stay) are hidden unless asked for: a long grid keeps a few of hundreds.
export class Checkpoints {
  constructor(ctx) {
    this.ctx = ctx;
    this.box = el('div', { id: 'experiment-checkpoints' });
    this.said = el('div', { id: 'register-status', 'aria-live': 'polite' });  // kept by draw()
    this.byTrial = new Map();  // id -> {key, list}
    this.showDeleted = false;
    this.limit = kPageRows;
  }

  async update(detail) {
    const keyOf = (t) => `${t.latest_checkpoint}|${t.state}|${detail.state}`;
    const changed = detail.trials.filter((t) => t.latest_checkpoint &&
      this.byTrial.get(t.id)?.key !== keyOf(t));
    if (changed.length === 0 && this.byTrial.size) return;
    await Promise.all(changed.map(async (t) => {
      try {
        const page = await api(`/trials/${t.id}/checkpoints`, { signal: this.ctx.signal });
        this.byTrial.set(t.id, { key: keyOf(t), list: page.checkpoints });
      } catch (e) {
        if (e.name !== 'AbortError') this.box.replaceChildren(errorBox(`Could not read trial ${t.id}'s checkpoints: ${describeError(e)}`));
      }
    }));
    this.draw();
  }

  // "Register": the checkpoint as a model's next version (pages/models.js); the outcome is
  // said above the table.
  registerButton(c) {
    return el('button', {
      type: 'button', dataset: { action: 'register' }, 'aria-label': `Register checkpoint ${c.storage_id}`,
      onclick: async () => {
        const result = await registerCheckpoint(c.storage_id);
        if (!result) return;
        fill(this.said, result.error ? errorBox(result.error) : el('p', { class: 'ok' },
          `Checkpoint ${c.storage_id} is version ${result.version.version} of model `,
          el('a', { href: `/models/${encodeURIComponent(result.version.model)}` }, result.version.model), '.'));
      },
    }, 'Register');
  }

  draw() {
    const all = [...this.byTrial].flatMap(([trial, { list }]) => list.map((c) => ({ trial, ...c })))
      .sort((a, b) => a.trial - b.trial || a.steps_completed - b.steps_completed);
    const deleted = all.filter(isDeleted).length;
    const rows = this.showDeleted ? all : all.filter((c) => !isDeleted(c));
    const toggle = deleted === 0 ? null : el('p', { id: 'checkpoints-deleted', class: 'muted' },
      this.showDeleted ? `${fmtNum(deleted)} deleted checkpoints shown. ` : `${fmtNum(deleted)} deleted checkpoints hidden. `,
      el('button', {
        type: 'button', id: 'checkpoints-toggle-deleted', 'aria-pressed': String(this.showDeleted),
        onclick: () => { this.showDeleted = !this.showDeleted; this.draw(); document.getElementById('checkpoints-toggle-deleted')?.focus(); },
      }, this.showDeleted ? 'Hide deleted' : 'Show deleted'));
    fill(this.box, this.said, toggle, table([
      { title: 'Trial', class: 'num', cell: (c) => el('a', { href: `/trials/${c.trial}?tab=checkpoints` }, c.trial) },
      { title: 'Batches', class: 'num', cell: (c) => fmtNum(c.steps_completed) },
      { title: 'State', cell: (c) => stateBadge(c.state || 'ACTIVE') },
      { title: 'Storage id', cell: (c) => el('code', {}, c.storage_id) },
      { title: 'Path', cell: (c) => el('code', { class: 'hparams' }, c.path) },
      { title: 'Registry', cell: (c) => (isDeleted(c) ? '—' : this.registerButton(c)) },
    ], rows, {
      empty: deleted ? 'Every checkpoint was deleted by the checkpoint GC.' : 'No checkpoints yet.',
      caption: 'Checkpoints',
      rowAttrs: (c) => ({ dataset: { storageId: c.storage_id, state: c.state || 'ACTIVE' } }),
      limit: this.limit,
      onMore: () => { this.limit += kPageRows; this.draw(); },
    }));
  }
}

// Deleted by the checkpoint GC (the API's state; absent means ACTIVE).
function isDeleted(c) {
  return c.state === 'DELETED';
}
