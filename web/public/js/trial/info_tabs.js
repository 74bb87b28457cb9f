// The trial's Hyperparameters and Checkpoints tabs.

import { api, describeError } from '../api.js';
import { el, errorBox, fill, fmtNum, stateBadge, table } from '../util.js';

export function hparamsPanel(t) {
  const rows = Object.entries(t.hparams || {});
  return [
    table([
      { title: 'Hyperparameter', cell: ([k]) => el('code', {}, k) },
      { title: 'Value', cell: ([, v]) => (typeof v === 'object' ? JSON.stringify(v) : String(v)) },
    ], rows, { empty: 'No hyperparameters.', caption: 'Hyperparameters' }),
    el('p', {}, `Trial seed: ${t.seed}`),
  ];
}

// Reads the checkpoints when the trial's latest checkpoint or state changes; each with its state
// (DELETED: the checkpoint GC removed its files).
export async function checkpointsPanel(container, t, ctx) {
  const key = `${t.latest_checkpoint}|${t.state}`;
  if (container.dataset.loadedFor === key) return;
  container.dataset.loadedFor = key;
  try {
    const list = await api(`/trials/${t.id}/checkpoints`, { signal: ctx.signal });
    fill(container, table([
      { title: 'Storage id', cell: (c) => el('code', {}, c.storage_id) },
      { title: 'Batches', class: 'num', cell: (c) => fmtNum(c.steps_completed) },
      { title: 'State', cell: (c) => stateBadge(c.state || 'ACTIVE') },
      { title: 'Path', cell: (c) => el('code', {}, c.path) },
      { title: 'Metadata', cell: (c) => el('code', { class: 'hparams' }, JSON.stringify(c.metadata)) },
    ], list.checkpoints, { empty: 'No checkpoints.', caption: 'Checkpoints' }));
  } catch (e) {
    if (e.name === 'AbortError') return;
    delete container.dataset.loadedFor;
    fill(container, errorBox(`Could not read the checkpoints: ${describeError(e)}`));
  }
}
