// Line charts with uPlot (web/public/vendor/uplot, loaded by index.html as the global `uPlot`):
// one chart, any number of lines, each with its own x values (aligned with uPlot.join).
// The container's data-points attribute lists how many points each line holds (the tests
// compare it with the API's answer).

import { el, fmtNum } from './util.js';

export const kPalette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
  '#17becf', '#7f7f7f', '#bcbd22'];

// Sets the caption and label of a chart's <figure> made with a title (nothing without one).
export function setFigureTitle(figure, title) {
  const caption = figure.querySelector('figcaption');
  if (!caption || caption.textContent === title) return;
  caption.textContent = title;
  figure.setAttribute('aria-label', title);
}

export class LineChart {
  // `xTime`: the x values are unix seconds (drawn in the viewer's time zone); else numbers
  // (batches). `yFormat`: how the y axis and legend print values.
  constructor(container, { title, xLabel = 'batch', xTime = false, yFormat = fmtNum, height = 260 } = {}) {
    this.box = el('figure', { class: 'chart', 'aria-label': title || 'chart' },
      title ? el('figcaption', {}, title) : null);
    this.plotArea = el('div', { class: 'chart-plot' });
    this.empty = el('p', { class: 'muted chart-empty' }, 'No points yet.');
    this.box.append(this.plotArea, this.empty);
    container.append(this.box);
    this.options = { title, xLabel, xTime, yFormat, height };
    this.plot = null;
    this.key = '';
    this.resize = new ResizeObserver(() => {
      if (this.plot) this.plot.setSize({ width: this.width(), height: this.options.height });
    });
    this.resize.observe(this.box);
  }

  width() { return Math.max(240, this.box.clientWidth - 8); }

  // Changes the caption (a chart made with a title) when what it shows changes.
  setTitle(title) { setFigureTitle(this.box, title); }

  // lines: [{label, points: [[x, y], ...], emphasis?}] with x increasing; when some lines have
  // `emphasis`, they are drawn thick and the others thin and grey.
  setLines(lines) {
    const nonEmpty = lines.filter((l) => l.points.length > 0);
    this.box.dataset.points = JSON.stringify(lines.map((l) => l.points.length));
    this.box.dataset.lines = String(lines.length);
    this.box.dataset.emphasized = String(lines.filter((l) => l.emphasis).length);
    this.empty.hidden = nonEmpty.length > 0;
    this.plotArea.hidden = nonEmpty.length === 0;
    if (nonEmpty.length === 0) return;
    const tables = nonEmpty.map((l) => [l.points.map((p) => p[0]), l.points.map((p) => p[1])]);
    const data = tables.length === 1 ? tables[0] : uPlot.join(tables);
    const key = nonEmpty.map((l) => `${l.label}${l.emphasis ? '*' : ''}`).join('\u0000') + `|${this.options.xTime}`;
    if (this.plot && key === this.key) {
      this.plot.setData(data);
      return;
    }
    if (this.plot) this.plot.destroy();
    this.key = key;
    this.plot = new uPlot(this.uplotOptions(nonEmpty), data, this.plotArea);
  }

  uplotOptions(lines) {
    const dim = lines.some((l) => l.emphasis);
    const { xLabel, xTime, yFormat, height } = this.options;
    const yValues = (u, values) => values.map((v) => yFormat(v));
    return {
      width: this.width(),
      height,
      scales: { x: { time: xTime } },
      axes: [
        { label: xLabel, ...(xTime ? {} : { values: (u, vs) => vs.map((v) => fmtNum(v)) }) },
        { values: yValues, size: 90 },
      ],
      series: [
        { label: xLabel, value: xTime ? undefined : (u, v) => fmtNum(v) },
        ...lines.map((l, i) => ({
          label: l.label,
          // With some lines emphasized (selected), the others are drawn thin and grey.
          stroke: dim && !l.emphasis ? '#c4c4c4' : kPalette[i % kPalette.length],
          width: l.emphasis ? 3 : dim ? 1 : 1.5,
          spanGaps: true,
          points: { show: l.points.length < 60 },
          value: (u, v) => yFormat(v),
        })),
      ],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
    };
  }

  destroy() {
    this.resize.disconnect();
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }
}
