// DOM and formatting helpers shared by the pages. Text always goes in as text nodes (never as
// HTML), so names and log lines from the API cannot inject markup.

// el('a', {href: '/x', class: 'btn'}, 'text', child...): an element. Attributes: `on*`
// functions become listeners, booleans set or omit the attribute, `dataset` an object.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'dataset') {
      Object.assign(node.dataset, value);
    } else if (value === true) {
      node.setAttribute(key, '');
    } else {
      node.setAttribute(key, String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Replaces the children of `node`.
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

// A number with sensible precision: integers as they are (grouped), others with 4 significant
// digits, very large or small ones in exponent form. null/undefined/NaN: an em dash.
export function fmtNum(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  if (typeof value !== 'number') return String(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e15) return value.toLocaleString();
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e6 || abs < 1e-3)) return value.toExponential(3);
  return Number(value.toPrecision(4)).toLocaleString(undefined, { maximumFractionDigits: 6 });
}

// Bytes as B, KiB, MiB, GiB.
export function fmtBytes(value) {
  if (value === null || value === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = value;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${i === 0 ? v.toFixed(0) : Number(v.toPrecision(4))} ${units[i]}`;
}

// Unix milliseconds in the viewer's time zone.
export function fmtTime(ms) {
  if (!ms) return '—';
  return new Date(ms).toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

// A duration in milliseconds: "2h 05m", "3m 07s", "12s".
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '—';
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n) => String(n).padStart(2, '0');
  if (h > 0) return `${h}h ${pad(m)}m`;
  if (m > 0) return `${m}m ${pad(s % 60)}s`;
  return `${s}s`;
}

export function fmtPercent(fraction) {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '—';
  return `${(fraction * 100).toFixed(fraction >= 1 ? 0 : 1)}%`;
}

// A progress bar with its percentage as text (and as the bar's accessible value).
export function progressBar(fraction, label) {
  const known = fraction !== null && fraction !== undefined && Number.isFinite(fraction);
  const value = known ? Math.max(0, Math.min(1, fraction)) : 0;
  return el('span', { class: 'progress', dataset: { progress: known ? value.toFixed(4) : '' } },
    el('progress', { max: '1', value: String(value), 'aria-label': label || 'progress' }),
    el('span', { class: 'progress-text' }, known ? fmtPercent(value) : '—'));
}

export function stateBadge(state) {
  return el('span', { class: `state state-${String(state).toLowerCase()}` }, state);
}

export const kFinalExperimentStates = new Set(['COMPLETED', 'CANCELED', 'ERROR', 'DELETING']);
export const kFinalTrialStates = new Set(['COMPLETED', 'CANCELED', 'ERROR', 'STOPPED']);

// A table: columns [{title, cell(row) -> node|text, class?, sort?(row) -> value}], rows.
// `empty`: text when no rows. `sort`: a SortState; columns with `sort` get a header button that
// orders the rows by it (again: the other way). `limit`: at most this many rows (after
// sorting), with a "Show more" button calling `onMore`.
export function table(columns, rows, { empty = 'Nothing yet.', caption, rowAttrs, sort, limit, onMore } = {}) {
  if (rows.length === 0) return el('p', { class: 'muted empty' }, empty);
  const all = sort ? sort.apply(columns, rows) : rows;
  const sorted = limit && all.length > limit ? all.slice(0, limit) : all;
  const more = sorted.length < all.length
    ? el('p', {}, `${sorted.length} of ${all.length} shown. `,
      el('button', { type: 'button', id: `${caption || 'table'}-more`.toLowerCase().replace(/\W+/g, '-'), onclick: onMore }, 'Show more'))
    : null;
  const header = (c, i) => {
    if (!sort || !c.sort) return el('th', { scope: 'col', class: c.class }, c.title);
    const dir = sort.index === i ? sort.dir : 0;
    return el('th', { scope: 'col', class: c.class, 'aria-sort': dir ? (dir > 0 ? 'ascending' : 'descending') : 'none' },
      el('button', { type: 'button', class: 'sort', id: `${sort.id}-sort-${i}`, onclick: () => sort.toggle(i) },
        c.title, el('span', { 'aria-hidden': 'true' }, dir > 0 ? ' ▲' : dir < 0 ? ' ▼' : '')));
  };
  return el('div', { class: 'table-wrap' },
    el('table', {},
      caption ? el('caption', { class: 'visually-hidden' }, caption) : null,
      el('thead', {}, el('tr', {}, columns.map(header))),
      el('tbody', {}, sorted.map((row) => el('tr', rowAttrs ? rowAttrs(row) : {},
        columns.map((c) => el('td', { class: c.class }, c.cell(row))))))), more);
}

// Which column a table is sorted by (kept across redraws); `onChange` redraws.
export class SortState {
  constructor(id, onChange, index = -1, dir = 0) {
    Object.assign(this, { id, onChange, index, dir });
  }
  toggle(index) {
    this.dir = this.index === index ? -this.dir || 1 : 1;
    this.index = index;
    this.onChange();
  }
  apply(columns, rows) {
    const column = columns[this.index];
    if (!column || !column.sort || !this.dir) return rows;
    const key = column.sort;
    return [...rows].sort((a, b) => {
      const x = key(a);
      const y = key(b);
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;  // unknown values last, either way
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * this.dir;
    });
  }
}

// A message box for errors (role=alert: read out by screen readers).
export function errorBox(text) {
  return el('div', { class: 'error', role: 'alert' }, text);
}

// Asks a yes/no question in a modal dialog; resolves true when confirmed. Escape or Cancel:
// false.
export function confirmDialog(question, confirmLabel) {
  return new Promise((resolve) => {
    const dialog = el('dialog', { class: 'confirm', 'aria-label': 'Confirm' },
      el('form', { method: 'dialog' },
        el('p', {}, question),
        el('div', { class: 'buttons' },
          el('button', { value: 'cancel', type: 'submit' }, 'Cancel'),
          el('button', { value: 'ok', type: 'submit', class: 'danger', 'data-confirm': 'ok' },
            confirmLabel))));
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'ok');
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector('button[value=cancel]').focus();
  });
}

// Redraws `container` with `draw()` keeping the keyboard focus on the same control: one that
// has an id, or a row's (data-key) control with the same data-action or href.
export function redrawKeepingFocus(container, draw) {
  const active = document.activeElement;
  let find = null;
  if (active && container.contains(active) && active !== container) {
    if (active.id) {
      find = () => document.getElementById(active.id);
    } else {
      const row = active.closest('[data-key]');
      const what = active.dataset.action ? `[data-action="${active.dataset.action}"]`
        : active.getAttribute('href') ? `[href="${active.getAttribute('href')}"]` : null;
      if (row && what) {
        const key = row.dataset.key;
        find = () => [...container.querySelectorAll('[data-key]')]
          .find((r) => r.dataset.key === key)?.querySelector(what);
      }
    }
  }
  draw();
  if (find) find()?.focus();
}
