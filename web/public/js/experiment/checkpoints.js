// The experiment page's checkpoints section.

import { api, describeError } from '../api.js';
import { el, errorBox, fill, fmtNum, table } from '../util.js';

// Every trial's checkpoints (GET /api/v1/trials/{id}/checkpoints), read again when a trial's
// latest checkpoint changes.
export class Checkpoints {
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
