// The trial's Logs tab: its log from the start, followed live (GET /api/v1/trials/{id}/logs
// ?after=SEQ&follow=1: the master answers as soon as a line arrives), filtered by rank on the
// master and by text here, and downloadable whole. At most kKeep lines are kept in the page (the
// newest; the download has all), so a trial with 100,000 lines stays responsive.

import { api, describeError, saveBlob } from '../api.js';
import { el, errorBox, fill } from '../util.js';

const kKeep = 5000;
// While pages arrive back to back (a long log read from the start), the lines in the page are
// redrawn at most this often: the browser's layout of the 5,000 lines takes about 100 ms on a
// 2-core machine, so one redraw per 1,000-line page made reading 100,000 lines take 15 s.
const kRedrawEveryMs = 300;
// A line's level, by the words loggers write (glog's and Cohort's "ERROR file.cc:12]", Python's
// "ERROR:root:", "Traceback", "W1124 ..." glog prefixes).
const kLevels = {
  error: /\b(ERROR|FATAL|CRITICAL|Traceback)\b|^E\d{4} /,
  warning: /\b(ERROR|FATAL|CRITICAL|Traceback|WARN|WARNING)\b|^[EW]\d{4} /,
};

export class LogsTab {
  constructor(trial, ctx) {
    this.trial = trial;
    this.ctx = ctx;
    this.rank = el('select', { id: 'log-rank' }, el('option', { value: '' }, 'All ranks'));
    this.search = el('input', { id: 'log-search', type: 'search', placeholder: 'text in the line' });
    this.level = el('select', { id: 'log-level' },
      el('option', { value: '' }, 'Any level'),
      el('option', { value: 'warning' }, 'Warnings and errors'),
      el('option', { value: 'error' }, 'Errors'));
    this.level.addEventListener('change', () => this.draw());
    this.follow = el('input', { id: 'log-follow', type: 'checkbox', checked: true });
    const download = el('button', { type: 'button', id: 'log-download' }, 'Download full log');
    this.rank.addEventListener('change', () => this.restart());
    this.search.addEventListener('input', () => this.draw());
    this.follow.addEventListener('change', () => { if (this.follow.checked) this.restart(); });
    download.addEventListener('click', () => this.downloadAll(download));
    this.message = el('div', { 'aria-live': 'polite' });
    this.count = el('p', { class: 'muted', id: 'log-count' });
    this.lines = el('div', { class: 'log', id: 'log-lines', tabindex: '0', role: 'log', 'aria-label': 'Trial log' });
    this.panel = el('div', {},
      el('div', { class: 'controls' },
        el('label', { for: 'log-rank' }, 'Rank'), this.rank,
        el('label', { for: 'log-level' }, 'Level'), this.level,
        el('label', { for: 'log-search' }, 'Search'), this.search,
        el('label', { class: 'check' }, this.follow, 'Follow'), download),
      this.message, this.count, this.lines);
    this.entries = [];
    this.pending = []; // lines received but not yet in the page (at most kKeep, the newest)
    this.redrawTimer = null;
    this.lastRedraw = -Infinity;
    this.ranks = new Set();
    this.generation = 0;
    this.started = false;
    ctx.onCleanup(() => {
      this.generation++;
      if (this.abort) this.abort.abort();
      clearTimeout(this.redrawTimer);
    });
  }

  show() {
    if (this.started) return;
    this.started = true;
    this.restart();
  }

  restart() {
    this.generation++;
    if (this.abort) this.abort.abort();
    this.entries = [];
    this.pending = [];
    this.total = 0;
    this.draw();
    this.loop(this.generation);
  }

  // Reads pages after the last line until the trial's log is done (or the page is left).
  async loop(generation) {
    let after = 0;
    while (this.ctx.alive && generation === this.generation) {
      this.abort = new AbortController();
      const rank = this.rank.value;
      const follow = this.follow.checked;
      const query = `after=${after}${rank ? `&rank=${rank}` : ''}${follow ? '&follow=1&timeout=20' : ''}`;
      let page;
      try {
        page = await api(`/trials/${this.trial.id}/logs?${query}`, { signal: this.abort.signal });
        this.message.replaceChildren();
      } catch (e) {
        if (e.name === 'AbortError' || generation !== this.generation) return;
        this.message.replaceChildren(errorBox(`Could not read the log: ${describeError(e)}`));
        await new Promise((r) => setTimeout(r, 3000));
        continue;
      }
      if (generation !== this.generation) return;
      after = page.next;
      this.add(page.logs);
      if (page.logs.length === 0 && (page.done || !follow)) return;
    }
  }

  add(logs) {
    if (logs.length === 0) return;
    this.total += logs.length;
    this.entries.push(...logs);
    if (this.entries.length > kKeep) this.entries.splice(0, this.entries.length - kKeep);
    let newRank = false;
    for (const l of logs) {
      if (l.rank >= 0 && !this.ranks.has(l.rank)) { this.ranks.add(l.rank); newRank = true; }
    }
    if (newRank) this.updateRanks();
    this.pending.push(...logs);
    if (this.pending.length > kKeep) this.pending.splice(0, this.pending.length - kKeep);
    this.scheduleRedraw();
  }

  // Shows the pending lines now if the last redraw was kRedrawEveryMs ago, else then.
  scheduleRedraw() {
    if (this.redrawTimer !== null) return;
    const wait = Math.max(0, this.lastRedraw + kRedrawEveryMs - performance.now());
    this.redrawTimer = setTimeout(() => {
      this.redrawTimer = null;
      this.lastRedraw = performance.now();
      this.showPending();
    }, wait);
  }

  showPending() {
    if (this.pending.length === 0) return;
    if (this.search.value || this.level.value) {
      this.draw();
      return;
    }
    // Without a filter the new lines are appended and the oldest dropped: no redraw of the rest.
    const stick = this.atBottom();
    this.lines.append(...this.pending.map(lineNode));
    this.pending = [];
    while (this.lines.childElementCount > kKeep) this.lines.firstElementChild.remove();
    this.updateCount(this.entries.length, '');
    if (stick || this.follow.checked) this.lines.scrollTop = this.lines.scrollHeight;
  }

  atBottom() {
    return this.lines.scrollHeight - this.lines.scrollTop - this.lines.clientHeight < 40;
  }

  updateCount(shown, text) {
    const dropped = this.total - this.entries.length;
    this.count.textContent = `${shown} line${shown === 1 ? '' : 's'} shown` +
      (text ? ` matching "${text}"` : '') +
      (dropped > 0 ? ` (the newest ${this.entries.length} of ${this.total}: download the full log for the rest)` : '');
  }

  updateRanks() {
    const chosen = this.rank.value;
    fill(this.rank, el('option', { value: '' }, 'All ranks'),
      [...this.ranks].sort((a, b) => a - b).map((r) => el('option', { value: String(r) }, `Rank ${r}`)));
    this.rank.value = chosen;
  }

  // Redraws every kept line that passes the filters.
  draw() {
    this.pending = [];
    const text = this.search.value.toLowerCase();
    const level = kLevels[this.level.value];
    const shown = text || level
      ? this.entries.filter((l) => (!text || l.line.toLowerCase().includes(text)) && (!level || level.test(l.line)))
      : this.entries;
    const stick = this.atBottom();
    fill(this.lines, shown.map(lineNode));
    this.updateCount(shown.length, [this.search.value, this.level.value && this.level.selectedOptions[0].text.toLowerCase()].filter(Boolean).join('", "'));
    if (stick || this.follow.checked) this.lines.scrollTop = this.lines.scrollHeight;
  }

  // Pages through the whole log (with the chosen rank) and saves it as text.
  async downloadAll(button) {
    button.disabled = true;
    const parts = [];
    try {
      let after = 0;
      const rank = this.rank.value;
      for (;;) {
        const page = await api(`/trials/${this.trial.id}/logs?after=${after}${rank ? `&rank=${rank}` : ''}`, { signal: this.ctx.signal });
        for (const l of page.logs) parts.push(`${l.time ? `${new Date(l.time * 1000).toISOString()} ` : ''}${l.rank >= 0 ? `[rank=${l.rank}] ` : ''}${l.line}\n`);
        if (page.logs.length === 0 || page.next === after) break;
        after = page.next;
      }
      saveBlob(new Blob(parts, { type: 'text/plain' }), `trial-${this.trial.id}${rank ? `-rank-${rank}` : ''}.log`);
    } catch (e) {
      if (e.name !== 'AbortError') this.message.replaceChildren(errorBox(`Could not download the log: ${describeError(e)}`));
    } finally {
      button.disabled = false;
    }
  }
}

function lineNode(l) {
  return el('div', { class: 'log-line', dataset: { rank: l.rank } },
    timeNode(l.time), el('span', { class: 'log-rank' }, l.rank >= 0 ? `[rank=${l.rank}]` : '[system]'), ' ', l.line);
}

// When the master stored the line (unix seconds; 0 or absent: from before lines had times):
// HH:MM:SS in the viewer's time zone, the date and milliseconds in its title. Built by hand and
// once per second of lines (a log's lines come in bursts): this runs for every line added, up
// to 5,000 per redraw, where Intl formatting or a Date per line would slow reading a long log.
const second = { at: null, hms: '', day: '' };
function timeNode(seconds) {
  if (!seconds) return null;
  const whole = Math.floor(seconds);
  if (whole !== second.at) {
    const d = new Date(whole * 1000);
    const p = (n) => String(n).padStart(2, '0');
    Object.assign(second, {
      at: whole,
      hms: `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`,
      day: `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`,
    });
  }
  const ms = String(Math.min(999, Math.round((seconds - whole) * 1000))).padStart(3, '0');
  return [el('time', { class: 'log-time', title: `${second.day} ${second.hms}.${ms}` }, second.hms), ' '];
}
