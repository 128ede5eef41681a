// transformer-viz page: wires the inputs to the wasm API (`Viz`) and the canvases.
// All model work and all chart drawing happen in Rust; this file only keeps state,
// asks for views by name, and handles hover, export, the URL and the keyboard.

const MODEL = 'minilm-l6';
const MODEL_FILES = `models/${MODEL}`;
const $ = (id) => document.getElementById(id);

// ---------- state, mirrored in the URL ----------
const state = {
  text: $('text').value,
  layer: 0,
  head: 0,
  mode: 'heatmap',
  step: 0,
  stepHead: 0,
  norm: 1,
  dims: [0, 1, 4, 5, 32, 33],
  threads: 2, // 1: no helper thread (`?threads=1`)
};

function readUrl() {
  const q = new URLSearchParams(location.search);
  const int = (k, d) => (q.has(k) && /^\d+$/.test(q.get(k)) ? Number(q.get(k)) : d);
  if (q.has('text')) state.text = q.get('text');
  if (q.has('model') && q.get('model') !== MODEL) {
    showError(`This page only ships the model "${MODEL}"; the link asked for "${q.get('model')}", so ${MODEL} is shown.`);
  }
  state.layer = int('layer', state.layer);
  state.head = int('head', state.head);
  state.step = int('step', state.step);
  state.stepHead = int('stephead', state.stepHead);
  state.norm = int('norm', state.norm);
  if (q.get('mode') === 'lines') state.mode = 'lines';
  if (q.has('dims')) state.dims = parseDims(q.get('dims')) ?? state.dims;
  if (q.get('threads') === '1') state.threads = 1;
}

function writeUrl() {
  const q = new URLSearchParams({
    model: MODEL, text: state.text, layer: state.layer, head: state.head, mode: state.mode,
    step: state.step, stephead: state.stepHead, norm: state.norm, dims: state.dims.join(','),
  });
  if (state.threads === 1) q.set('threads', '1');
  history.replaceState(null, '', `${location.pathname}?${q}${location.hash}`);
}

function parseDims(text) {
  const dims = text.split(/[\s,]+/).filter(Boolean).map(Number);
  if (!dims.length || dims.some((d) => !Number.isInteger(d) || d < 0)) return null;
  return dims.slice(0, 8);
}

// ---------- messages ----------
function showError(message) {
  const box = $('error');
  box.textContent = message;
  box.hidden = false;
}
function clearError() {
  $('error').hidden = true;
}
window.addEventListener('error', (e) => { showError(`Something went wrong: ${e.message}`); e.preventDefault(); });
window.addEventListener('unhandledrejection', (e) => { showError(`Something went wrong: ${e.reason?.message ?? e.reason}`); e.preventDefault(); });

// ---------- maths ----------
function renderTex(el, tex, display = false) {
  if (el.dataset.rendered === tex) return; // typing leaves most equations as they are
  el.dataset.rendered = tex;
  if (window.katex) {
    window.katex.render(tex, el, { displayMode: display, throwOnError: false, output: 'htmlAndMathml' });
  } else {
    el.textContent = tex;
  }
}
function renderStaticMath() {
  document.querySelectorAll('[data-tex]').forEach((el) => renderTex(el, el.dataset.tex, el.classList.contains('math-block')));
}

// ---------- loading ----------
async function fetchBytes(url, onProgress) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`could not load ${url} (HTTP ${res.status}); run the README's serve command, which fetches the model files`);
  const total = Number(res.headers.get('content-length')) || 0;
  if (!res.body || !total) return new Uint8Array(await res.arrayBuffer());
  const out = new Uint8Array(total);
  const reader = res.body.getReader();
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    out.set(value, got);
    got += value.length;
    onProgress?.(got / total);
  }
  if (got !== total) throw new Error(`${url} arrived incomplete (${got} of ${total} bytes)`);
  return out;
}
async function fetchText(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`could not load ${url} (HTTP ${res.status}); run the README's serve command, which fetches the model files`);
  return res.text();
}

function wasmBindings() {
  if (window.wasmBindings) return Promise.resolve(window.wasmBindings);
  return new Promise((resolve, reject) => {
    addEventListener('TrunkApplicationStarted', () => resolve(window.wasmBindings), { once: true });
    setTimeout(() => reject(new Error('the WebAssembly module did not start; this browser may not support WebAssembly')), 30000);
  });
}

// ---------- charts ----------
let viz = null;
let config = null; // the model's config: fixed once the model is loaded
let summary = null;
let stepsByName = {}; // derived from summary, for the stepper's input shapes
const drawn = {}; // chart name -> what Rust reported (geometry, values, labels)
window.__tvizDrawn = drawn; // read by the browser tests to click a given thumbnail

const charts = {
  attention: () => (state.mode === 'lines'
    ? { kind: 'lines', layer: state.layer, head: state.head, focus: null }
    : { kind: 'head', layer: state.layer, head: state.head }),
  grid: () => ({ kind: 'grid', layer: state.layer, head: state.head }),
  'pos-table': () => ({ kind: 'position_table' }),
  'pos-waves': () => ({ kind: 'position_waves', dims: state.dims }),
  'pos-sim': () => ({ kind: 'position_similarity' }),
  'pos-sin': () => ({ kind: 'sinusoidal_similarity' }),
  norm: () => ({ kind: 'norm', index: state.norm }),
  residual: () => ({ kind: 'residual' }),
  step: () => ({ kind: 'step', index: state.step, head: state.stepHead }),
};

// Height as a fraction of width, and a floor, per chart.
const shapes = {
  attention: [0.9, 340], grid: [0.62, 240], 'pos-table': [0.72, 300], 'pos-waves': [0.72, 300],
  'pos-sim': [0.9, 340], 'pos-sin': [0.9, 340], norm: [0.56, 420], residual: [0.62, 460], step: [0.55, 340],
};

function canvasOf(name) {
  return document.querySelector(`canvas[data-chart="${name}"]`);
}

function sizeCanvas(name) {
  const canvas = canvasOf(name);
  const width = Math.max(300, Math.round(canvas.getBoundingClientRect().width || canvas.width));
  const [ratio, floor] = shapes[name];
  let height = Math.max(floor, Math.round(width * ratio));
  if (name === 'attention' && state.mode === 'lines') height = Math.max(height, summary.tokens.length * 22 + 90);
  if (name === 'step') {
    // A 1-D step (the token ids) is one row of cells: keep it short.
    const rows = summary.steps[state.step].shape.length === 1 ? 1 : summary.tokens.length;
    height = Math.min(height, Math.max(220, rows * 26 + 150));
  }
  if (name === 'grid') {
    // Square thumbnails that fill the width (the grid leaves room for its labels).
    const font = width < 400 ? 10 : 12;
    const side = Math.floor((width - (font * 3 + 6) - 4) / config.n_heads);
    height = font * 2 + 8 + side * config.n_layers + 4;
  }
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
}

// Charts depend on the sentence, except the position views while it is under 64 tokens.
const MODEL_ONLY = new Set(['pos-table', 'pos-waves', 'pos-sim', 'pos-sin']);
const drawnKey = {};
const dirty = new Set();

function keyOf(name) {
  const canvas = canvasOf(name);
  const sentence = MODEL_ONLY.has(name) ? Math.max(64, summary.tokens.length) : summary;
  return [JSON.stringify(charts[name]()), canvas.width, canvas.height, sentence];
}

function draw(name) {
  sizeCanvas(name);
  const key = keyOf(name);
  const old = drawnKey[name];
  dirty.delete(name);
  if (old && old.every((part, i) => part === key[i])) return; // nothing it shows has changed
  drawn[name] = viz.draw(canvasOf(name), charts[name]());
  drawnKey[name] = key;
}

// Which charts are on screen (or within 200 px of it). An IntersectionObserver keeps this up
// to date, so a keystroke never has to ask the layout where each canvas is; until its first
// report, the canvas's position is read once.
const visible = new Map();
function onScreen(name) {
  if (visible.has(name)) return visible.get(name);
  const r = canvasOf(name).getBoundingClientRect();
  return r.bottom > -200 && r.top < innerHeight + 200;
}
function observeCharts() {
  const names = new Map(Object.keys(charts).map((name) => [canvasOf(name), name]));
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) visible.set(names.get(e.target), e.isIntersecting);
    if (summary && dirty.size) drawVisible(); // scrolled into view before its turn
  }, { rootMargin: '200px 0px' });
  for (const canvas of names.keys()) observer.observe(canvas);
}

// Every chart is brought up to date: those on screen right away, the others in the next
// task, after the browser has shown the first ones (or sooner, when they scroll into view or
// are exported). A keystroke that arrives meanwhile is handled first: the off-screen charts
// give way as soon as the browser reports pending input, so typing stays fast.
let background = null;
let passStartedAt = null; // when the input that started this pass arrived
let afterFirstView = null; // starts the helper thread once the first view is complete
function settled() { // once a pass has drawn every chart (a second call changes nothing)
  if (window.__tviz.firstSettledAt === undefined) {
    window.__tviz.firstSettledAt = performance.now();
    setTimeout(() => afterFirstView?.(), 0);
  }
  if (passStartedAt !== null) window.__tviz.settledLatencies.push(performance.now() - passStartedAt);
  passStartedAt = null;
}
function drawAll() {
  for (const name of Object.keys(charts)) dirty.add(name);
  drawVisible();
  clearTimeout(background);
  if (!dirty.size) return;
  background = setTimeout(function next() {
    if (pending || !dirty.size) return; // a new pass is coming, or all is drawn
    for (const name of [...dirty]) {
      draw(name);
      if (navigator.scheduling?.isInputPending?.()) break;
    }
    if (dirty.size) background = setTimeout(next, 0);
    else settled();
  }, 0);
}

function drawVisible() {
  for (const name of [...dirty]) if (onScreen(name)) draw(name);
  if (!dirty.size) settled();
}

function drawPending() {
  for (const name of [...dirty]) draw(name);
  settled();
}
window.__tvizFlush = drawPending;
window.__tvizSettled = () => dirty.size === 0;

// ---------- the sentence ----------
function renderTokens() {
  const list = $('tokens');
  list.replaceChildren(...summary.tokens.map((t, i) => {
    const li = document.createElement('li');
    li.className = t.special ? 'special' : '';
    li.title = `position ${i}, id ${t.id}`;
    const text = document.createElement('span');
    text.textContent = t.text;
    const id = document.createElement('small');
    id.textContent = t.id;
    li.append(text, id);
    return li;
  }));
  const { context } = config;
  $('token-count').textContent = `${summary.tokens.length} / ${context} tokens (the model's context limit)`;
  const warn = $('truncated');
  if (summary.truncated) {
    warn.hidden = false;
    warn.textContent = `Your text is ${summary.truncated.original_tokens} tokens long; the model reads at most ${context}, so only the first ${summary.truncated.kept_tokens} are used.`;
  } else {
    warn.hidden = true;
  }
}

function fillSelect(select, values, label, selected) {
  const labels = values.map((v) => `${v}\t${label(v)}`).join('\n');
  if (select.dataset.options === labels) { // the same choices: keep the elements
    select.value = String(selected);
    return;
  }
  select.dataset.options = labels;
  const options = values.map((v) => {
    const o = document.createElement('option');
    o.value = v;
    o.textContent = label(v);
    return o;
  });
  select.replaceChildren(...options);
  select.value = String(selected);
}

function renderNormOptions() {
  const labels = summary.norms.map((n) => {
    if (n.layer === null) return 'embedding norm (before layer 0)';
    const after = n.step.endsWith('attn_norm') ? 'after attention' : 'after feed-forward';
    return `layer ${n.layer}, ${after}`;
  });
  state.norm = Math.min(state.norm, summary.norms.length - 1);
  fillSelect($('norm'), summary.norms.map((_, i) => i), (i) => labels[i], state.norm);
}

let pending = false;
let inputAt = null;
// For tests and the benchmark: how many updates ran and how long input took to be drawn.
window.__tviz = { renders: 0, latencies: [], settledLatencies: [], passes: [], ready: null, backend: null, helper: 'off' };

function update() {
  if (!viz) return;
  const started = performance.now();
  try {
    summary = viz.set_text(state.text);
    stepsByName = Object.fromEntries(summary.steps.map((s) => [s.name, s]));
    clearError();
  } catch (err) {
    // Keep the previous views; say what is wrong in plain words.
    showError(String(err.message ?? err));
    window.__tviz.renders += 1;
    inputAt = null;
    return;
  }
  passStartedAt = inputAt ?? started;
  renderTokens();
  renderNormOptions();
  state.step = Math.min(state.step, summary.steps.length - 1);
  $('step-slider').max = summary.steps.length - 1;
  drawAll();
  renderStep();
  renderPrediction();
  if (summary.threads !== window.__tviz.threads) showBackend(); // the helper joined or left
  $('timing').textContent = summary.recomputed
    ? `${summary.milliseconds.toFixed(0)} ms for ${summary.tokens.length} tokens`
    : `same ${summary.tokens.length} tokens as before: numbers unchanged`;
  writeUrl();
  const done = performance.now();
  window.__tviz.renders += 1;
  if (inputAt !== null) {
    window.__tviz.latencies.push(done - inputAt);
    if (summary.recomputed) window.__tviz.passes.push(summary.milliseconds);
  }
  inputAt = null;
  lastPassEnd = done;
  if (window.__tviz.firstViewAt === undefined) window.__tviz.firstViewAt = done;
}

// Keystrokes typed while the page is idle are handled at once. Keystrokes that arrive while
// a forward pass runs wait in the browser's queue; the first of them to be handled lets the
// others through (one task) and a single pass then runs on the latest text, so fast typing
// never builds a backlog and the previous views stay until the new ones are drawn.
let lastPassEnd = -Infinity;
function scheduleUpdate(event) {
  const at = event?.timeStamp ?? performance.now(); // when the key was pressed
  if (inputAt === null) inputAt = at;
  if (pending) return;
  if (at > lastPassEnd) {
    update();
    return;
  }
  pending = true;
  setTimeout(() => {
    pending = false;
    update();
  }, 0);
}

// ---------- stepper ----------
const DIAGRAM = [
  ['Tokenize'], ['TokenEmbedding', 'SegmentEmbedding'], ['PositionEncoding', 'AddPosition'], ['EmbeddingNorm'],
  ['AttentionNorm@pre'], ['Query', 'Key', 'Value'], ['RotaryQuery', 'RotaryKey'], ['Scores'], ['Mask'], ['Softmax'],
  ['WeightedSum'], ['Concat'], ['OutputProjection'], ['AttentionResidual'], ['AttentionNorm@post'], ['FfnNorm@pre'],
  ['FfnUp', 'FfnGate'], ['FfnActivation'], ['FfnDown'], ['FfnResidual'], ['FfnNorm@post'], ['FinalNorm'], ['Unembed'],
  ['NextTokenProbabilities'],
];
const DIAGRAM_LABELS = {
  Tokenize: 'tokenize', TokenEmbedding: 'embed', PositionEncoding: 'add position', EmbeddingNorm: 'norm',
  'AttentionNorm@pre': 'norm', Query: 'Q, K, V', RotaryQuery: 'rotate Q, K', Scores: 'scores', Mask: 'mask',
  Softmax: 'softmax', WeightedSum: 'weighted sum', Concat: 'concat heads', OutputProjection: 'output proj.',
  AttentionResidual: 'residual add', 'AttentionNorm@post': 'norm', 'FfnNorm@pre': 'norm', FfnUp: 'FFN expand',
  FfnActivation: 'activation', FfnDown: 'FFN project', FfnResidual: 'residual add', 'FfnNorm@post': 'norm',
  FinalNorm: 'final norm', Unembed: 'unembed', NextTokenProbabilities: 'softmax → next token',
};

function diagramKey(step, postLn) {
  for (const group of DIAGRAM) {
    for (const key of group) {
      const [op, place] = key.split('@');
      if (op === step.op && (!place || (place === 'post') === postLn)) return group[0];
    }
  }
  return null;
}

let diagramShown = null;
function renderDiagram(current) {
  const postLn = config.norm_place === 'Post';
  const present = new Set(summary.steps.map((s) => diagramKey(s, postLn)));
  const shown = `${current}|${[...present].join(',')}`;
  if (shown === diagramShown) return; // typing does not move the current operation
  diagramShown = shown;
  const items = [];
  let inLayer = false;
  for (const group of DIAGRAM) {
    const key = group[0];
    const [op, place] = key.split('@');
    if (place && (place === 'post') !== postLn) continue;
    const isLayerOp = !['Tokenize', 'TokenEmbedding', 'PositionEncoding', 'EmbeddingNorm', 'FinalNorm', 'Unembed', 'NextTokenProbabilities'].includes(op);
    if (isLayerOp && !inLayer) {
      const li = document.createElement('li');
      li.className = 'group';
      li.textContent = `× ${config.n_layers} layers:`;
      items.push(li);
      inLayer = true;
    } else if (!isLayerOp) {
      inLayer = false;
    }
    if (!present.has(key) && ['RotaryQuery', 'FinalNorm'].includes(op)) continue; // not part of this architecture
    const li = document.createElement('li');
    li.textContent = DIAGRAM_LABELS[key];
    if (!present.has(key)) {
      li.classList.add('absent');
      li.title = 'this model has no language-model head';
    }
    if (key === current) {
      li.classList.add('current');
      li.setAttribute('aria-current', 'step');
    }
    items.push(li);
  }
  $('diagram').replaceChildren(...items);
}

function shapeText(shape, axes) {
  return `(${shape.map((n, i) => `${axes[i] ?? ''} ${n}`.trim()).join(', ')})`;
}

function renderStep() {
  const step = summary.steps[state.step];
  $('step-slider').value = state.step;
  $('step-count').textContent = `step ${state.step + 1} of ${summary.steps.length}`;
  $('back').disabled = state.step === 0;
  $('forward').disabled = state.step === summary.steps.length - 1;
  $('step-title').textContent = step.title;
  renderTex($('step-equation'), step.equation, true);
  $('step-explanation').textContent = step.explanation;
  const ins = step.inputs.map((n) => `${n} ${shapeText(stepsByName[n].shape, stepsByName[n].axes)}`);
  $('step-shapes').textContent = `${ins.length ? `in: ${ins.join(' and ')}` : 'in: the text'}  →  out: ${step.name} ${shapeText(step.shape, step.axes)}`;
  const perHead = step.shape.length === 3;
  $('step-head-label').hidden = !perHead;
  if (perHead) {
    state.stepHead = Math.min(state.stepHead, step.shape[0] - 1);
    fillSelect($('step-head'), [...Array(step.shape[0]).keys()], (h) => `${h}`, state.stepHead);
  }
  renderDiagram(diagramKey(step, config.norm_place === 'Post'));
  const note = drawn.step?.note;
  $('step-caption').textContent = `${note ? `${note}. ` : ''}Hover for values.`;
}

function goToStep(index) {
  if (!summary) return;
  state.step = Math.max(0, Math.min(summary.steps.length - 1, index));
  draw('step');
  renderStep();
  writeUrl();
}

function renderPrediction() {
  const el = $('prediction');
  if (config.lm_head === 'None') {
    el.textContent = `all-MiniLM-L6-v2 is an encoder: it reads the whole sentence in both directions and outputs one vector per token (averaged, they make a sentence embedding for search and similarity). It has no language-model head, so it makes no next-token prediction. A decoder model ends with an unembedding matrix and a softmax over the vocabulary instead.`;
  }
}

// ---------- hover ----------
function cellAt(name, event) {
  const info = drawn[name];
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
  if (name === 'pos-table') return `position ${c.row}, feature ${c.col}: ${v}`;
  if (name.startsWith('pos-')) return `positions ${c.row} and ${c.col}: cosine ${v}`;
  return `row ${c.row} (${rowLabel}), column ${c.col}${c.info.col_labels.length ? ` (${colLabel})` : ''}: ${v}`;
}

function attachHover(name) {
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

// ---------- grid selection ----------
function selectHead(layer, head) {
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
    const g = drawn.grid?.grid;
    if (!g) return;
    const rect = canvas.getBoundingClientRect();
    const x = (event.clientX - rect.left) * (canvas.width / rect.width) - g.left;
    const y = (event.clientY - rect.top) * (canvas.height / rect.height) - g.top;
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

// ---------- export ----------
function download(blob, filename) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function attachExport(name) {
  const box = document.querySelector(`.export[data-for="${name}"]`);
  const png = document.createElement('button');
  png.type = 'button';
  png.className = 'secondary';
  png.textContent = 'Export PNG';
  png.addEventListener('click', () => {
    draw(name); // bring it up to date if it was off screen
    canvasOf(name).toBlob((blob) => download(blob, `transformer-viz-${name}.png`), 'image/png');
  });
  const svg = document.createElement('button');
  svg.type = 'button';
  svg.className = 'secondary';
  svg.textContent = 'Export SVG';
  svg.addEventListener('click', () => {
    const canvas = canvasOf(name);
    try {
      const text = viz.svg(charts[name](), canvas.width, canvas.height);
      download(new Blob([text], { type: 'image/svg+xml' }), `transformer-viz-${name}.svg`);
    } catch (err) {
      showError(`Could not export: ${err.message ?? err}`);
    }
  });
  box.append(png, svg);
}

// ---------- wiring ----------
function wire() {
  fillSelect($('layer'), [...Array(config.n_layers).keys()], (l) => `${l}`, Math.min(state.layer, config.n_layers - 1));
  fillSelect($('head'), [...Array(config.n_heads).keys()], (h) => `${h}`, Math.min(state.head, config.n_heads - 1));
  state.layer = Number($('layer').value);
  state.head = Number($('head').value);
  document.querySelector(`input[name=mode][value=${state.mode}]`).checked = true;
  $('dims').value = state.dims.join(', ');

  $('text').addEventListener('input', (event) => { state.text = $('text').value; scheduleUpdate(event); });
  $('layer').addEventListener('change', () => selectHead(Number($('layer').value), state.head));
  $('head').addEventListener('change', () => selectHead(state.layer, Number($('head').value)));
  document.querySelectorAll('input[name=mode]').forEach((r) => r.addEventListener('change', () => {
    state.mode = r.value;
    draw('attention');
    writeUrl();
  }));
  $('dims').addEventListener('change', () => {
    const dims = parseDims($('dims').value);
    if (!dims || dims.some((d) => d >= config.d_model)) {
      showError(`Features must be whole numbers from 0 to ${config.d_model - 1}, separated by commas.`);
      return;
    }
    clearError();
    state.dims = dims;
    draw('pos-waves');
    writeUrl();
  });
  $('norm').addEventListener('change', () => { state.norm = Number($('norm').value); draw('norm'); writeUrl(); });
  $('back').addEventListener('click', () => goToStep(state.step - 1));
  $('forward').addEventListener('click', () => goToStep(state.step + 1));
  $('step-slider').addEventListener('input', () => goToStep(Number($('step-slider').value)));
  $('step-head').addEventListener('change', () => { state.stepHead = Number($('step-head').value); draw('step'); renderStep(); writeUrl(); });
  document.addEventListener('keydown', (event) => {
    const typing = ['TEXTAREA', 'INPUT', 'SELECT'].includes(document.activeElement?.tagName);
    if (typing || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === 'ArrowRight') { goToStep(state.step + 1); event.preventDefault(); }
    if (event.key === 'ArrowLeft') { goToStep(state.step - 1); event.preventDefault(); }
  });
  for (const name of Object.keys(charts)) attachExport(name);
  for (const name of ['attention', 'pos-table', 'pos-sim', 'pos-sin', 'step']) attachHover(name);
  attachGrid();
  let resize = null;
  addEventListener('resize', () => { clearTimeout(resize); resize = setTimeout(() => summary && drawAll(), 150); });
  observeCharts();
}

// ---------- the helper thread ----------
// A second copy of the model in a Web Worker computes half of every dense layer of each pass
// (team-worker.js, `model::team`), so a pass uses two cores. The halves travel through shared
// memory, which browsers give only to cross-origin isolated pages (the README's server sends
// the two headers); elsewhere, on one core, or with ?threads=1, the page computes alone.
function showBackend() {
  const backend = viz.backend();
  if ($('backend').textContent !== backend) $('backend').textContent = backend;
  window.__tviz.backend = backend;
  window.__tviz.threads = viz.threads();
}

function startHelper(configJson, tokenizer, weights) {
  window.__tviz.helper = 'off';
  const isolated = window.crossOriginIsolated && typeof SharedArrayBuffer === 'function';
  if (state.threads === 1 || !isolated || (navigator.hardwareConcurrency ?? 1) < 2) return;
  const glue = document.querySelector('link[rel=modulepreload][href*="transformer-viz"]')?.href;
  const wasm = document.querySelector('link[rel=preload][href$="_bg.wasm"]')?.href;
  if (!glue || !wasm) return;
  let worker;
  try {
    worker = new Worker('team-worker.js', { type: 'module' });
  } catch {
    return;
  }
  window.__tviz.helper = 'starting';
  const buffer = new SharedArrayBuffer(viz.team_buffer_bytes());
  const stop = () => {
    viz.leave_team();
    worker.terminate();
    window.__tviz.helper = 'failed';
    showBackend();
  };
  worker.onmessage = ({ data }) => {
    if (data.ready) {
      viz.join_team(buffer, 0, worker);
      window.__tviz.helper = 'ready';
      showBackend();
    }
    if (data.failed) stop();
  };
  worker.onerror = (event) => { event.preventDefault(); stop(); };
  // The worker gets the weights' bytes (the page's model already holds its own copy).
  worker.postMessage({ start: { glue, wasm, model: MODEL, config: configJson, tokenizer, weights: weights.buffer, buffer } }, [weights.buffer]);
}

async function main() {
  readUrl();
  $('text').value = state.text;
  // The model files download while the WebAssembly module starts.
  const files = Promise.all([
    fetchText(`${MODEL_FILES}/config.json`),
    fetchText(`${MODEL_FILES}/tokenizer.json`),
    fetchBytes(`${MODEL_FILES}/model.f16.safetensors`, (f) => { $('loading-progress').value = f; }),
  ]);
  const [bindings, [configJson, tokenizer, weights]] = await Promise.all([wasmBindings(), files]);
  $('loading-text').textContent = 'Preparing the model…';
  viz = new bindings.Viz(MODEL, configJson, tokenizer, weights);
  config = viz.config();
  showBackend();
  renderStaticMath();
  wire();
  // The helper starts after the first complete view, so that it does not delay it.
  afterFirstView = () => startHelper(configJson, tokenizer, weights);
  window.__tviz.helper = 'starting';
  update();
  $('loading').hidden = true;
}

window.__tviz.ready = main().catch((err) => {
  $('loading').hidden = true;
  showError(`The model could not be loaded: ${err.message ?? err}`);
  window.__tviz.failed = String(err.message ?? err);
});
