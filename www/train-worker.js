// The Training section's worker (started by js/training.js; beside start-wasm.js, as it loads
// a wasm build's glue from outside js/): it runs the trainer (dist/train/, the crate built with the
// `train` feature: candle's automatic differentiation) off the page's thread, a few steps at a
// time, and reads the page's messages between them, so Pause answers within one chunk of steps.
//
// Messages in:  { type: 'preset', name }               -> { type: 'preset', settings }
//               { type: 'check', settings }            -> { type: 'checked', errors }
//               { type: 'start', settings, run }       -> { type: 'started', parameters, ... } or { type: 'error' }
//                 (the text task's corpus chapters are fetched first, once)
//               { type: 'pause' } / { type: 'resume' } / { type: 'reset' }
//               { type: 'right-of-way', signal }       (js/right-of-way.js's shared number)
//               { type: 'files', purpose }             -> { type: 'files', purpose, step, config, tokenizer, weights }
// Messages out while training: { type: 'steps', reports, tokensPerSecond, memoryBytes, held
// (steps that waited for a keystroke) }, every
// EVALUATE_EVERY steps { type: 'evaluation', ... } followed by the model's files (purpose
// 'probe'), and { type: 'finished' } at the run's last step. Every message carries the `run`
// id the page started the run with: a chunk that was under way when the page reset or started
// another run reports under the old id, and the page ignores it.
import init, { TrainingRun, check_training_settings, training_corpus_files, training_preset } from './train/transformer_viz.js';

/** Steps between evaluations (held-out loss, every head's scores, the model for the grid). */
const EVALUATE_EVERY = 25;
/** A chunk of steps takes about this long, so the page's messages wait at most about so much. */
const CHUNK_MS = 120;

const ready = init();
let run = null;
let running = false;
let generation = 0; // a Reset or a new Start leaves an older loop to end on its own
let runId = null; // the page's id of the run, sent back with each of its messages
let stepsPerChunk = 1;

function post(message, transfer = []) {
  self.postMessage({ ...message, run: runId }, transfer);
}

function sendFiles(purpose) {
  const files = run.files();
  const weights = run.weights(); // a copy out of the wasm memory, handed over whole
  post({ type: 'files', purpose, step: run.step(), ...files, weights }, [weights.buffer]);
}

function evaluate() {
  const started = performance.now();
  const evaluation = run.evaluate();
  post({ type: 'evaluation', ...evaluation, ms: performance.now() - started });
  sendFiles('probe');
}

/** The text task's corpus chapters, served beside the page, in the trainer's order (fetched
 * once, when a run first needs them). */
let chapters = null;
async function corpus() {
  chapters ??= await Promise.all(training_corpus_files().map(async (name) => {
    const response = await fetch(`corpus/moby-dick/${name}`);
    if (!response.ok) throw new Error(`The corpus chapter corpus/moby-dick/${name} did not load (${response.status} ${response.statusText}).`);
    return response.text();
  }));
  return chapters;
}

// The page's keystrokes go first (js/right-of-way.js): before each step, while the shared
// number is odd, the worker waits for it to change, at most HOLD_MS for one keystroke (a
// keystroke whose charts never finish drawing must not stop the run).
let rightOfWay = null;
let heldFor = null; // the keystroke (odd number) the worker stopped waiting for
const HOLD_MS = 250;
/** Waits while a keystroke is drawn; whether it waited. */
function giveWay() {
  const now = rightOfWay ? Atomics.load(rightOfWay, 0) : 0;
  if (now % 2 === 0 || now === heldFor) return false;
  const result = Atomics.wait(rightOfWay, 0, now, HOLD_MS);
  if (result === 'timed-out') heldFor = now;
  return result !== 'not-equal';
}

// Lets the worker read its messages (a Pause) between chunks.
const yieldToMessages = () => new Promise((resolve) => setTimeout(resolve, 0));

async function loop(mine) {
  // Tokens a second over the last chunks (a chunk alone is too short to time well).
  let tokens = 0;
  let ms = 0;
  while (running && mine === generation && run.step() < run.steps()) {
    const toEvaluation = EVALUATE_EVERY - (run.step() % EVALUATE_EVERY);
    const count = Math.max(1, Math.min(stepsPerChunk, toEvaluation));
    const started = performance.now();
    const reports = [];
    let held = 0; // steps that waited for a keystroke
    try {
      // One step at a time, each after the page's keystroke if one is being drawn.
      for (let i = 0; i < count; i += 1) {
        held += giveWay();
        reports.push(...run.train(1));
      }
    } catch (err) {
      running = false;
      post({ type: 'error', message: String(err.message ?? err) });
      return;
    }
    const took = performance.now() - started;
    // The next chunk's size, from this one's pace.
    stepsPerChunk = Math.max(1, Math.min(EVALUATE_EVERY, Math.round((count * CHUNK_MS) / Math.max(took, 1))));
    tokens = tokens * 0.7 + count * run.tokens_per_step();
    ms = ms * 0.7 + took;
    // The worker's WebAssembly memory: the model, the optimiser's moments, a step's activations.
    const memoryBytes = (await ready).memory.buffer.byteLength;
    post({ type: 'steps', reports, tokensPerSecond: (tokens / ms) * 1000, memoryBytes, held });
    const finished = run.step() >= run.steps();
    if (run.step() % EVALUATE_EVERY === 0 || finished) evaluate();
    if (finished) {
      running = false;
      post({ type: 'finished', step: run.step() });
      return;
    }
    await yieldToMessages();
  }
}

self.onmessage = async ({ data }) => {
  await ready;
  switch (data.type) {
    case 'preset':
      post({ type: 'preset', name: data.name, settings: training_preset(data.name) });
      break;
    case 'check':
      post({ type: 'checked', errors: check_training_settings(data.settings) });
      break;
    case 'start': {
      generation += 1;
      runId = data.run;
      run?.free();
      run = null;
      running = false;
      const mine = generation;
      try {
        const texts = data.settings.task === 'text' ? await corpus() : undefined;
        if (mine !== generation) return; // reset or restarted while the corpus loaded
        run = new TrainingRun(data.settings, texts);
      } catch (err) {
        post({ type: 'error', message: String(err.message ?? err) });
        return;
      }
      stepsPerChunk = 1;
      post({ type: 'started', parameters: run.parameters(), steps: run.steps(), tokensPerStep: run.tokens_per_step() });
      evaluate(); // the heads at step 0, where every line of the timeline starts
      running = true;
      loop(generation);
      break;
    }
    case 'pause':
      running = false;
      post({ type: 'paused', step: run?.step() ?? 0 });
      break;
    case 'resume':
      if (run && !running && run.step() < run.steps()) {
        running = true;
        post({ type: 'resumed', step: run.step() });
        loop(generation);
      }
      break;
    case 'reset':
      generation += 1;
      runId = null;
      running = false;
      run?.free();
      run = null;
      post({ type: 'reset' });
      break;
    case 'files':
      if (run) sendFiles(data.purpose);
      break;
    case 'right-of-way':
      rightOfWay = data.signal;
      break;
    default:
      post({ type: 'error', message: `unknown message ${data.type}` });
  }
};
