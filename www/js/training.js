// The Training section: a small transformer trained in this page, in a worker
// (www/train-worker.js, the trainer's own wasm), with its loss curves, every head's score over the
// steps, and the attention of all its heads on a probe sentence redrawn as it learns. Paused or
// finished, the model opens in every view of the page as the picker's "Trained here" entry, and
// exports in the project's format (config.json, tokenizer.json, model.safetensors) for the CLI.
import { $, download } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { showError, clearError } from './messages.js';
import { draw, drawWhenSeen, registerChart } from './charts.js';
import { gridHeight } from './attention.js';
import { showTrainedModel } from './model-picker.js';
import { publish, record, testHook } from './testing-hook.js';
import { rightOfWay } from './right-of-way.js';
import { threadPlan } from './threads.js';
import { thousands } from './labels.js';

/** The settings' fields: form control id, JSON name, and how the control's value is read. */
const FIELDS = [
  ['train-layers', 'layers', 'whole'],
  ['train-heads', 'heads', 'whole'],
  ['train-width', 'd_model', 'whole'],
  ['train-context', 'context', 'whole'],
  ['train-batch', 'batch', 'whole'],
  ['train-steps', 'steps', 'whole'],
  ['train-rate', 'learning_rate', 'number'],
  ['train-seed', 'seed', 'whole'],
  ['train-task', 'task', 'text'],
  ['train-norm', 'pre_ln', 'pre'],
  ['train-positions', 'positions', 'checked'],
];

/** The sentence the grid of the model being trained reads (cut to its context). */
const PROBE = 'Mary gave the ball to Tom. Mary gave the ball to Tom. The cat sat on the mat.';
/** The reversal task's: a string and its answer, whose heads' weights form an anti-diagonal
 * once the model writes strings backwards. */
const REVERSE_PROBE = 'the cat sat>tas tac eht';
const probeText = () => (run.settings?.task === 'reverse' ? REVERSE_PROBE : PROBE);
/** What each task's held-out loss is measured on, where it is not stories. */
const HELD_OUT_TEXT = { reverse: 'strings', text: 'chapters' };
/** The tasks with repeated runs, whose second copy's loss the loss chart draws. */
const REPEATS = new Set(['repeat', 'mixed']);

/** Points of the training loss kept for the chart (the rest are thinned out). */
const LOSS_POINTS = 400;

const run = {
  worker: null,
  settings: null, // the settings the run started with
  status: 'idle', // idle | starting | running | paused | finished
  step: 0,
  steps: 0,
  parameters: 0,
  tokensPerSecond: 0,
  threads: 1, // the threads the trainer computes each step on
  threadsWhy: null, // why one, when more were asked or the device has more
  train: [], // [step, loss]
  heldOut: [], // [step, loss]
  secondCopy: [], // [step, loss]
  evaluations: [], // { step, previous, induction, first }
  probeFiles: null, // the model's files at its last evaluation
  probe: null, // { viz, step, summary }: built from them when the grid is drawn, reading probeText()
  waiting: new Map(), // purpose -> resolve, for files asked of the worker
};

// The three charts: each says what to do while there is nothing to draw.
const nothingYet = { why: 'Press Train: the run is drawn here as it learns.' };
const drawnHere = () => (run.evaluations.length ? { viz: session.viz, name: session.modelName } : nothingYet);

registerChart('training-loss', {
  // The second copy's loss only where the task repeats runs: a model that never met one
  // does not copy, and its rising line would squeeze the others.
  spec: () => ({
    kind: 'training_loss',
    train: thinned(run.train),
    held_out: run.heldOut,
    held_out_text: HELD_OUT_TEXT[run.settings?.task] ?? 'stories',
    second_copy: REPEATS.has(run.settings?.task) ? run.secondCopy : [],
  }),
  shape: [0.5, 320],
  modelOnly: true,
  model: drawnHere,
});
registerChart('training-timeline', {
  spec: () => ({
    kind: 'head_timeline',
    pattern: state.trainPattern,
    steps: run.evaluations.map((e) => e.step),
    scores: run.evaluations.map((e) => e[state.trainPattern]),
    n_heads: run.settings?.heads ?? 1,
  }),
  shape: [0.5, 320],
  modelOnly: true,
  model: drawnHere,
});
registerChart('training-grid', {
  spec: () => ({ kind: 'grid', ...strongestHead() }),
  shape: [0.6, 240],
  height: (width, height) => (run.settings ? gridHeight(width, { n_layers: run.settings.layers, n_heads: run.settings.heads }) : height),
  model: probeModel,
});

/** The model at its last evaluation, reading probeText(): built when the grid is drawn, so an
 * evaluation off screen builds nothing. */
function probeModel() {
  const files = run.probeFiles;
  if (!files || !session.viz) return nothingYet;
  if (run.probe?.step !== files.step) {
    let viz;
    try {
      viz = session.viz.constructor.trained('trained-here', files.config, files.tokenizer, files.weights);
    } catch (err) {
      return { why: `The model being trained could not be read: ${err.message ?? err}` };
    }
    const summary = viz.set_text(probeText().slice(0, run.settings.context - 1));
    run.probe?.viz.free();
    run.probe = { viz, step: files.step, summary };
  }
  return { viz: run.probe.viz, name: `trained-here@${run.probe.step}`, summary: run.probe.summary };
}

const TRAINING_CHARTS = ['training-loss', 'training-timeline', 'training-grid'];

/** Forgets the last run's measurements (and frees its probe's model); `fields` set the rest. */
function clearRun(fields) {
  run.probe?.viz.free();
  Object.assign(run, { step: 0, train: [], heldOut: [], secondCopy: [], evaluations: [], probe: null, probeFiles: null, ...fields });
}

/** Every point while few, else about LOSS_POINTS of them, evenly spread, with the last. */
function thinned(points) {
  if (points.length <= LOSS_POINTS) return points;
  const every = Math.ceil(points.length / LOSS_POINTS);
  const kept = points.filter((_, i) => i % every === 0);
  if (kept.at(-1) !== points.at(-1)) kept.push(points.at(-1));
  return kept;
}

/** The head the timeline's pattern scores highest at the last evaluation: the grid frames it. */
function strongestHead() {
  const scores = run.evaluations.at(-1)?.[state.trainPattern] ?? [0];
  const best = scores.reduce((b, s, i) => (s > scores[b] ? i : b), 0);
  const heads = run.settings?.heads ?? 1;
  return { layer: Math.floor(best / heads), head: best % heads };
}

function worker() {
  if (!run.worker) {
    // As many threads as the page's forward pass starts (js/threads.js): the worker loads the
    // threaded trainer for more than one.
    const plan = threadPlan(location.search, navigator.hardwareConcurrency, self.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function');
    run.planWhy = plan.why;
    const url = new URL(`../train-worker.js?threads=${plan.threads}`, import.meta.url);
    run.worker = new Worker(url, { type: 'module' });
    run.worker.onmessage = ({ data }) => onMessage(data);
    run.worker.onerror = (event) => fail(`The trainer could not start: ${event.message ?? 'its files did not load'}.`);
    if (rightOfWay) run.worker.postMessage({ type: 'right-of-way', signal: rightOfWay });
  }
  return run.worker;
}

let runs = 0; // ids of the runs started, so that an older run's last messages are ignored

/** What a message from the worker changes. */
function onMessage(message) {
  const mine = ['preset', 'checked'].includes(message.type) || message.run === run.id;
  if (!mine) return;
  switch (message.type) {
    case 'preset':
      // Not over settings the student changed meanwhile (the preset is then "custom").
      if ($('train-preset').value === message.name) fillForm(message.settings);
      formReady();
      break;
    case 'checked':
      afterCheck(message.errors);
      break;
    case 'started':
      Object.assign(run, {
        status: 'running',
        parameters: message.parameters,
        steps: message.steps,
        step: 0,
        threads: message.threads,
        threadsWhy: message.why ?? run.planWhy,
      });
      break;
    case 'steps':
      for (const r of message.reports) run.train.push([r.step, r.loss]);
      run.step = message.reports.at(-1)?.step ?? run.step;
      run.tokensPerSecond = message.tokensPerSecond;
      run.memoryBytes = message.memoryBytes;
      record('trainingSpeeds', message.tokensPerSecond);
      publish({ trainingStepsHeld: testHook.trainingStepsHeld + message.held });
      break;
    case 'evaluation':
      record('trainingEvaluations', {
        step: message.step,
        seconds: (performance.now() - run.startedAt) / 1000,
        previous: Math.max(...message.previous),
        induction: Math.max(...message.induction),
        copy: message.copy_loss,
      });
      run.heldOut.push([message.step, message.held_out]);
      run.secondCopy.push([message.step, message.copy_loss[1]]);
      run.evaluations.push({ step: message.step, previous: message.previous, induction: message.induction, first: message.first, copyLoss: message.copy_loss });
      drawWhenSeen('training-loss');
      drawWhenSeen('training-timeline');
      break;
    case 'files':
      onFiles(message);
      break;
    case 'paused':
      run.status = 'paused';
      break;
    case 'resumed':
      run.status = 'running';
      break;
    case 'finished':
      run.status = 'finished';
      drawWhenSeen('training-loss');
      break;
    case 'reset':
      break;
    case 'error':
      fail(message.message);
      break;
    default:
  }
  renderStatus();
}

function fail(message) {
  run.status = run.step > 0 ? 'paused' : 'idle';
  run.error = message;
  showError(message, 'train-message');
  renderStatus();
}

/** The model's files arrived: the probe's grid, or what a button asked for. */
function onFiles(message) {
  const waiting = run.waiting.get(message.purpose);
  if (waiting) {
    run.waiting.delete(message.purpose);
    waiting(message);
  } else if (message.purpose === 'probe') {
    run.probeFiles = message;
    drawWhenSeen('training-grid');
  }
}

/** The model's files now, from the worker. */
function filesNow(purpose) {
  return new Promise((resolve) => {
    run.waiting.set(purpose, resolve);
    worker().postMessage({ type: 'files', purpose });
  });
}

/** The form's settings, or null after saying beside each control what is wrong with it. */
function readForm() {
  const settings = {};
  let ok = true;
  for (const [id, key, how] of FIELDS) {
    const control = $(id);
    clearError(`${id}-message`);
    if (how === 'checked') settings[key] = control.checked;
    else if (how === 'pre') settings[key] = control.value === 'pre';
    else if (how === 'text') settings[key] = control.value;
    else {
      const value = Number(control.value.trim());
      if (control.value.trim() === '' || !Number.isFinite(value) || (how === 'whole' && !Number.isInteger(value)) || value < 0) {
        showError(how === 'whole' ? 'A whole number, 0 or more.' : 'A number such as 0.003.', `${id}-message`);
        ok = false;
      }
      settings[key] = value;
    }
  }
  return ok ? settings : null;
}

/** The form holds its first settings (the preset's, or the link's): for the tests. */
function formReady() {
  if (!testHook.training?.formReady) publish({ training: { ...testHook.training, formReady: true } });
}

function fillForm(settings) {
  for (const [id, key, how] of FIELDS) {
    const control = $(id);
    clearError(`${id}-message`);
    if (how === 'checked') control.checked = settings[key];
    else if (how === 'pre') control.value = settings[key] ? 'pre' : 'post';
    else control.value = String(settings[key]);
  }
}

let pendingStart = null;

/** Train: start a run with the form's settings once the trainer has checked them. */
function start() {
  clearError('train-message');
  const settings = readForm();
  if (!settings) return;
  pendingStart = settings;
  run.error = null;
  run.startedAt = performance.now(); // Train was pressed: the benchmark's clock starts here
  run.status = 'starting';
  renderStatus();
  worker().postMessage({ type: 'check', settings });
}

/** The trainer's verdict on the settings: start, or say beside each control what is out of range. */
function afterCheck(errors) {
  const settings = pendingStart;
  pendingStart = null;
  if (!settings) return;
  if (errors.length) {
    const ids = Object.fromEntries(FIELDS.map(([id, key]) => [key, id]));
    for (const e of errors) showError(e.message, `${ids[e.field]}-message`);
    run.status = 'idle';
    publish({ training: { ...testHook.training, refused: errors } });
    renderStatus();
    return;
  }
  clearRun({ settings, status: 'starting' });
  run.id = ++runs;
  worker().postMessage({ type: 'start', settings, run: run.id });
  state.train = settings; // the link reproduces the run: its settings and seed
  writeUrl();
  for (const name of TRAINING_CHARTS) draw(name);
}

function renderStatus() {
  const { status } = run;
  $('train-start').textContent = status === 'paused' ? 'Resume' : 'Train';
  $('train-start').disabled = status === 'running' || status === 'starting';
  $('train-pause').disabled = status !== 'running';
  $('train-reset').disabled = status === 'idle';
  const haveModel = run.evaluations.length > 0;
  $('train-open').disabled = !haveModel;
  $('train-export').disabled = !haveModel;
  const words = {
    idle: 'Choose a preset or your own settings, then press Train.',
    starting: 'Starting the trainer…',
    running: 'Training',
    paused: 'Paused',
    finished: 'Finished',
  }[status];
  const parts = [words];
  if (status !== 'idle' && status !== 'starting') {
    parts.push(`step ${thousands(run.step)} of ${thousands(run.steps)}`);
    const last = run.train.at(-1);
    if (last) parts.push(`loss ${last[1].toFixed(3)}`);
    if (run.tokensPerSecond) parts.push(`${thousands(Math.round(run.tokensPerSecond))} characters a second`);
    parts.push(run.threads > 1 ? `on ${run.threads} threads` : 'on one thread');
    parts.push(`${thousands(run.parameters)} parameters`);
  }
  $('train-status').textContent = parts.join(' · ');
  $('train-status').title = run.threads > 1 || !run.threadsWhy ? '' : `One thread: ${run.threadsWhy}.`;
  publish({
    training: {
      status,
      step: run.step,
      steps: run.steps,
      losses: run.train.length,
      lastLoss: run.train.at(-1)?.[1] ?? null,
      firstLoss: run.train[0]?.[1] ?? null,
      evaluations: run.evaluations.length,
      probeStep: run.probeFiles?.step ?? null,
      memoryBytes: run.memoryBytes ?? null,
      threads: run.threads,
      threadsWhy: run.threadsWhy,
      error: run.error ?? null,
      formReady: testHook.training?.formReady ?? false,
      opened: testHook.training?.opened ?? null,
    },
  });
}

function pressStart() {
  if (run.status === 'paused') {
    worker().postMessage({ type: 'resume' });
    return;
  }
  start();
}

function reset() {
  worker().postMessage({ type: 'reset' });
  run.id = null;
  clearRun({ status: 'idle', steps: 0 });
  for (const name of TRAINING_CHARTS) draw(name);
  renderStatus();
}

/** Open in the inspector: the model as it is now, in every view of the page. */
async function openInInspector() {
  const files = await filesNow('inspect');
  await showTrainedModel(files, { label: `step ${thousands(files.step)}` });
}

/** Export: the model's three files, which the CLI (`--dir`) and this page load again. */
async function exportModel() {
  const files = await filesNow('export');
  download(new Blob([files.config], { type: 'application/json' }), 'config.json');
  download(new Blob([files.tokenizer], { type: 'application/json' }), 'tokenizer.json');
  download(new Blob([files.weights], { type: 'application/octet-stream' }), 'model.safetensors');
}

/** Open exported files: the three files an Export wrote, shown in every view. */
async function openFiles() {
  clearError('train-files-message');
  const chosen = [...$('train-files').files];
  const named = (test) => chosen.find((f) => test(f.name));
  const config = named((n) => n.endsWith('config.json'));
  const tokenizer = named((n) => n.endsWith('tokenizer.json'));
  const weights = named((n) => n.endsWith('.safetensors'));
  const missing = [[config, 'config.json'], [tokenizer, 'tokenizer.json'], [weights, 'model.safetensors']].filter(([f]) => !f).map(([, n]) => n);
  if (missing.length) {
    showError(`Choose the three files an export wrote; missing: ${missing.join(', ')}.`, 'train-files-message');
    return;
  }
  try {
    const files = { config: await config.text(), tokenizer: await tokenizer.text(), weights: new Uint8Array(await weights.arrayBuffer()) };
    await showTrainedModel(files, { label: 'from files' });
    publish({ training: { ...testHook.training, opened: 'files' } });
  } catch (err) {
    showError(`These files are not a model this page can read: ${err.message ?? err}`, 'train-files-message');
  }
}

export function wireTraining() {
  $('train-files').addEventListener('change', openFiles);
  $('train-preset').addEventListener('change', () => {
    if ($('train-preset').value !== 'custom') worker().postMessage({ type: 'preset', name: $('train-preset').value });
  });
  for (const [id] of FIELDS) $(id).addEventListener('input', () => { $('train-preset').value = 'custom'; });
  $('train-start').addEventListener('click', pressStart);
  $('train-pause').addEventListener('click', () => worker().postMessage({ type: 'pause' }));
  $('train-reset').addEventListener('click', reset);
  $('train-open').addEventListener('click', openInInspector);
  $('train-export').addEventListener('click', exportModel);
  $('train-pattern').value = state.trainPattern;
  $('train-pattern').addEventListener('change', () => {
    state.trainPattern = $('train-pattern').value;
    draw('training-timeline');
    draw('training-grid');
  });
  // The trainer's wasm (a few MB) is fetched when the section first comes into view.
  const seen = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    seen.disconnect();
    // A link's run (train=) fills the form; else the preset chosen.
    if (state.train) {
      $('train-preset').value = 'custom';
      fillForm(state.train);
      formReady();
    } else worker().postMessage({ type: 'preset', name: $('train-preset').value });
  }, { rootMargin: '400px 0px' });
  seen.observe($('training-section'));
  renderStatus();
}
