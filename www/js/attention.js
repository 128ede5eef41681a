// The attention section: layer and head choice, heatmap or lines (BertViz's head view: hover
// a token for only its lines, hover a line for its weight, several heads at once in colour),
// the caption that says what the chart shows, and the grid of every head.
import { $, fillSelect } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { canvasOf, draw, registerChart } from './charts.js';
import { isEncoderDecoder } from './applicable.js';

registerChart('attention', {
  spec: attentionSpec,
  shape: [0.9, 340],
  // The lines view gives each token a row of its own.
  height: (width, height) => (state.mode === 'lines' ? Math.max(height, session.summary.tokens.length * 22 + 90) : height),
});
/** A grid of every head's thumbnail for a chart `width` wide: square thumbnails that fill the
 * width (the grid leaves room for its labels). A deep model (SmolLM2: 30 layers) gets smaller
 * thumbnails, so the grid stays about a screen tall; a click still opens any head large.
 * `config`: the model the grid is of ({ n_layers, n_heads }; the one shown by default). */
export function gridHeight(width, config = session.config) {
  const font = width < 400 ? 10 : 12;
  const fitWidth = Math.floor((width - (font * 3 + 6) - 4) / config.n_heads);
  const fitHeight = Math.floor(Math.max(640, width * 0.9) / config.n_layers);
  // At most 180 px a thumbnail: a shallow model's few heads need not fill a screen.
  const side = Math.max(12, Math.min(fitWidth, fitHeight, 180));
  return font * 2 + 8 + side * config.n_layers + 4;
}

registerChart('grid', {
  // An encoder-decoder's grid shows the stack the heatmap shows: the encoder's or the decoder's.
  spec: () => ({ kind: 'grid', layer: state.layer, head: state.head, of: showsEncoder() ? 'encoder' : 'self_attention' }),
  shape: [0.62, 240],
  height: (width) => gridHeight(width),
});

const MAX_LINE_HEADS = 8; // the colour-blind-safe palette has eight colours

// The lines view's own choices: other heads of the layer drawn beside the selected one, and
// the token under the mouse (only its lines are drawn).
const lines = { extra: new Set(), focus: null }; // focus: { side: 'from' | 'to', token }

/** The heads the lines view draws: the selected head first, then the others chosen. */
export function linesHeads() {
  return [state.head, ...[...lines.extra].filter((h) => h !== state.head).sort((a, b) => a - b)].slice(0, MAX_LINE_HEADS);
}

/** What the attention chart asks Rust to draw (charts.js). */
export function attentionSpec() {
  if (state.mode !== 'lines') return { kind: 'head', layer: state.layer, head: state.head, encoder: showsEncoder() };
  const f = lines.focus;
  return {
    kind: 'lines', layer: state.layer, head: state.head, heads: linesHeads(),
    focus: f?.side === 'from' ? f.token : null, focus_key: f?.side === 'to' ? f.token : null,
  };
}

export function selectHead(layer, head) {
  const { config } = session;
  const newLayer = Math.max(0, Math.min(config.n_layers - 1, layer));
  if (newLayer !== state.layer) lines.extra.clear(); // the overlaid heads belong to one layer
  state.layer = newLayer;
  state.head = Math.max(0, Math.min(config.n_heads - 1, head));
  $('layer').value = state.layer;
  $('head').value = state.head;
  renderLinesControls();
  draw('attention');
  draw('grid');
  draw('cross');
  draw('cross-grid');
  writeUrl();
  document.dispatchEvent(new CustomEvent('tviz:head', { detail: { layer: state.layer, head: state.head } }));
}

/** Whether the heatmap shows an encoder-decoder's encoder (its self-attention over the source). */
function showsEncoder() {
  return state.stack === 'encoder' && isEncoderDecoder() && state.mode !== 'lines';
}

function renderCaption() {
  const heads = linesHeads();
  let text;
  if (showsEncoder()) {
    text = `The encoder's self-attention, layer ${state.layer}, head ${state.head}: every source token looks at every other, before and after it (nothing is masked). Rows: the token attending; columns: the token attended to. Hover for values.`;
  } else if (state.mode !== 'lines' && isEncoderDecoder()) {
    text = `The decoder's masked self-attention, layer ${state.layer}, head ${state.head}: each token it wrote looks only at itself and the tokens before it (grey cells are masked). Its cross-attention to the source is in the first section. Hover for values.`;
  } else if (state.mode !== 'lines') {
    text = `Heatmap of layer ${state.layer}, head ${state.head}. Rows: the token attending (query). Columns: the token attended to (key). Brighter means more weight; every row adds up to 1. Hover for values.`;
  } else if (heads.length === 1) {
    text = `Lines of layer ${state.layer}, head ${state.head}: each token on the left (query) is joined to the tokens on the right (keys) it takes information from; the darker the line, the more weight. Hover a token to see only its lines, hover a line for its weight.`;
  } else {
    text = `Lines of layer ${state.layer}, heads ${heads.join(', ')} together, one colour per head (legend at the top): where the colours go to different tokens, the heads look for different things. The darker a line, the more weight. Hover a token to see only its lines, hover a line for its weight and head.`;
  }
  $('attention-caption').textContent = text;
}

/** The head checkboxes of the lines view (shown in lines mode only) and the caption. */
export function renderLinesControls() {
  const box = $('lines-heads');
  box.hidden = state.mode !== 'lines';
  const { n_heads: count } = session.config;
  if (box.querySelectorAll('input').length !== count) {
    box.querySelectorAll('label').forEach((l) => l.remove());
    for (let h = 0; h < count; h += 1) {
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.value = h;
      input.addEventListener('change', () => {
        if (h === state.head) { input.checked = true; return; }
        if (input.checked) lines.extra.add(h); else lines.extra.delete(h);
        renderLinesControls();
        draw('attention');
      });
      label.append(input, ` ${h}`);
      box.append(label);
    }
  }
  const heads = linesHeads();
  const full = heads.length >= MAX_LINE_HEADS;
  box.querySelectorAll('input').forEach((input) => {
    const h = Number(input.value);
    input.checked = heads.includes(h);
    input.disabled = h === state.head || (full && !input.checked);
  });
  renderCaption();
}

// Canvas pixel coordinates of a mouse event.
/** A mouse event's point in the chart's own pixels (what every box `Viz::draw` reports is in). */
function canvasPoint(canvas, event, drawn) {
  const rect = canvas.getBoundingClientRect();
  return [(event.clientX - rect.left) * ((drawn?.width || rect.width) / rect.width), (event.clientY - rect.top) * ((drawn?.height || rect.height) / rect.height)];
}

const rowY = (g, i) => g.top + g.row_height * (i + 0.5);

/** The token label or the line under canvas point (x, y) of the lines view, if any. */
function linesTarget(g, x, y) {
  const row = Math.floor((y - g.top) / g.row_height);
  if (row >= 0 && row < g.tokens) {
    if (x < g.left_x && x >= g.left_x - g.label_width - 8) return { token: row, side: 'from' };
    if (x > g.right_x && x <= g.right_x + g.label_width + 8) return { token: row, side: 'to' };
  }
  if (x < g.left_x || x > g.right_x) return null;
  const t = (x - g.left_x) / (g.right_x - g.left_x);
  let best = null;
  for (const line of g.lines) {
    const y0 = rowY(g, line.query);
    const y1 = rowY(g, line.key);
    const slope = (y1 - y0) / (g.right_x - g.left_x);
    const distance = Math.abs(y - (y0 + (y1 - y0) * t)) / Math.sqrt(1 + slope * slope); // to the segment's line
    if (distance <= 5 && (!best || distance < best.distance - 0.5 || (Math.abs(distance - best.distance) <= 0.5 && line.weight > best.line.weight))) {
      best = { line, distance };
    }
  }
  return best && { line: best.line };
}

function describeLine(line, heads) {
  const label = session.summary.tokens.map((t) => t.text);
  const head = heads.length > 1 ? ` (head ${line.head})` : '';
  return `"${label[line.query]}" → "${label[line.key]}": ${line.weight.toFixed(4)}${head}`;
}

function showTip(text, event) {
  const tip = $('tooltip');
  tip.textContent = text;
  tip.hidden = false;
  tip.style.left = `${Math.min(event.clientX + 14, innerWidth - 330)}px`;
  tip.style.top = `${event.clientY + 14}px`;
}

function setFocus(focus) {
  const same = (lines.focus?.side === focus?.side && lines.focus?.token === focus?.token);
  if (same) return;
  lines.focus = focus;
  draw('attention');
}

// Hover in the lines view. Listens on the figure, after the heatmap hover of the canvas
// itself (hover.js), which hides the tooltip where there is no heatmap cell.
function attachLinesHover() {
  const canvas = canvasOf('attention');
  canvas.parentElement.addEventListener('mousemove', (event) => {
    if (state.mode !== 'lines' || event.target !== canvas) return;
    const g = session.drawn.attention?.lines;
    if (!g) return;
    const [x, y] = canvasPoint(canvas, event, session.drawn.attention);
    const target = linesTarget(g, x, y);
    const heads = linesHeads();
    if (target?.token !== undefined) {
      setFocus({ side: target.side, token: target.token });
      // The token's strongest line, from what was just drawn (only its lines).
      const own = session.drawn.attention.lines.lines;
      const strongest = own.reduce((a, b) => (b.weight > (a?.weight ?? -1) ? b : a), null);
      if (strongest) showTip(`${describeLine(strongest, heads)}, its strongest line`, event);
      return;
    }
    setFocus(null);
    const line = linesTarget(session.drawn.attention.lines, x, y)?.line; // among every line again
    if (line) showTip(describeLine(line, heads), event);
    else $('tooltip').hidden = true;
  });
  canvas.addEventListener('mouseleave', () => { if (state.mode === 'lines') setFocus(null); });
}

/** The layer and head choices of the loaded model (the chosen ones kept in its range). */
export function renderLayerHeadOptions() {
  const { config } = session;
  fillSelect($('layer'), [...Array(config.n_layers).keys()], (l) => `${l}`, Math.min(state.layer, config.n_layers - 1));
  fillSelect($('head'), [...Array(config.n_heads).keys()], (h) => `${h}`, Math.min(state.head, config.n_heads - 1));
  state.layer = Number($('layer').value);
  state.head = Number($('head').value);
}

export function wireAttention() {
  renderLayerHeadOptions();
  $('attention-stack').value = state.stack;
  $('attention-stack').addEventListener('change', () => {
    state.stack = $('attention-stack').value;
    renderLinesControls(); // the caption says which attention
    draw('attention');
    draw('grid'); // the grid shows the same stack
    writeUrl();
  });
  document.querySelector(`input[name=mode][value=${state.mode}]`).checked = true;
  $('layer').addEventListener('change', () => selectHead(Number($('layer').value), state.head));
  $('head').addEventListener('change', () => selectHead(state.layer, Number($('head').value)));
  document.querySelectorAll('input[name=mode]').forEach((r) => r.addEventListener('change', () => {
    state.mode = r.value;
    lines.focus = null;
    renderLinesControls();
    draw('attention');
    draw('grid'); // the lines show the decoder: so does the grid
    writeUrl();
  }));
  renderLinesControls();
  attachGrid('grid');
  attachLinesHover();
}

/** After a new pass: a focused token may no longer exist. */
export function resetLinesFocus() {
  lines.focus = null;
}

/** Clicks and arrow keys on the grid chart `name` choose a head. */
export function attachGrid(name) {
  const canvas = canvasOf(name);
  canvas.addEventListener('click', (event) => {
    const g = session.drawn[name]?.grid;
    if (!g) return;
    const [px, py] = canvasPoint(canvas, event, session.drawn[name]);
    const x = px - g.left;
    const y = py - g.top;
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
