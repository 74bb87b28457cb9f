// The experiment page's search views (issue 38), from GET /api/v1/experiments/{id}/trials (each
// trial's hyperparameters beside its best validation): the trials table with one column per
// hyperparameter and metric (sortable, filterable, the best trial marked, trials selectable for
// the comparison page), parallel coordinates (one axis per hyperparameter and the metric;
// dragging on an axis keeps the trials in that range, in the chart and the table), a scatter of
// one hyperparameter against the metric (log axis for log-scaled values, categories for
// strings) and a heat map of two hyperparameters coloured by the best metric. Drawn as plain
// SVG; everything is keyboard-usable through the filter box ("lr<0.01, layers=3").

import { api, describeError } from '../api.js';
import { navigate } from '../main.js';
import {
  el, errorBox, fill, fmtNum, redrawKeepingFocus, SortState, stateBadge, table,
} from '../util.js';

const kSvg = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(kSvg, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
  for (const c of children.flat()) if (c) node.append(c);
  return node;
}

// {name: value} of a trial's hyperparameters, groups joined by '.'.
export function flatten(hparams, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(hparams || {})) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) flatten(v, name, out);
    else out[name] = v;
  }
  return out;
}

// An axis for `values` over [lo, hi] pixels: numbers (log when positive over >2 decades) or
// categories. pos(v) -> pixel; ticks: [[value, label]].
export function axisFor(values, lo, hi) {
  const present = values.filter((v) => v !== undefined && v !== null);
  const numeric = present.length > 0 && present.every((v) => typeof v === 'number');
  if (!numeric) {
    const cats = [...new Set(present.map(String))].sort();
    const step = cats.length > 1 ? (hi - lo) / (cats.length - 1) : 0;
    const at = (v) => lo + (cats.length > 1 ? cats.indexOf(String(v)) * step : (hi - lo) / 2);
    return { kind: 'category', pos: at, ticks: cats.map((c) => [c, c]), invert: null };
  }
  let min = Math.min(...present);
  let max = Math.max(...present);
  const log = min > 0 && max / min > 100;
  const f = log ? Math.log10 : (x) => x;
  if (min === max) { min -= 1; max += 1; }
  const a = f(min);
  const b = f(max);
  const pos = (v) => lo + ((f(v) - a) / (b - a)) * (hi - lo);
  const invert = (p) => { const t = a + ((p - lo) / (hi - lo)) * (b - a); return log ? 10 ** t : t; };
  const ticks = [0, 0.5, 1].map((t) => { const v = invert(lo + t * (hi - lo)); return [v, fmtNum(v)]; });
  return { kind: log ? 'log' : 'linear', pos, ticks, invert };
}

// A colour from green (best) to red (worst) for `t` in [0, 1] (0: best).
function ramp(t) {
  if (t === null || Number.isNaN(t)) return '#999';
  const h = Math.round(120 * (1 - Math.min(1, Math.max(0, t))));
  return `hsl(${h}, 70%, 42%)`;
}

// Parses "lr<0.01, layers=3, opt>=2" into [{name, op, value}]; throws naming the bad part.
export function parseFilter(text) {
  return text.split(',').map((s) => s.trim()).filter(Boolean).map((part) => {
    const m = /^([\w.\/-]+)\s*(<=|>=|<|>|=|!=)\s*(.+)$/.exec(part);
    if (!m) throw new Error(`"${part}": write NAME<VALUE, NAME>=VALUE or NAME=VALUE`);
    const num = Number(m[3]);
    return { name: m[1], op: m[2], value: m[3] !== '' && !Number.isNaN(num) ? num : m[3] };
  });
}

function passes(value, { op, value: want }) {
  if (value === undefined || value === null) return false;
  switch (op) {
    case '<': return value < want;
    case '<=': return value <= want;
    case '>': return value > want;
    case '>=': return value >= want;
    case '!=': return String(value) !== String(want);
    default: return String(value) === String(want);
  }
}

export class SearchViews {
  constructor(section, id, ctx) {
    // The table draws 100 rows at first ("Show more" adds 100): at 1,000 trials the rows are
    // most of a redraw's time.
    Object.assign(this, { id, ctx, table: null, brushes: new Map(), selected: new Set(), filters: [], limit: 100 });
    this.onSelect = () => {};  // called with the selected trial ids when they change
    // A select the user changed keeps their choice across refreshes (fillSelects).
    const chosen = (e) => { e.target.dataset.chosen = 'user'; this.draw(); };
    this.metricSelect = el('select', { id: 'search-metric', onchange: chosen });
    this.xSelect = el('select', { id: 'scatter-x', onchange: chosen });
    this.hx = el('select', { id: 'heat-x', onchange: chosen });
    this.hy = el('select', { id: 'heat-y', onchange: chosen });
    this.filterInput = el('input', { id: 'search-filter', type: 'text', size: 32, placeholder: 'lr<0.01, layers=3',
      'aria-describedby': 'search-filter-help', onchange: () => this.setFilter() });
    this.compareButton = el('button', { type: 'button', id: 'compare-selected', disabled: true,
      onclick: () => navigate(`/compare/${[...this.selected].sort((a, b) => a - b).join(',')}`) }, 'Compare selected');
    this.message = el('div', { 'aria-live': 'polite' });
    this.parallel = el('figure', { id: 'parallel-coordinates', class: 'chart' }, el('figcaption', {}, 'Parallel coordinates (drag on an axis to filter)'));
    this.scatter = el('figure', { id: 'hparam-scatter', class: 'chart' }, el('figcaption', {}, 'Hyperparameter against the metric'));
    this.heat = el('figure', { id: 'hparam-heatmap', class: 'chart' }, el('figcaption', {}, 'Two hyperparameters, coloured by the best metric'));
    this.tableBox = el('div', { id: 'search-table' });
    this.sort = new SortState('search', () => this.drawTable());
    section.append(
      el('div', { class: 'controls' },
        el('label', { for: 'search-metric' }, 'Metric'), this.metricSelect,
        el('label', { for: 'search-filter' }, 'Filter'), this.filterInput,
        el('button', { type: 'button', id: 'clear-filters', onclick: () => this.clearFilters() }, 'Clear filters'),
        this.compareButton),
      el('p', { id: 'search-filter-help', class: 'muted' }, 'Filter: NAME<VALUE, NAME>=VALUE, NAME=VALUE, comma-separated; select 2 to 10 trials to compare them.'),
      this.message, this.tableBox, this.parallel,
      el('div', { class: 'controls' }, el('label', { for: 'scatter-x' }, 'Scatter x'), this.xSelect,
        el('label', { for: 'heat-x' }, 'Heat map x'), this.hx, el('label', { for: 'heat-y' }, 'y'), this.hy),
      this.scatter, this.heat);
  }

  // Reads the table again only when a trial's state, progress or searcher metric changed since
  // the last read (`detail`: the experiment as the page polled it): the table costs the master a
  // query per trial, and the page polls every 2 s.
  async update(detail) {
    const key = detail.trials.map((t) => `${t.id}:${t.state}:${t.batches}:${t.searcher_metric}`).join(',');
    if (this.table && key === this.key) return;
    try {
      const started = performance.now();
      this.table = await api(`/experiments/${this.id}/trials`, { signal: this.ctx.signal });
      this.key = key;
      this.fillSelects();
      this.draw();
      this.tableBox.dataset.renderMs = String(Math.round(performance.now() - started));
      this.message.replaceChildren();
    } catch (e) {
      if (e.name !== 'AbortError') this.message.replaceChildren(errorBox(`Could not read the trials: ${describeError(e)}`));
    }
  }

  // The trials as flat rows: {id, state, batches, restarts, checkpoints, hp: {...}, m: {...}}.
  rows() {
    return (this.table ? this.table.trials : []).map((t) => ({
      id: t.trial_id, state: t.state, batches: t.batches, restarts: t.restarts, checkpoints: t.checkpoints,
      hp: flatten(t.hparams), m: t.best_validation ? t.best_validation.metrics : {},
    }));
  }

  hparamNames() {
    const names = new Set();
    for (const r of this.rows()) Object.keys(r.hp).forEach((n) => names.add(n));
    return [...names].sort();
  }

  metricNames() {
    const names = new Set(this.table && this.table.metric ? [this.table.metric] : []);
    for (const r of this.rows()) Object.keys(r.m).forEach((n) => names.add(n));
    return [...names];
  }

  // The selects' options, keeping what the user chose; until they choose, the metric is the
  // searcher's and the axes are the hyperparameters that vary first (a constant one says nothing).
  fillSelects() {
    const keep = (select, options, preferred) => {
      const chosen = select.dataset.chosen === 'user' ? select.value : '';
      const key = options.join('\n');
      if (select.dataset.options !== key) {
        select.dataset.options = key;
        fill(select, options.map((o) => el('option', { value: o }, o)));
      }
      select.value = options.includes(chosen) ? chosen : preferred;
    };
    const hp = this.hparamNames();
    const rows = this.rows();
    const varies = (n) => new Set(rows.map((r) => JSON.stringify(r.hp[n] ?? null))).size > 1;
    const order = [...hp.filter(varies), ...hp.filter((n) => !varies(n))];
    keep(this.metricSelect, this.metricNames(), this.table.metric);
    keep(this.xSelect, hp, order[0]);
    keep(this.hx, hp, order[0]);
    keep(this.hy, hp, order[1] || order[0]);
  }

  setFilter() {
    try {
      this.filters = parseFilter(this.filterInput.value);
      this.filterInput.removeAttribute('aria-invalid');
      this.message.replaceChildren();
    } catch (e) {
      this.filterInput.setAttribute('aria-invalid', 'true');
      this.message.replaceChildren(errorBox(`Filter ${e.message}`));
      return;
    }
    this.draw();
  }

  clearFilters() {
    this.brushes.clear();
    this.filterInput.value = '';
    this.filters = [];
    this.draw();
  }

  value(row, name) {
    if (name in row.hp) return row.hp[name];
    if (name in row.m) return row.m[name];
    return row[name];
  }

  // The rows that pass the filter box and every brush.
  visible() {
    return this.rows().filter((r) => this.filters.every((f) => passes(this.value(r, f.name), f)) &&
      [...this.brushes].every(([name, [a, b]]) => { const v = this.value(r, name); return v !== undefined && v >= a && v <= b; }));
  }

  draw() {
    if (!this.table) return;
    this.drawTable();
    this.drawParallel();
    this.drawScatter();
    this.drawHeat();
  }

  drawTable() {
    const metric = this.metricSelect.value || this.table.metric;
    const rows = this.visible();
    const columns = [
      { title: 'Compare', cell: (r) => el('input', { type: 'checkbox', 'aria-label': `select trial ${r.id}`, checked: this.selected.has(r.id),
        onchange: (e) => { if (e.target.checked) this.selected.add(r.id); else this.selected.delete(r.id); this.updateCompare(); this.onSelect(this.selected); } }) },
      { title: 'Trial', class: 'num', sort: (r) => r.id, cell: (r) => el('a', { href: `/trials/${r.id}` }, r.id,
        r.id === this.table.best_trial ? el('span', { class: 'best', title: `best ${this.table.metric}` }, ' ★') : '') },
      { title: 'State', sort: (r) => r.state, cell: (r) => stateBadge(r.state) },
      ...this.hparamNames().map((n) => ({ title: n, class: 'num', sort: (r) => r.hp[n], cell: (r) => fmtValue(r.hp[n]) })),
      ...this.metricNames().map((n) => ({ title: n === metric ? `${n} (best)` : n, class: 'num', sort: (r) => r.m[n], cell: (r) => fmtValue(r.m[n]) })),
      { title: 'Batches', class: 'num', sort: (r) => r.batches, cell: (r) => fmtNum(r.batches) },
      { title: 'Restarts', class: 'num', sort: (r) => r.restarts, cell: (r) => r.restarts },
    ];
    redrawKeepingFocus(this.tableBox, () => fill(this.tableBox,
      el('p', { class: 'muted', id: 'search-count' }, `${rows.length} of ${this.table.trials.length} trials shown`),
      table(columns, rows, { empty: 'No trial passes the filters.', caption: 'Trials by hyperparameter', sort: this.sort,
        limit: this.limit, onMore: () => { this.limit += 100; this.drawTable(); },
        rowAttrs: (r) => ({ dataset: { trialId: r.id, state: r.state } }) })));
    this.updateCompare();
  }

  updateCompare() {
    const n = this.selected.size;
    this.compareButton.disabled = n < 2 || n > 10;
    this.compareButton.textContent = `Compare selected (${n})`;
  }

  // Colour of a row by the chosen metric, best green.
  colourer(rows) {
    const metric = this.metricSelect.value || this.table.metric;
    const vals = rows.map((r) => r.m[metric]).filter((v) => typeof v === 'number');
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    const smaller = metric !== this.table.metric || this.table.smaller_is_better;
    return (r) => {
      const v = r.m[metric];
      if (typeof v !== 'number') return ramp(null);
      const t = hi > lo ? (v - lo) / (hi - lo) : 0;
      return ramp(smaller ? t : 1 - t);
    };
  }

  drawParallel() {
    const metric = this.metricSelect.value || this.table.metric;
    const names = [...this.hparamNames(), metric];
    const all = this.rows();
    const W = Math.max(480, this.parallel.clientWidth || 800);
    const H = 260;
    const top = 24;
    const bottom = H - 28;
    const x = (i) => 50 + (i * (W - 100)) / Math.max(1, names.length - 1);
    const axes = names.map((n) => axisFor(all.map((r) => this.value(r, n)), bottom, top));
    const visible = new Set(this.visible().map((r) => r.id));
    const colour = this.colourer(all);
    const lines = all.map((r) => {
      const pts = names.map((n, i) => { const v = this.value(r, n); return v === undefined || v === null ? null : `${x(i)},${axes[i].pos(v)}`; });
      if (pts.some((p) => p === null)) return null;
      return svg('polyline', { points: pts.join(' '), fill: 'none', stroke: visible.has(r.id) ? colour(r) : '#ddd',
        'stroke-width': visible.has(r.id) ? 1.5 : 1, 'stroke-dasharray': r.state === 'STOPPED' ? '4 3' : null,
        'data-trial-id': r.id, 'data-visible': visible.has(r.id) });
    });
    const axisNodes = names.map((n, i) => this.axisNode(n, axes[i], x(i), top, bottom));
    const root = svg('svg', { width: W, height: H, role: 'img', 'aria-label': `parallel coordinates of ${names.join(', ')}` },
      svg('g', {}, lines), axisNodes);
    this.parallel.replaceChildren(this.parallel.firstChild, root);
    this.parallel.dataset.lines = String(visible.size);
  }

  // One axis with its ticks, its brush and the drag that sets it.
  axisNode(name, axis, x, top, bottom) {
    const g = svg('g', { class: 'axis', 'data-axis': name },
      svg('line', { x1: x, x2: x, y1: top, y2: bottom, stroke: '#333' }),
      svg('text', { x, y: bottom + 18, 'text-anchor': 'middle', 'font-size': 11 }, document.createTextNode(name)),
      axis.ticks.map(([v, label]) => svg('text', { x: x + 4, y: axis.pos(v), 'font-size': 9, fill: '#555' }, document.createTextNode(label))));
    if (!axis.invert) return g;
    const brush = this.brushes.get(name);
    if (brush) {
      const [y1, y2] = [axis.pos(brush[1]), axis.pos(brush[0])];
      g.append(svg('rect', { x: x - 6, y: Math.min(y1, y2), width: 12, height: Math.abs(y2 - y1), fill: 'rgba(31,119,180,0.25)', stroke: '#1f77b4', class: 'brush' }));
    }
    const hit = svg('rect', { x: x - 10, y: top, width: 20, height: bottom - top, fill: 'transparent', class: 'brush-hit' });
    hit.addEventListener('mousedown', (down) => {
      const box = hit.ownerSVGElement.getBoundingClientRect();
      const start = down.clientY - box.top;
      const up = (e) => {
        window.removeEventListener('mouseup', up);
        const end = e.clientY - box.top;
        if (Math.abs(end - start) < 3) this.brushes.delete(name);
        else { const a = axis.invert(Math.max(start, end)); const b = axis.invert(Math.min(start, end)); this.brushes.set(name, [Math.min(a, b), Math.max(a, b)]); }
        this.draw();
      };
      window.addEventListener('mouseup', up);
      down.preventDefault();
    });
    g.append(hit);
    return g;
  }

  drawScatter() {
    const metric = this.metricSelect.value || this.table.metric;
    const name = this.xSelect.value;
    const rows = this.visible().filter((r) => typeof r.m[metric] === 'number' && this.value(r, name) !== undefined);
    const W = Math.max(360, this.scatter.clientWidth || 600);
    const H = 240;
    const ax = axisFor(rows.map((r) => this.value(r, name)), 60, W - 20);
    const ay = axisFor(rows.map((r) => r.m[metric]), H - 30, 14);
    const colour = this.colourer(rows);
    const dots = rows.map((r) => svg('circle', { cx: ax.pos(this.value(r, name)), cy: ay.pos(r.m[metric]), r: 4, fill: colour(r), 'data-trial-id': r.id },
      svg('title', {}, document.createTextNode(`trial ${r.id}: ${name}=${fmtValue(this.value(r, name))}, ${metric}=${fmtNum(r.m[metric])}`))));
    const labels = [
      ...ax.ticks.map(([v, l]) => svg('text', { x: ax.pos(v), y: H - 12, 'font-size': 9, 'text-anchor': 'middle' }, document.createTextNode(l))),
      ...ay.ticks.map(([v, l]) => svg('text', { x: 4, y: ay.pos(v), 'font-size': 9 }, document.createTextNode(l))),
      svg('text', { x: W / 2, y: H - 1, 'font-size': 11, 'text-anchor': 'middle' }, document.createTextNode(`${name} (${ax.kind})`)),
    ];
    this.scatter.replaceChildren(this.scatter.firstChild,
      svg('svg', { width: W, height: H, role: 'img', 'aria-label': `${metric} against ${name}` }, labels, dots));
    this.scatter.dataset.points = String(rows.length);
    this.scatter.dataset.xAxis = ax.kind;
  }

  drawHeat() {
    const metric = this.metricSelect.value || this.table.metric;
    const [nx, ny] = [this.hx.value, this.hy.value];
    const rows = this.visible().filter((r) => typeof r.m[metric] === 'number');
    const xs = [...new Set(rows.map((r) => String(this.value(r, nx))))].sort(numericFirst).slice(0, 24);
    const ys = [...new Set(rows.map((r) => String(this.value(r, ny))))].sort(numericFirst).slice(0, 24);
    const cell = new Map();
    const smaller = metric !== this.table.metric || this.table.smaller_is_better;
    for (const r of rows) {
      const key = `${this.value(r, nx)}\u0000${this.value(r, ny)}`;
      const v = r.m[metric];
      if (!cell.has(key) || (smaller ? v < cell.get(key) : v > cell.get(key))) cell.set(key, v);
    }
    const vals = [...cell.values()];
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    const cw = 56;
    const ch = 22;
    const nodes = [];
    ys.forEach((y, j) => {
      nodes.push(svg('text', { x: 2, y: 30 + j * ch + 15, 'font-size': 10 }, document.createTextNode(y)));
      xs.forEach((x, i) => {
        const v = cell.get(`${x}\u0000${y}`);
        const t = v === undefined ? null : hi > lo ? (v - lo) / (hi - lo) : 0;
        nodes.push(svg('rect', { x: 70 + i * cw, y: 30 + j * ch, width: cw - 2, height: ch - 2, fill: ramp(t === null ? null : smaller ? t : 1 - t), class: 'heat-cell' },
          svg('title', {}, document.createTextNode(`${nx}=${x}, ${ny}=${y}: ${v === undefined ? 'no trial' : fmtNum(v)}`))));
      });
    });
    xs.forEach((x, i) => nodes.push(svg('text', { x: 70 + i * cw + cw / 2, y: 24, 'font-size': 10, 'text-anchor': 'middle' }, document.createTextNode(x))));
    this.heat.replaceChildren(this.heat.firstChild, svg('svg', { width: 80 + xs.length * cw, height: 40 + ys.length * ch, role: 'img',
      'aria-label': `best ${metric} by ${nx} and ${ny}` }, nodes));
    this.heat.dataset.cells = String(cell.size);
  }
}

function numericFirst(a, b) {
  const x = Number(a);
  const y = Number(b);
  if (!Number.isNaN(x) && !Number.isNaN(y)) return x - y;
  return a < b ? -1 : a > b ? 1 : 0;
}

function fmtValue(v) {
  if (v === undefined || v === null) return '—';
  return typeof v === 'number' ? fmtNum(v) : String(v);
}
