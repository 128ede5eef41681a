// The attention section: layer and head choice, heatmap or lines, and the grid of every head.
import { $, fillSelect } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { canvasOf, draw } from './charts.js';

export function selectHead(layer, head) {
  const { config } = session;
  state.layer = Math.max(0, Math.min(config.n_layers - 1, layer));
  state.head = Math.max(0, Math.min(config.n_heads - 1, head));
  $('layer').value = state.layer;
  $('head').value = state.head;
  draw('attention');
  draw('grid');
  writeUrl();
}

function attachGrid() {
  const canvas = canvasOf('grid');
  canvas.addEventListener('click', (event) => {
    const drawn = session.drawn.grid;
    const g = drawn?.grid;
    if (!g) return;
    const rect = canvas.getBoundingClientRect(); // the grid's boxes are in CSS pixels of the chart
    const x = (event.clientX - rect.left) * (drawn.width / rect.width) - g.left;
    const y = (event.clientY - rect.top) * (drawn.height / rect.height) - g.top;
    const head = Math.floor(x / g.cell_width);
    const layer = Math.floor(y / g.cell_height);
    if (x >= 0 && y >= 0 && head < g.heads && layer < g.layers) selectHead(layer, head);
  });
  canvas.addEventListener('keydown', (event) => {
    const moves = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
    const move = moves[event.key];
    if (!move) return;
    event.preventDefault();
    event.stopPropagation();
    selectHead(state.layer + move[0], state.head + move[1]);
  });
}

export function wireAttention() {
  const { config } = session;
  fillSelect($('layer'), [...Array(config.n_layers).keys()], (l) => `${l}`, Math.min(state.layer, config.n_layers - 1));
  fillSelect($('head'), [...Array(config.n_heads).keys()], (h) => `${h}`, Math.min(state.head, config.n_heads - 1));
  state.layer = Number($('layer').value);
  state.head = Number($('head').value);
  document.querySelector(`input[name=mode][value=${state.mode}]`).checked = true;
  $('layer').addEventListener('change', () => selectHead(Number($('layer').value), state.head));
  $('head').addEventListener('change', () => selectHead(state.layer, Number($('head').value)));
  document.querySelectorAll('input[name=mode]').forEach((r) => r.addEventListener('change', () => {
    state.mode = r.value;
    draw('attention');
    writeUrl();
  }));
  attachGrid();
}
