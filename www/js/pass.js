// One forward pass on the latest text, then every view brought up to date.
// Keystrokes typed while the page is idle are handled at once. Keystrokes that arrive while
// a forward pass runs wait in the browser's queue; the first of them to be handled lets the
// others through (one task) and a single pass then runs on the latest text, so fast typing
// never builds a backlog and the previous views stay until the new ones are drawn.
import { $, setIfChanged } from './dom.js';
import { state, writeUrlSoon } from './state.js';
import { session } from './session.js';
import { showError, clearError } from './messages.js';
import { drawAll, drawTiming, specsOnScreen } from './charts.js';
import { renderTokens } from './tokens.js';
import { renderNormOptions } from './norm.js';
import { renderResidualPicker } from './residual.js';
import { renderStep } from './stepper.js';
import { renderPrediction } from './prediction.js';
import { renderHeadFinder } from './head-finder.js';
import { renderQuery } from './query.js';
import { resetLinesFocus } from './attention.js';
import { renderCompare } from './compare.js';
import { renderTranslation } from './translation.js';
import { fallBack } from './gpu-backend.js';
import { gpu, passesOnGpu, showBackend, renderGpuStatus } from './backend-status.js';
import { syncSwitches, renderSwitches } from './ablation.js';
import { renderPartTokens } from './part-tokens.js';
import { readback, stepsToRead } from './gpu-readback.js';
import { testHook, publish, publishReadback, count, record } from './testing-hook.js';
import { inspectorBusy, inspectorIdle } from './right-of-way.js';

let pending = false;
let inputAt = null;
let lastPassEnd = -Infinity;
drawTiming.passPending = () => pending;

export function update() {
  const { viz } = session;
  if (!viz) {
    inspectorIdle(); // nothing to draw until a model loads
    return;
  }
  syncSwitches();
  if (passesOnGpu()) {
    passOnGpu();
    return;
  }
  const started = performance.now();
  let summary;
  try {
    summary = viz.set_text(state.text);
  } catch (err) {
    showTextError(err);
    return;
  }
  clearError('text-error');
  document.body.classList.remove('stale');
  showSummary(summary, started);
}

// Text the model cannot read: say what is wrong beside the text box; the charts keep the
// last sentence's pass, and the chips and count say so instead of showing tokens that are no
// longer typed.
function showTextError(err) {
  showError(String(err.message ?? err), 'text-error');
  $('tokens').replaceChildren();
  $('token-count').textContent = 'No tokens. The charts below still show the last sentence.';
  $('truncated').hidden = true;
  document.body.classList.add('stale');
  count('renders');
  inputAt = null;
  inspectorIdle(); // no charts to draw
}

// A pass on the GPU is asynchronous (its readbacks are awaited): one runs at a time (a typed
// text's and a generated token's continue the same KV cache on the device), and text typed
// meanwhile gets one pass on the latest text when it ends. The views keep the last finished
// pass until then.
let gpuRunning = null; // the GPU pass under way (a promise), if any
let gpuAgain = false;

/**
 * Runs `makePass(gpuSession)` (a promise of a GpuPass) as the GPU's one pass under way, once
 * the pass before it has ended, and makes it the current pass: resolves to its summary for
 * `showSummary`, or to null when another model was loaded meanwhile. A GPU that failed on
 * the way has handed the pass to the CPU; the page then says so and stays on the CPU.
 * `compare`: check the pass against the CPU's now (a generation checks its last one).
 */
export async function passOnGpuWith(makePass, { compare = true } = {}) {
  while (gpuRunning) await gpuRunning.catch(() => {});
  const { viz } = session;
  const opened = gpu.session;
  const run = (async () => {
    const pass = await makePass(opened);
    if (session.viz !== viz || gpu.session !== opened) {
      pass.free(); // another model was loaded meanwhile
      return null;
    }
    const failure = opened.failure();
    const summary = viz.install_pass(pass);
    publishReadback({ valuesLeft: opened.values_left() });
    if (failure) fallBack(failure);
    else gpu.difference = compare ? differenceFromCpu(viz) : null;
    count('gpuPasses');
    clearError('text-error');
    document.body.classList.remove('stale');
    showBackend();
    return summary;
  })();
  gpuRunning = run;
  try {
    return await run;
  } finally {
    gpuRunning = null;
  }
}

/** Text typed while a GPU pass ran gets its pass now. */
export function passAgainIfTyped() {
  if (gpuAgain && !gpuRunning) {
    gpuAgain = false;
    update();
  }
}

async function passOnGpu() {
  if (gpuRunning) {
    gpuAgain = true;
    return;
  }
  const started = performance.now();
  const { viz } = session;
  const { text } = state;
  try {
    // Read back with the pass what the charts on screen draw; the rest when asked.
    const summary = await passOnGpuWith((opened) => opened.trace(text, stepsToRead(specsOnScreen())));
    if (summary) {
      publish({ gpuPassText: text });
      showSummary(summary, started);
    }
  } catch (err) {
    if (session.viz === viz) showTextError(err);
  } finally {
    passAgainIfTyped();
  }
}

/** The current GPU pass against the CPU's pass on the same tokens, over the values that have
 * come back from the device. */
export function differenceFromCpu(viz) {
  try {
    return viz.largest_difference();
  } catch (err) {
    return { error: String(err.message ?? err) };
  }
}

// The rest of a GPU pass came back: the difference now covers every value. The values could
// not come back (a device lost meanwhile): the pass is computed again, on the CPU.
readback.arrived.push(() => {
  if (passesOnGpu() && session.viz) {
    gpu.difference = differenceFromCpu(session.viz);
    renderGpuStatus();
  }
});
readback.rerun = () => update();
readback.lost = (reason) => {
  fallBack(reason);
  session.viz?.recompute_next();
  update();
};

/** What a pass computed, in words: its time, and for a causal model what the KV cache gave. */
function timingText(summary) {
  const n = summary.tokens.length;
  if (!summary.recomputed) return `same ${n} tokens as before: numbers unchanged`;
  const cache = summary.reused
    ? `; reused ${summary.reused} of ${n} tokens from the KV cache, computed ${n - summary.reused}`
    : '';
  return `${summary.milliseconds.toFixed(0)} ms for ${n} tokens${cache}`;
}

/**
 * Makes `summary` (from `set_text` or `generate_next`) the current pass and brings every view
 * up to date with it.
 */
export function showSummary(summary, started = performance.now()) {
  // What a step says comes from Rust apart from its shape: the same objects while the model
  // is (sent again rather than made anew on each keystroke), and the shapes of this pass.
  summary.steps = summary.steps.map((step, i) => ({ ...step, shape: summary.shapes[i] }));
  session.summary = summary;
  // A GPU pass may have left values on the device (gpu-readback.js); a CPU pass never does.
  session.unread = session.viz.awaits_device();
  readback.waiting.clear();
  session.stepsByName = Object.fromEntries(summary.steps.map((s) => [s.name, s]));
  drawTiming.passStartedAt = inputAt ?? started;
  // First: on the first pass it may choose the head to open on, which the translation's
  // selects and the charts show.
  renderHeadFinder();
  renderTokens();
  renderTranslation();
  renderNormOptions();
  renderResidualPicker();
  state.step = Math.min(state.step, summary.steps.length - 1);
  setIfChanged($('step-slider'), 'max', String(summary.steps.length - 1));
  resetLinesFocus();
  renderQuery();
  renderCompare();
  drawAll();
  renderStep();
  renderPrediction();
  renderSwitches();
  renderPartTokens();
  if (summary.threads !== testHook.threads) showBackend(); // the threads started
  setIfChanged($('timing'), 'textContent', timingText(summary));
  setIfChanged($('timing'), 'title', $('timing').textContent); // cut to the header's width on screen
  writeUrlSoon();
  const done = performance.now();
  count('renders');
  if (inputAt !== null) {
    record('latencies', done - inputAt);
    if (summary.recomputed) record('passes', summary.milliseconds);
  }
  inputAt = null;
  lastPassEnd = done;
  if (testHook.firstViewAt === undefined) publish({ firstViewAt: done });
  document.dispatchEvent(new CustomEvent('tviz:pass')); // a lesson's question follows the sentence
}

export function scheduleUpdate(event) {
  const at = event?.timeStamp ?? performance.now(); // when the key was pressed
  if (inputAt === null) inputAt = at;
  inspectorBusy(); // a training run's next step waits for the charts
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
