// Every chart on the page: what it asks Rust to draw, its size, and when it is redrawn.
// Charts on screen are drawn at once after a pass; the others too when they are quick to
// draw, else in the next task (giving way to pending input), or sooner when they scroll into
// view or are exported.
import { session, keepDrawn, forgetDrawn } from './session.js';
import { whyNotShown, showWhyNotShown } from './applicable.js';
import { readback, waitsForDevice, chartWaits, readRest } from './gpu-readback.js';
import { testHook, publish, record, exposeForTests } from './testing-hook.js';
import { inspectorIdle } from './right-of-way.js';

/** Every chart by its canvas's `data-chart` name: what it asks Rust to draw. Filled in by the
 * sections that own the charts (registerChart), which import this module, never the reverse. */
export const charts = {};

// Each chart's layout and drawing options, as registered.
const options = {};

/**
 * Registers chart `name` (a section's, at its module's start):
 *   spec: () => what the chart asks Rust to draw (`Viz::draw`'s spec), from the state;
 *   shape: [height as a fraction of width, least height] in layout pixels;
 *   height(width, height): the section's own height for that width, when the shape is not enough;
 *   modelOnly: the chart depends on the model alone while the sentence is under 64 tokens;
 *   heldWhileGenerating: too slow to redraw after each generated token (drawn when it stops);
 *   whenSeen: it costs passes of its own (a post-LN model's votes run the model once without
 *     each part), so after a pass it is drawn when it comes into view (or is exported, or
 *     presented), not in the keystroke's tasks;
 *   model: () => { viz, name, summary } of another model the chart is drawn from (the lecture
 *     decoder's twin, beside the model shown), or { why, loading? } while it cannot be
 *     (`loading`: it will be, once its files arrive).
 */
export function registerChart(name, { spec, shape, height = null, modelOnly = false, heldWhileGenerating = false, model = null, whenSeen = false }) {
  if (Object.hasOwn(charts, name)) throw new Error(`the chart "${name}" is registered twice`);
  charts[name] = spec;
  options[name] = { shape, height, modelOnly, heldWhileGenerating, model, whenSeen };
}

/** The model chart `name` is drawn from, `{ viz, name, summary? }` (summary: that model's last
 * pass, when it is not the one shown): the one shown unless the chart was registered with
 * another; `{ why }` when that other cannot draw it now. */
export function modelOf(name) {
  return options[name].model?.() ?? { viz: session.viz, name: session.modelName };
}

// The page's canvases, looked up once each (a chart's drawing asks for its canvas often).
const canvases = new Map();
export function canvasOf(name) {
  let canvas = canvases.get(name);
  if (!canvas?.isConnected) {
    canvas = document.querySelector(`canvas[data-chart="${name}"]`);
    canvases.set(name, canvas);
  }
  return canvas;
}

// How much bigger than normal the charts' text and marks are drawn: the page's own text size
// (it grows with wide windows, for a projector) times presenter mode's zoom.
// Both are kept rather than read for each chart: reading a style or a size after the page has
// changed makes the browser lay out the whole page on the spot, for every chart drawn.
let presenterZoom = 1;
let rootFont = null; // the root element's font size: it changes with the window's width
export function setTextZoom(zoom) { presenterZoom = zoom; }
addEventListener('resize', () => { rootFont = null; });
function chartZoom() {
  rootFont ??= parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
  return (rootFont / 16) * presenterZoom;
}

// Each canvas's width on the page (CSS pixels, border included), kept by a ResizeObserver;
// until its first report, read from the layout once. (A canvas that is not rendered, in a
// closed section, gets no report until it is: reading the layout on every keystroke for it
// made the browser lay the page out again for each such chart.)
const cssWidths = new Map();
function cssWidthOf(canvas) {
  // A chart narrowed to fit a slide (below) has the width of its figure to fill.
  if (canvas.style.width) return canvas.parentElement.clientWidth;
  if (!cssWidths.has(canvas)) cssWidths.set(canvas, canvas.getBoundingClientRect().width);
  return cssWidths.get(canvas);
}

// Presenter mode shows a slide at a time: no chart may be taller than this (CSS pixels).
let heightLimit = null;
/** Caps every chart's height on screen at `px` CSS pixels (null: no cap), as presenter mode's
 * slides need: a chart too tall is drawn narrower, keeping its shape, or else shorter. */
export function setChartHeightLimit(px) { heightLimit = px; }

// Chart `name`'s height in layout pixels for a layout `width`, from its registered shape.
function heightFor(name, width) {
  const { shape: [ratio, floor], height: ownHeight } = options[name];
  const height = Math.max(floor, Math.round(width * ratio));
  return ownHeight ? ownHeight(width, height) : height;
}

// Sizes the canvas for its place on the page. The chart is laid out in its own pixels
// (`width`, `height`: CSS pixels divided by the zoom, so a zoomed chart has bigger text and
// marks) and drawn at the screen's pixel density: the backing store has devicePixelRatio x zoom
// pixels a layout pixel (data-scale tells Rust), so charts are sharp on 2x and 3x screens.
function sizeCanvas(name) {
  const canvas = canvasOf(name);
  const zoom = chartZoom();
  const scale = (window.devicePixelRatio || 1) * zoom;
  const room = cssWidthOf(canvas) || canvas.width / scale;
  let width = Math.max(300, Math.round(room / zoom));
  let height = heightFor(name, width);
  if (heightLimit && height * zoom > heightLimit) {
    width = Math.max(300, Math.round((width * heightLimit) / (height * zoom)));
    height = Math.min(heightFor(name, width), Math.floor(heightLimit / zoom));
  }
  const narrowed = Math.round(width * zoom) < room - 1 ? `${Math.round(width * zoom)}px` : '';
  if (canvas.style.width !== narrowed) canvas.style.width = narrowed;
  const [backingWidth, backingHeight] = [Math.round(width * scale), Math.round(height * scale)];
  if (canvas.width !== backingWidth) canvas.width = backingWidth;
  if (canvas.height !== backingHeight) canvas.height = backingHeight;
  if (canvas.dataset.scale !== String(scale)) canvas.dataset.scale = String(scale);
  const cssHeight = `${Math.round(height * zoom)}px`;
  if (canvas.style.height !== cssHeight) canvas.style.height = cssHeight;
}

// Charts depend on the sentence, except those registered `modelOnly` (the position views while
// it is under 64 tokens, the norm's learned parameters).
const drawnKey = {};
const dirty = new Set();
// Charts drawn from another model (the twin), and those registered `whenSeen`, that were off
// screen after a pass: they cost passes of their own, so they wait until they come into view
// (or are exported, or presented).
const stale = new Set();

function keyOf(name, model = modelOf(name).name) {
  const { summary } = session;
  const canvas = canvasOf(name);
  const sentence = options[name].modelOnly ? Math.max(64, summary.tokens.length) : summary;
  return [model, JSON.stringify(charts[name]()), canvas.width, canvas.height, canvas.dataset.scale, sentence];
}

/** Called with what Rust reported after chart `name` is drawn (a section's own controls). */
export const afterDraw = {};

/** Draws chart `name` now, unless nothing it shows has changed. */
// How long each chart's last drawing took, for the benchmarks.
const drawMilliseconds = {};
exposeForTests('DrawMilliseconds', drawMilliseconds);
const drawTimes = {}; // each chart's last five drawing times (ms)

/** How long chart `name` takes to draw: the quickest of its last five drawings, or Infinity
 * before its first. The quickest, not a middle one: a drawing is slowed by what else the
 * browser did meanwhile (a garbage collection, painting the last frame), and a chart drawn in
 * a later task is slowed more, so slow drawings would keep the charts off screen in a later
 * task, where they are slow again. */
function drawCost(name) {
  const recent = drawTimes[name];
  if (!recent?.length) return Infinity;
  return Math.min(...recent);
}

/** True when chart `name` was last drawn with `key` (keyOf): nothing it shows has changed. */
function isDrawn(name, key) {
  const old = drawnKey[name];
  return Boolean(old) && old.every((part, i) => part === key[i]);
}

export function draw(name) {
  stale.delete(name);
  const model = modelOf(name);
  const notHere = whyNotShown(name); // this model has no such chart: say why instead
  const why = notHere ?? model.why ?? null;
  showWhyNotShown(canvasOf(name), why, { loading: !notHere && Boolean(model.loading) });
  if (why) {
    dirty.delete(name);
    drawnKey[name] = null;
    forgetDrawn(name);
    return;
  }
  sizeCanvas(name);
  const key = keyOf(name, model.name);
  dirty.delete(name);
  if (isDrawn(name, key)) return; // nothing it shows has changed
  if (!options[name].model && waitsForDevice(charts[name]())) {
    // A GPU pass left what it reads on the device: it keeps its last picture until the
    // values arrive (asked for now if it is on screen, else when it scrolls into view).
    chartWaits(name, onScreen(name));
    return;
  }
  readback.waiting.delete(name);
  const started = performance.now();
  keepDrawn(name, model.viz.draw(canvasOf(name), key[1])); // key[1]: the spec's JSON
  drawMilliseconds[name] = performance.now() - started;
  const recent = (drawTimes[name] ??= []);
  recent.push(drawMilliseconds[name]);
  if (recent.length > 5) recent.shift();
  drawnKey[name] = key;
  afterDraw[name]?.(session.drawn[name]);
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

export function observeCharts() {
  const names = new Map(Object.keys(charts).map((name) => [canvasOf(name), name]));
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) visible.set(names.get(e.target), e.isIntersecting);
    for (const name of stale) {
      if (visible.get(name)) {
        stale.delete(name);
        dirty.add(name);
      }
    }
    if (session.summary && dirty.size) drawVisible(); // scrolled into view before its turn
    if ([...readback.waiting].some((name) => visible.get(name))) readRest(); // its values are on the GPU
  }, { rootMargin: '200px 0px' });
  for (const canvas of names.keys()) observer.observe(canvas);
  // A chart whose width changed (the window, presenter mode, a section shown) is redrawn,
  // after the browser has finished laying out the change.
  let redraw = null;
  const sizes = new ResizeObserver((entries) => {
    let changed = false;
    for (const e of entries) {
      const width = e.borderBoxSize?.[0]?.inlineSize ?? e.target.getBoundingClientRect().width;
      if (cssWidths.get(e.target) !== width) changed = cssWidths.has(e.target) || changed;
      cssWidths.set(e.target, width);
    }
    if (!changed) return;
    clearTimeout(redraw);
    redraw = setTimeout(() => session.summary && drawAll(), 0);
  });
  for (const canvas of names.keys()) sizes.observe(canvas);
}

// Every chart is brought up to date: those on screen right away, the others in the next
// task, after the browser has shown the first ones (or sooner, when they scroll into view or
// are exported). A keystroke that arrives meanwhile is handled first: the off-screen charts
// give way as soon as the browser reports pending input, so typing stays fast.
let background = null;
const timing = { passStartedAt: null, passPending: () => false, afterFirstView: null, generating: () => false };
export const drawTiming = timing; // set by pass.js, main.js and prediction.js

function settled() { // once a pass has drawn every chart (a second call changes nothing)
  if (testHook.firstSettledAt === undefined) {
    publish({ firstSettledAt: performance.now() });
    setTimeout(() => timing.afterFirstView?.(), 0);
  }
  if (timing.passStartedAt !== null) record('settledLatencies', performance.now() - timing.passStartedAt);
  timing.passStartedAt = null;
  inspectorIdle();
}

// While a generation runs, each new token redraws only the charts on screen, except those
// registered `heldWhileGenerating` (the logit lens unembeds every layer's stream: hundreds of
// milliseconds a token); the rest are drawn when it stops (prediction.js calls drawAll).

/** The specs of the charts on screen (for the GPU's readback: `stepsToRead`). */
export function specsOnScreen() {
  return Object.keys(charts).filter((name) => onScreen(name) && !whyNotShown(name)).map((name) => charts[name]());
}

// The values a GPU pass left on the device have arrived: the charts that waited are drawn.
readback.arrived.push((waited) => {
  for (const name of waited) dirty.add(name);
  drawVisible();
  if (dirty.size) drawPending();
});

/** Draws chart `name` now if it is on screen, else when it comes into view (a chart that
 * changes without a pass: the Training section's, as the run goes on). A canvas hidden behind
 * a note never comes into view: it is drawn now, which shows it. */
export function drawWhenSeen(name) {
  if (onScreen(name) || canvasOf(name).hidden) draw(name);
  else stale.add(name);
}

export function drawAll() {
  for (const name of Object.keys(charts)) {
    // (A chart this model does not have is "drawn" at once: a line saying why, no pass.)
    const costly = options[name].model || (options[name].whenSeen && !whyNotShown(name));
    if (costly && !onScreen(name)) stale.add(name);
    else dirty.add(name);
  }
  clearTimeout(background);
  if (timing.generating()) {
    for (const name of [...dirty]) if (onScreen(name) && !options[name].heldWhileGenerating) draw(name);
    return;
  }
  drawVisible();
  if (!dirty.size) return;
  // Cheap enough to finish now: the page is up to date when this task ends, and the browser
  // paints once. Otherwise the charts off screen wait for the next task, so that the ones on
  // screen are shown first.
  if (offScreenCost() <= SAME_TASK_MS) {
    drawPending();
    return;
  }
  background = setTimeout(function next() {
    if (timing.passPending() || !dirty.size) return; // a new pass is coming, or all is drawn
    for (const name of [...dirty]) {
      draw(name);
      if (navigator.scheduling?.isInputPending?.()) break;
    }
    if (dirty.size) background = setTimeout(next, 0);
    else settled();
  }, 0);
}

// The charts off screen are drawn in the same task as those on screen when, by how long
// each took to draw recently (drawCost), they need no more than this in all (milliseconds);
// a chart not drawn yet counts as too slow. In a task of their own they waited for the
// browser to paint the charts on screen first, which took longer than drawing them: with the
// lecture decoder at 32 tokens (off-screen charts about 7 ms) the page was complete about 20
// ms after a keystroke that way, and about 12 ms in one task, the charts on screen shown with
// the rest (docs/benchmarks.md). Past this sum (longer texts, bigger models) the charts on
// screen are shown first.
const SAME_TASK_MS = 12;

function offScreenCost() {
  let cost = 0;
  for (const name of dirty) {
    if (whyNotShown(name) || modelOf(name).why || isDrawn(name, keyOf(name))) continue;
    cost += drawCost(name);
  }
  return cost;
}

function drawVisible() {
  for (const name of [...dirty]) if (onScreen(name)) draw(name);
  if (!dirty.size) settled();
}

function drawPending() {
  for (const name of [...dirty]) draw(name);
  settled();
}
// For the tests: draws every chart now, those waiting to come into view too.
function drawEverything() {
  for (const name of stale) dirty.add(name);
  stale.clear();
  drawPending();
}
exposeForTests('Flush', drawEverything);
// For the tests: brings back what a GPU pass left on the device, then draws every chart.
exposeForTests('ReadAll', async () => {
  await readRest();
  drawEverything();
});
exposeForTests('Settled', () => dirty.size === 0);
