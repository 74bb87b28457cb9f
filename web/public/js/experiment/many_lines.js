// A canvas chart for many lines: the learning curves of hundreds or thousands of trials on one
// chart. uPlot aligns every line on one shared x array (the union of all trials' x values), which
// at 1,000 downsampled trials is millions of cells; here each line keeps its own points and is
// one canvas path. Emphasized lines (the trials selected in the table) are drawn last, in colour
// and thicker; the others thin and grey, or blue when none is emphasized. Hovering shows the
// nearest point's trial and value. Same setLines() as LineChart, plus `emphasis` per line.
// The figure's data-lines, data-points (total) and data-draw-ms attributes are for the tests.

import { kPalette, setFigureTitle } from '../chart.js';
import { el, fmtNum } from '../util.js';

const kMargin = { left: 72, right: 12, top: 10, bottom: 34 };

// About five round values covering [lo, hi].
function ticks(lo, hi) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / 5;
  const step = 10 ** Math.floor(Math.log10(raw));
  const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => s >= raw) || 10 * step;
  const out = [];
  for (let v = Math.ceil(lo / nice) * nice; v <= hi + nice * 1e-9; v += nice) out.push(v);
  return out;
}

export class ManyLinesChart {
  constructor(container, { title, xLabel = 'batch', height = 300 } = {}) {
    this.canvas = el('canvas', { class: 'many-lines', 'aria-hidden': 'true' });
    this.tip = el('div', { class: 'chart-tip', hidden: true });
    this.legend = el('p', { class: 'muted chart-legend' });
    this.empty = el('p', { class: 'muted chart-empty' }, 'No points yet.');
    this.box = el('figure', { class: 'chart many', 'aria-label': title || 'chart' },
      title ? el('figcaption', {}, title) : null, this.canvas, this.tip, this.legend, this.empty);
    container.append(this.box);
    Object.assign(this, { xLabel, height, lines: [], frame: 0 });
    this.resize = new ResizeObserver(() => this.draw());
    this.resize.observe(this.box);
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => { this.tip.hidden = true; });
  }

  // Changes the caption when what the chart shows changes.
  setTitle(title) { setFigureTitle(this.box, title); }

  setLines(lines) {
    this.lines = lines;
    this.box.dataset.lines = String(lines.length);
    this.box.dataset.emphasized = String(lines.filter((l) => l.emphasis).length);
    this.box.dataset.points = String(lines.reduce((n, l) => n + l.points.length, 0));
    this.draw();
  }

  // The data's ranges and the mapping to pixels for the canvas's current size.
  layout(width) {
    let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
    for (const l of this.lines) {
      for (const [x, y] of l.points) {
        if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
    if (x0 > x1) return null;
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y0 === y1) { y0 -= 1; y1 += 1; }
    const w = width - kMargin.left - kMargin.right;
    const h = this.height - kMargin.top - kMargin.bottom;
    return {
      x0, x1, y0, y1,
      px: (x) => kMargin.left + ((x - x0) / (x1 - x0)) * w,
      py: (y) => kMargin.top + (1 - (y - y0) / (y1 - y0)) * h,
    };
  }

  draw() {
    const started = performance.now();
    const width = Math.max(240, this.box.clientWidth - 8);
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(width * ratio);
    this.canvas.height = Math.round(this.height * ratio);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${this.height}px`;
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, this.height);
    this.map = this.layout(width);
    this.empty.hidden = !!this.map;
    this.canvas.hidden = !this.map;
    if (!this.map) return;
    this.drawAxes(ctx, width);
    const emphasized = this.lines.filter((l) => l.emphasis);
    const plain = this.lines.filter((l) => !l.emphasis);
    ctx.lineWidth = 1;
    ctx.strokeStyle = emphasized.length ? 'rgba(150, 150, 150, 0.35)' : 'rgba(31, 119, 180, 0.45)';
    ctx.beginPath();
    for (const l of plain) this.trace(ctx, l.points);
    ctx.stroke();
    emphasized.forEach((l, i) => {
      ctx.lineWidth = 2.5;
      ctx.strokeStyle = kPalette[i % kPalette.length];
      ctx.beginPath();
      this.trace(ctx, l.points);
      ctx.stroke();
    });
    this.legend.replaceChildren(`${this.lines.length} trials`,
      ...emphasized.map((l) => el('span', { class: 'legend-item' }, ` ■ ${l.label}`)));
    this.legend.querySelectorAll('.legend-item').forEach((item, i) => { item.style.color = kPalette[i % kPalette.length]; });
    this.box.dataset.drawMs = String(Math.round(performance.now() - started));
  }

  trace(ctx, points) {
    const { px, py } = this.map;
    let pen = false;
    for (const [x, y] of points) {
      if (!Number.isFinite(x) || !Number.isFinite(y)) { pen = false; continue; }
      if (pen) ctx.lineTo(px(x), py(y));
      else ctx.moveTo(px(x), py(y));
      pen = true;
    }
  }

  drawAxes(ctx, width) {
    const { x0, x1, y0, y1, px, py } = this.map;
    ctx.fillStyle = '#555';
    ctx.strokeStyle = '#e4e4e4';
    ctx.lineWidth = 1;
    ctx.font = '12px system-ui, sans-serif';
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (const v of ticks(y0, y1)) {
      ctx.beginPath();
      ctx.moveTo(kMargin.left, py(v));
      ctx.lineTo(width - kMargin.right, py(v));
      ctx.stroke();
      ctx.fillText(fmtNum(v), kMargin.left - 6, py(v));
    }
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    for (const v of ticks(x0, x1)) ctx.fillText(fmtNum(v), px(v), this.height - kMargin.bottom + 4);
    ctx.fillText(this.xLabel, (kMargin.left + width - kMargin.right) / 2, this.height - 14);
  }

  // The nearest point within 10 px of the pointer: its trial, x and y in the tip.
  hover(event) {
    if (!this.map || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const rect = this.canvas.getBoundingClientRect();
      const [mx, my] = [event.clientX - rect.left, event.clientY - rect.top];
      let best = null;
      let bestD = 100;
      for (const l of this.lines) {
        for (const [x, y] of l.points) {
          const d = (this.map.px(x) - mx) ** 2 + (this.map.py(y) - my) ** 2;
          if (d < bestD) { bestD = d; best = [l, x, y]; }
        }
      }
      this.tip.hidden = !best;
      if (!best) return;
      this.tip.textContent = `${best[0].label}: ${this.xLabel} ${fmtNum(best[1])}, ${fmtNum(best[2])}`;
      this.tip.style.left = `${Math.min(mx + 12, rect.width - 200)}px`;
      this.tip.style.top = `${my + 12}px`;
    });
  }

  destroy() {
    this.resize.disconnect();
    if (this.frame) cancelAnimationFrame(this.frame);
  }
}
