// Values under the mouse on the heatmap charts.
import { $ } from './dom.js';
import { session } from './session.js';
import { canvasOf } from './charts.js';

function cellAt(name, event) {
  const info = session.drawn[name];
  const g = info?.geometry;
  if (!g) return null;
  const canvas = canvasOf(name);
  const rect = canvas.getBoundingClientRect();
  const x = (event.clientX - rect.left) * (canvas.width / rect.width) - g.left;
  const y = (event.clientY - rect.top) * (canvas.height / rect.height) - g.top;
  if (x < 0 || y < 0 || x >= g.width || y >= g.height) return null;
  const col = Math.floor((x / g.width) * g.cols);
  const row = Math.floor((y / g.height) * g.rows);
  return { row, col, value: info.values[row * g.cols + col], info };
}

function describeCell(name, c) {
  const rowLabel = c.info.row_labels[c.row] ?? c.row;
  const colLabel = c.info.col_labels[c.col] ?? c.col;
  const v = Number.isFinite(c.value) ? c.value.toFixed(4) : '−∞ (masked)';
  if (name === 'attention') return `"${rowLabel}" → "${colLabel}": ${v}`;
  if (name === 'pos-table' || name === 'pos-sin-table') return `position ${c.row}, feature ${c.col}: ${v}`;
  if (name.startsWith('pos-')) return `positions ${c.row} and ${c.col}: cosine ${v}`;
  return `row ${c.row} (${rowLabel}), column ${c.col}${c.info.col_labels.length ? ` (${colLabel})` : ''}: ${v}`;
}

export function attachHover(name) {
  const canvas = canvasOf(name);
  const tip = $('tooltip');
  canvas.addEventListener('mousemove', (event) => {
    const c = cellAt(name, event);
    if (!c) { tip.hidden = true; return; }
    tip.textContent = describeCell(name, c);
    tip.hidden = false;
    tip.style.left = `${Math.min(event.clientX + 14, innerWidth - 330)}px`;
    tip.style.top = `${event.clientY + 14}px`;
  });
  canvas.addEventListener('mouseleave', () => { tip.hidden = true; });
}
