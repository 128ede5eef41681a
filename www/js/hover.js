// Values under the mouse on the heatmap charts, and the row or column of a hovered label.
// Rust reports every box (cells, labels) in CSS pixels of the chart (`drawn.width` wide),
// whatever the canvas's pixel density, so a mouse position maps to the chart by the ratio of
// that width to the canvas's width on screen.
import { $ } from './dom.js';
import { session } from './session.js';
import { canvasOf } from './charts.js';

export function chartPoint(name, event) {
  const info = session.drawn[name];
  if (!info) return null;
  const rect = canvasOf(name).getBoundingClientRect();
  const x = (event.clientX - rect.left) * ((info.width || rect.width) / rect.width);
  const y = (event.clientY - rect.top) * ((info.height || rect.height) / rect.height);
  return { info, x, y };
}

export function cellAt({ info, x, y }) {
  const g = info.geometry;
  if (!g) return null;
  const gx = x - g.left;
  const gy = y - g.top;
  if (gx < 0 || gy < 0 || gx >= g.width || gy >= g.height) return null;
  const col = Math.floor((gx / g.width) * g.cols);
  const row = Math.floor((gy / g.height) * g.rows);
  return { row, col, value: info.values[row * g.cols + col], info };
}

function labelAt({ info, x, y }) {
  const labels = info.labels;
  if (!labels) return null;
  for (const [axis, boxes] of [['row', labels.rows], ['col', labels.cols]]) {
    for (const b of boxes) {
      if (x >= b.x - 2 && x <= b.x + b.width + 2 && y >= b.y - 1 && y <= b.y + b.height + 1) return { axis, index: b.index };
    }
  }
  return null;
}

function describeCell(name, c) {
  const rowLabel = c.info.row_labels[c.row] ?? c.row;
  const colLabel = c.info.col_labels[c.col] ?? c.col;
  let v = Number.isFinite(c.value) ? c.value.toFixed(4) : '−∞ (masked)';
  const clip = c.info.clipped;
  if (clip && Number.isFinite(c.value) && (c.value > clip.high || c.value < clip.low)) v += ' (beyond the colour bar: drawn in its end colour)';
  if (name === 'attention') return `"${rowLabel}" → "${colLabel}": ${v}`;
  if (name === 'pos-table' || name === 'pos-sin-table') return `position ${c.row}, feature ${c.col}: ${v}`;
  if (name.startsWith('pos-')) return `positions ${c.row} and ${c.col}: cosine ${v}`;
  return `row ${c.row} (${rowLabel}), column ${c.col}${c.info.col_labels.length ? ` (${colLabel})` : ''}: ${v}`;
}

function describeLabel(name, info, label) {
  const names = label.axis === 'row' ? info.row_labels : info.col_labels;
  const text = names[label.index];
  const what = name === 'attention' ? (label.axis === 'row' ? 'query' : 'key') : (label.axis === 'row' ? 'row' : 'column');
  return `${what} ${label.index}${text !== undefined ? `: "${text}"` : ''}`;
}

// A highlighted row or column is drawn over the chart; the chart's own pixels are kept to
// put back when the mouse moves on, unless Rust has redrawn the chart meanwhile.
const highlights = new Map(); // name -> { info, image }

function clearHighlight(name) {
  const h = highlights.get(name);
  if (!h) return;
  highlights.delete(name);
  const canvas = canvasOf(name);
  if (session.drawn[name] === h.info) canvas.getContext('2d').putImageData(h.image, 0, 0);
  delete canvas.dataset.highlight;
}

function highlight(name, info, label) {
  const key = `${label.axis} ${label.index}`;
  const canvas = canvasOf(name);
  if (highlights.has(name) && canvas.dataset.highlight === key) return;
  clearHighlight(name);
  const g = info.geometry;
  const ctx = canvas.getContext('2d');
  highlights.set(name, { info, image: ctx.getImageData(0, 0, canvas.width, canvas.height) });
  const scale = info.scale || 1;
  ctx.save();
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  const box = label.axis === 'row'
    ? [g.left, g.top + (label.index * g.height) / g.rows, g.width, g.height / g.rows]
    : [g.left + (label.index * g.width) / g.cols, g.top, g.width / g.cols, g.height];
  ctx.fillStyle = 'rgba(255, 255, 255, 0.35)'; // soften the rest, so the band stands out
  ctx.fillRect(g.left, g.top, g.width, g.height);
  ctx.putImageData(highlights.get(name).image, 0, 0, box[0] * scale, box[1] * scale, box[2] * scale, box[3] * scale);
  ctx.lineWidth = 2;
  ctx.strokeStyle = '#d55e00';
  ctx.strokeRect(...box);
  const b = (label.axis === 'row' ? info.labels.rows : info.labels.cols).find((l) => l.index === label.index);
  if (b) ctx.strokeRect(b.x - 2, b.y - 1, b.width + 4, b.height + 2);
  ctx.restore();
  canvas.dataset.highlight = key;
}

export function attachHover(name) {
  const canvas = canvasOf(name);
  const tip = $('tooltip');
  const show = (text, event) => {
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = `${Math.min(event.clientX + 14, innerWidth - 330)}px`;
    tip.style.top = `${event.clientY + 14}px`;
  };
  canvas.addEventListener('mousemove', (event) => {
    const point = chartPoint(name, event);
    const label = point && labelAt(point);
    if (label) {
      highlight(name, point.info, label);
      show(describeLabel(name, point.info, label), event);
      return;
    }
    clearHighlight(name);
    const c = point && cellAt(point);
    if (!c) { tip.hidden = true; return; }
    show(describeCell(name, c), event);
  });
  canvas.addEventListener('mouseleave', () => { tip.hidden = true; clearHighlight(name); });
}
