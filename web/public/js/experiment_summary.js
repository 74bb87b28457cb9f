// What the pages derive from an experiment's description (GET /api/v1/experiments/{id}).

// The searcher's settings read from the effective config (YAML text, as the master writes it):
// {name, metric, smallerIsBetter}. Reads only the `searcher:` block's top-level keys.
export function searcherOf(configYaml) {
  const out = { name: null, metric: null, smallerIsBetter: true };
  const lines = (configYaml || '').split('\n');
  const start = lines.findIndex((l) => /^searcher:\s*$/.test(l));
  if (start < 0) return out;
  for (const line of lines.slice(start + 1)) {
    if (/^\S/.test(line)) break;
    const m = line.match(/^ {2}(\w+):\s*(.*?)\s*$/);
    if (!m) continue;
    const value = m[2].replace(/^["']|["']$/g, '');
    if (m[1] === 'name') out.name = value;
    if (m[1] === 'metric') out.metric = value;
    if (m[1] === 'smaller_is_better') out.smallerIsBetter = value !== 'false';
  }
  return out;
}

// Batches trained over batches to train, over all trials; null when no trial knows its length.
// A finished experiment without lengths counts its finished trials.
export function experimentProgress(summary, detail) {
  if (detail && detail.trials.length) {
    let done = 0;
    let total = 0;
    for (const t of detail.trials) {
      if (t.total_batches > 0) {
        total += t.total_batches;
        done += Math.min(t.batches, t.total_batches);
      }
    }
    if (total > 0) return done / total;
  }
  return summary.trials ? summary.trials_done / summary.trials : null;
}

// The best searcher metric over the trials: {value, trial, metric} or null. From each trial's
// searcher_metric (set when a searcher operation completes) and, when given, `validations`: the
// experiment's validation/<searcher metric> series (GET /api/v1/experiments/{id}/series/data:
// {trials: [{trial_id, points: [[batch, time, value], ...]}]}), so that a running trial's
// validations count before its first operation completes.
export function bestMetric(detail, validations) {
  const { metric, smallerIsBetter } = searcherOf(detail.config);
  let best = null;
  const consider = (v, trial) => {
    if (v === null || v === undefined || !Number.isFinite(v)) return;
    if (!best || (smallerIsBetter ? v < best.value : v > best.value)) {
      best = { value: v, trial, metric: metric || 'searcher metric' };
    }
  };
  for (const t of detail.trials) consider(t.searcher_metric, t.id);
  for (const t of validations?.trials || []) {
    for (const p of t.points) consider(p[2], t.trial_id);
  }
  return best;
}

// The config's top-level records_per_epoch (0 when absent): with the trial's global_batch_size
// it turns batches into epochs.
export function recordsPerEpoch(configYaml) {
  const m = (configYaml || '').match(/^records_per_epoch:\s*(\d+)\s*$/m);
  return m ? Number(m[1]) : 0;
}

// Whether the effective config turns profiling on (`profiling:` block, `enabled: true`); the
// master writes the block out with its defaults, so its absence means not profiled.
export function profilingEnabled(configYaml) {
  const lines = (configYaml || '').split('\n');
  const start = lines.findIndex((l) => /^profiling:\s*$/.test(l));
  if (start < 0) return /^profiling:\s*\{.*\benabled:\s*true\b/m.test(configYaml || '');
  for (const line of lines.slice(start + 1)) {
    if (/^\S/.test(line)) break;
    const m = line.match(/^ {2}enabled:\s*(\S+)\s*$/);
    if (m) return m[1] === 'true';
  }
  return false;
}
