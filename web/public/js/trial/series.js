// Reading a trial's time series (GET /api/v1/trials/{id}/series and .../series/data).

import { api } from '../api.js';

export const kTimingsPrefix = 'training/timings/';

// The series summaries: [{name, label, points, last_value, min_value, max_value, mean_value...}].
export async function listSeries(trialId, signal) {
  return (await api(`/trials/${trialId}/series`, { signal })).series;
}

// Points of the series named `names` with label `label` (empty: the metrics' own, unlabelled
// series; a machine's series carry its agent's name), downsampled by the master to at most
// `maxPoints` per series: [{name, label, points: [[batch, time, value], ...]}].
export async function seriesData(trialId, names, signal, { label = '', maxPoints = 1000 } = {}) {
  if (names.length === 0) return [];
  const query = names.map((n) => `name=${encodeURIComponent(n)}`).join('&') +
    (label ? `&label=${encodeURIComponent(label)}` : '');
  const data = await api(`/trials/${trialId}/series/data?${query}&max_datapoints=${maxPoints}`, { signal });
  return data.series;
}

// The points of every series in `summaries` (from listSeries), one request per label.
export async function seriesDataOf(trialId, summaries, signal) {
  const byLabel = new Map();
  for (const s of summaries) {
    if (!byLabel.has(s.label)) byLabel.set(s.label, new Set());
    byLabel.get(s.label).add(s.name);
  }
  const parts = await Promise.all([...byLabel].map(([label, names]) =>
    seriesData(trialId, [...names].sort(), signal, { label })));
  return parts.flat();
}

// Training and validation metrics (not the step timings, not the machines' system metrics).
export function isMetric(name) {
  return /^(training|validation)\//.test(name) && !name.startsWith(kTimingsPrefix);
}
