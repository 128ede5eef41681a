// The Training section's worker (started by js/training.js; beside start-wasm.js, as it loads
// a wasm build's glue from outside js/): it runs the trainer (dist/train/, the crate built with the
// `train` feature: candle's automatic differentiation) off the page's thread, a few steps at a
// time, and reads the page's messages between them, so Pause answers within one chunk of steps.
//
// Messages in:  { type: 'preset', name }               -> { type: 'preset', settings }
//               { type: 'check', settings }            -> { type: 'checked', errors }
//               { type: 'start', settings, run }       -> { type: 'started', parameters, threads, why, ... } or { type: 'error' }
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
//
// The worker's URL says how many threads to train on (`?threads=N`, js/training.js from the
// page's thread plan): with more than one, and cross-origin isolation, it loads the threaded
// trainer (dist/train-threads/) and starts that many threads, each computing a part of every
// step's batch; else, or if that fails, the plain trainer on this worker's thread.

const asked = Number(new URL(self.location.href).searchParams.get('threads') ?? 1);

/** The trainer's bindings and how many threads it runs on (and, at one, why not more). */
async function load() {
  if (asked > 1 && self.crossOriginIsolated) {
    try {
      const bindings = await import('./train-threads/transformer_viz.js');
      const exports = await bindings.default({ module_or_path: new URL('train-threads/transformer_viz_bg.wasm', import.meta.url) });
      await bindings.start_training_threads(asked);
      return { bindings, exports, threads: asked, why: null };
    } catch (err) {
      return { ...(await plain()), why: `the threaded trainer did not start (${err?.message ?? err})` };
    }
  }
  return { ...(await plain()), why: asked > 1 ? 'the page is not cross-origin isolated' : null };
}

async function plain() {
  const bindings = await import('./train/transformer_viz.js');
  const exports = await bindings.default({ module_or_path: new URL('train/transformer_viz_bg.wasm', import.meta.url) });
  return { bindings, exports, threads: 1 };
}

/** Steps between evaluations (held-out loss, every head's scores, the model for the grid). */
const EVALUATE_EVERY = 25;
/** A chunk of steps takes about this long, so the page's messages wait at most about so much. */
const CHUNK_MS = 120;

const ready = load();
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
  chapters ??= await Promise.all((await ready).bindings.training_corpus_files().map(async (name) => {
    const response = await fetch(`corpus/moby-dick/${name}`);
    if (!response.ok) throw new Error(`The corpus chapter corpus/moby-dick/${name} did not load (${response.status} ${response.statusText}).`);
    return response.text();
  }));
  return chapters;
}

// The page's keystrokes go first (js/right-of-way.js): before each step, while the shared
// number is odd, the worker waits for it to change, at most HOLD_MS for one keystroke (a
// keystroke whose charts never finish drawing must not stop the run). And while the student
// types, it stays still until QUIET_MS have passed since the last keystroke began or ended:
// a step under way when a keystroke arrives keeps the cores (on the threaded trainer, all of
// them) until it ends, so within a burst of typing only the first keystroke can meet one.
let rightOfWay = null;
let heldFor = null; // the keystroke (odd number) the worker stopped waiting for
const HOLD_MS = 250;
const QUIET_MS = 400;
let seen = 0; // the shared number when last read
let changedAt = -Infinity; // when the worker saw it change
/** Waits while a keystroke is drawn, and while the student is typing; whether it waited. */
function giveWay() {
  if (!rightOfWay) return false;
  let waited = false;
  for (;;) {
    const now = Atomics.load(rightOfWay, 0);
    if (now !== seen) {
      seen = now;
      changedAt = performance.now();
    }
    if (now % 2 === 1 && now !== heldFor) {
      if (Atomics.wait(rightOfWay, 0, now, HOLD_MS) === 'timed-out') heldFor = now;
      waited = true;
      continue;
    }
    const quiet = performance.now() - changedAt;
    if (quiet >= QUIET_MS) return waited;
    Atomics.wait(rightOfWay, 0, now, QUIET_MS - quiet);
    waited = true;
  }
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
    const memoryBytes = (await ready).exports.memory.buffer.byteLength;
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
  const { bindings, threads, why } = await ready;
  switch (data.type) {
    case 'preset':
      post({ type: 'preset', name: data.name, settings: bindings.training_preset(data.name) });
      break;
    case 'check':
      post({ type: 'checked', errors: bindings.check_training_settings(data.settings) });
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
        run = new bindings.TrainingRun(data.settings, texts, threads);
      } catch (err) {
        post({ type: 'error', message: String(err.message ?? err) });
        return;
      }
      stepsPerChunk = 1;
      post({ type: 'started', parameters: run.parameters(), steps: run.steps(), tokensPerStep: run.tokens_per_step(), threads: run.threads(), why });
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
      seen = Atomics.load(rightOfWay, 0);
      break;
    default:
      post({ type: 'error', message: `unknown message ${data.type}` });
  }
};
