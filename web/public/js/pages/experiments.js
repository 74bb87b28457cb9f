// Experiments: every experiment with its state, progress, best searcher metric, owner, slots,
// start and duration, filtered by state, owner and name (archived ones only when asked for);
// pause, activate and kill; two to ten selected open their comparison. Polled every
// 2 s: GET /api/v1/experiments, plus GET /api/v1/experiments/{id} for the unfinished ones (the
// trials give the progress and the metric; a finished one is read once).

import { api, describeError } from '../api.js';
import { navigate } from '../main.js';
import { experimentActions } from '../experiment_actions.js';
import {
  el, errorBox, fill, fmtDuration, fmtNum, fmtTime, kFinalExperimentStates, progressBar,
  redrawKeepingFocus, SortState, stateBadge, table,
} from '../util.js';
import { bestMetric, experimentProgress } from '../experiment_summary.js';

const kStates = ['ACTIVE', 'PAUSED', 'COMPLETED', 'CANCELED', 'ERROR', 'DELETING'];
const kMaxDescribed = 50;  // the newest experiments described per refresh
const kPageRows = 100;  // rows drawn at first (and added by "Show more")

export function experimentsPage(main, params, ctx) {
  const details = new Map();  // id -> ExperimentDescription
  let experiments = [];
  const status = el('div', { 'aria-live': 'polite' });
  const filters = filterForm(() => draw());
  const sort = new SortState('experiments', () => draw());
  const body = el('div', { id: 'experiments' });
  let limit = kPageRows;
  const selection = compareSelection();
  fill(main, el('h1', {}, 'Experiments'), filters.form, selection.bar, status, body);

  function draw() {
    const shown = experiments.filter(filters.matches);
    redrawKeepingFocus(body, () => fill(body, table([...columns(details, refresh, status), selection.column], shown, {
      empty: experiments.length ? 'No experiment matches the filter.' : 'No experiments yet: create one with cohort experiment create.',
      caption: 'Experiments',
      rowAttrs: (e) => ({ dataset: { key: e.id, experimentId: e.id, state: e.state } }),
      sort,
      limit,
      onMore: () => { limit += kPageRows; draw(); },
    })));
    filters.setOwners(experiments.map((e) => e.owner).filter(Boolean));
  }

  async function refresh() {
    try {
      const list = await api('/experiments', { signal: ctx.signal });
      experiments = list.experiments.sort((a, b) => b.id - a.id);
      const wanted = experiments.slice(0, kMaxDescribed).filter(
        (e) => !kFinalExperimentStates.has(e.state) || !details.has(e.id) ||
          !kFinalExperimentStates.has(details.get(e.id).state));
      await Promise.all(wanted.map(async (e) => {
        try {
          details.set(e.id, await api(`/experiments/${e.id}`, { signal: ctx.signal }));
        } catch (err) {
          if (err.status !== 404) throw err;
          details.delete(e.id);  // deleted since the list was read: the next list leaves it out
        }
      }));
      status.replaceChildren();
    } catch (e) {
      if (e.name === 'AbortError') return;
      status.replaceChildren(errorBox(`Could not read the experiments: ${describeError(e)}`));
    }
    draw();
  }
  ctx.every(2000, refresh);
}

function columns(details, refresh, status) {
  const detail = (e) => details.get(e.id);
  const onDone = (error) => {
    status.replaceChildren(error ? errorBox(error) : '');
    refresh();
  };
  return [
    { title: 'ID', class: 'num', cell: (e) => el('a', { href: `/experiments/${e.id}` }, e.id), sort: (e) => e.id },
    { title: 'Name', cell: nameCell, sort: (e) => e.name.toLowerCase() },
    { title: 'State', cell: (e) => stateBadge(e.state), sort: (e) => e.state },
    { title: 'Progress', cell: (e) => progressBar(experimentProgress(e, detail(e)), `progress of experiment ${e.id}`), sort: (e) => experimentProgress(e, detail(e)) },
    { title: 'Trials', class: 'num', cell: (e) => `${e.trials_done}/${e.trials}`, sort: (e) => e.trials },
    { title: 'Best metric', class: 'num', cell: (e) => bestCell(detail(e)), sort: (e) => (detail(e) ? bestMetric(detail(e))?.value : null) },
    { title: 'Owner', cell: (e) => e.owner || '—', sort: (e) => e.owner || null },
    { title: 'Slots', class: 'num', cell: (e) => e.slots_per_trial, sort: (e) => e.slots_per_trial },
    { title: 'Started', cell: (e) => fmtTime(e.created_ms), sort: (e) => e.created_ms },
    { title: 'Duration', cell: (e) => duration(e), sort: (e) => durationMs(e) },
    { title: 'Actions', cell: (e) => experimentActions(e, onDone) },
  ];
}

// The "Compare" column's boxes and the button that opens /compare/experiments/IDS.
function compareSelection() {
  const selected = new Set();
  const button = el('button', { type: 'button', id: 'compare-experiments', disabled: true,
    onclick: () => navigate(`/compare/experiments/${[...selected].sort((a, b) => a - b).join(',')}`) });
  const update = () => {
    button.disabled = selected.size < 2 || selected.size > 10;
    button.textContent = `Compare selected experiments (${selected.size})`;
  };
  update();
  return {
    bar: el('div', { class: 'controls' }, button,
      el('span', { class: 'muted' }, 'Select 2 to 10 experiments to compare their best trials.')),
    column: {
      title: 'Compare',
      cell: (e) => el('input', { type: 'checkbox', 'aria-label': `select experiment ${e.id}`, checked: selected.has(e.id),
        onchange: (event) => { if (event.target.checked) selected.add(e.id); else selected.delete(e.id); update(); } }),
    },
  };
}

// The name, then the config's labels and description (GET /api/v1/experiments has them).
function nameCell(e) {
  const labels = e.labels || [];
  return [
    el('a', { href: `/experiments/${e.id}` }, e.name),
    labels.length ? el('span', { class: 'labels' }, labels.map((l) => el('span', { class: 'label' }, l))) : null,
    e.description ? el('div', { class: 'description muted' }, e.description) : null,
  ];
}

function bestCell(detail) {
  const best = detail ? bestMetric(detail) : null;
  if (!best) return '—';
  return el('span', { title: `${best.metric} of trial ${best.trial}` }, fmtNum(best.value));
}

// The filter controls; `matches(experiment)` applies them.
function filterForm(onChange) {
  const state = el('select', { id: 'filter-state' },
    el('option', { value: '' }, 'Any state'), kStates.map((s) => el('option', { value: s }, s)));
  const owner = el('select', { id: 'filter-owner' }, el('option', { value: '' }, 'Anyone'));
  const name = el('input', { id: 'filter-name', type: 'search', placeholder: 'part of the name or a label' });
  const hide = el('input', { id: 'filter-hide-finished', type: 'checkbox' });
  const archived = el('input', { id: 'filter-show-archived', type: 'checkbox' });
  for (const control of [state, owner, name, hide, archived]) {
    control.addEventListener('input', onChange);
  }
  const form = el('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() },
    el('label', { for: 'filter-state' }, 'State'), state,
    el('label', { for: 'filter-owner' }, 'Owner'), owner,
    el('label', { for: 'filter-name' }, 'Name'), name,
    el('label', { class: 'check' }, hide, 'Hide finished'),
    el('label', { class: 'check' }, archived, 'Show archived'));
  let owners = '';
  return {
    form,
    matches: (e) => (!state.value || e.state === state.value) &&
      (!owner.value || e.owner === owner.value) &&
      (!name.value || [e.name, ...(e.labels || [])].some((t) => t.toLowerCase().includes(name.value.toLowerCase()))) &&
      (!hide.checked || !kFinalExperimentStates.has(e.state)) &&
      (archived.checked || !e.archived),
    setOwners(list) {
      const unique = [...new Set(list)].sort();
      if (unique.join('\n') === owners) return;
      owners = unique.join('\n');
      const chosen = owner.value;
      fill(owner, el('option', { value: '' }, 'Anyone'), unique.map((o) => el('option', { value: o }, o)));
      owner.value = unique.includes(chosen) ? chosen : '';
    },
  };
}

// From creation to the final state (ended_ms), or to now while it runs; '—' for an experiment
// that ended before the master recorded end times.
function durationMs(e) {
  if (e.ended_ms > 0) return e.ended_ms - e.created_ms;
  return kFinalExperimentStates.has(e.state) ? null : Date.now() - e.created_ms;
}
function duration(e) {
  const ms = durationMs(e);
  return ms === null ? '—' : fmtDuration(ms);
}
