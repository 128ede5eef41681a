// The model picker in the header, and loading a model: its size said before a download
// ("SmolLM2-135M: 98 MB, download?"), a progress bar while it downloads, the files read from
// the browser's cache on later visits (model-files.js), then a new `Viz` in place of the old
// one. A model that cannot be built (a corrupt file, a model this engine does not know) is
// reported in plain words and the page keeps the model it had.
import { $ } from './dom.js';
import { state } from './state.js';
import { session } from './session.js';
import { showError, clearError, showNotice } from './messages.js';
import { wasmBindings } from './loading.js';
import { MODELS, DEFAULT_MODEL, modelNamed, labelOf, downloadBytes, megabytes, registerTrained, TRAINED_MODEL } from './models.js';
import { loadModelFiles, isCached, cacheAvailable, dropCached } from './model-files.js';
import { closeGpu } from './gpu-backend.js';
import { renderModelText } from './applicable.js';
import { testHook, publish, record } from './testing-hook.js';
import { stopGeneration } from './prediction.js';

const mb = (bytes) => megabytes(bytes, 1);

/** A model that could not be built, with where its files came from. */
class ModelLoadError extends Error {}

function setProgress(model, done, total) {
  const bar = $('loading-progress');
  bar.max = total;
  bar.value = done;
  $('loading-amount').textContent = `${mb(done)} of ${mb(total)} MB`;
  const p = testHook.progress;
  if (p?.model === model.name) publish({ progress: { ...p, done, total, updates: p.updates + 1 } });
  else publish({ progress: { model: model.name, done, total, updates: 1 } });
}

/**
 * Where the model's files came from: a few words for the status line, and a sentence.
 * `stored`: whether the download was kept in the cache (undefined while it is being written).
 */
function sourceWords(load, stored) {
  if (load.source === 'trained') return [`trained in this page, ${load.label}`, 'Trained in this page by the Training section (or opened from its exported files): its weights are in this tab\'s memory only (export them there to keep them).'];
  if (load.source === 'cache') return ['from the browser\'s cache', 'Read from the browser\'s cache (Cache API), where an earlier visit kept it: nothing was downloaded.'];
  const again = load.discarded.length ? ' again (the cached copy was incomplete)' : '';
  if (stored === undefined) return [`downloaded${again}, caching…`, `Downloaded${again}; being written to the browser's cache (Cache API) for the next visit.`];
  if (stored) return [`downloaded${again}, now cached`, `Downloaded${again} and kept in the browser's cache (Cache API): the next visit reads it from there.`];
  if (!cacheAvailable()) return [`downloaded${again} (no Cache API here)`, `Downloaded${again}. Pages served over plain http from another machine have no Cache API, so the next visit downloads it again.`];
  return [`downloaded${again}, not cached`, `Downloaded${again}, but the browser refused to keep it (storage quota), so the next visit downloads it again.`];
}

// The load whose words the status line shows.
let shownLoad = null;

function showSource(load) {
  [$('model-source').textContent, $('model-source').title] = sourceWords(load, load.source === 'cache' ? true : load.stored ?? undefined);
}

// Lets the browser show the last words before the page blocks for a while.
function nextPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

/**
 * Downloads (or reads from the cache) the files of model `name` and builds its `Viz`.
 * Returns `{ name, viz, load }` (load: what `__tviz.loads` records); throws ModelLoadError when the engine refuses the files.
 */
async function fetchAndBuild(name, bindingsReady, { signal, why = '', again = false } = {}) {
  const model = modelNamed(name);
  if (model.trained) return buildTrained(model, await bindingsReady);
  $('loading').hidden = false;
  $('loading-text').textContent = `Loading ${model.short} (${megabytes(downloadBytes(model))} MB of trained weights${why})…`;
  setProgress(model, 0, downloadBytes(model));
  const [bindings, files] = await Promise.all([
    bindingsReady,
    loadModelFiles(model, { signal, onProgress: (done, total) => setProgress(model, done, total) }),
  ]);
  $('loading-text').textContent = `Preparing ${model.short}…`;
  await nextPaint();
  signal?.throwIfAborted();
  const load = { model: name, source: files.source, discarded: files.discarded, stored: null, error: null };
  record('loads', load);
  files.stored.then((stored) => {
    load.stored = stored;
    if (shownLoad === load) showSource(load);
  });
  try {
    const viz = new bindings.Viz(name, files.config, files.tokenizer, files.weights);
    return { name, viz, load };
  } catch (err) {
    load.error = String(err.message ?? err);
    // The engine refused the files: none of them stays in the cache (a broken download was
    // being stored), and a model read from the cache is downloaded once more.
    await files.stored.catch(() => {});
    await dropCached(model);
    if (files.source === 'cache' && !again) return fetchAndBuild(name, bindingsReady, { signal, why, again: true });
    const from = files.source === 'cache' ? 'read from the browser\'s cache' : 'downloaded';
    throw new ModelLoadError(`${model.short} (${mb(downloadBytes(model))} MB, ${from}) could not be loaded: ${load.error}`);
  }
}

/** The model the Training section trained, from its files in memory. */
function buildTrained(model, bindings) {
  const { config, tokenizer, weights, label } = model.trained;
  const load = { model: model.name, source: 'trained', label, discarded: [], stored: null, error: null };
  record('loads', load);
  return { name: model.name, viz: bindings.Viz.trained(model.name, config, tokenizer, weights), load };
}

/**
 * Shows a model the Training section trained, or its exported files (`files`: { config,
 * tokenizer, weights }), in every view, as the picker's "Trained here" entry (replacing an
 * earlier one). `label`: where it came from ("step 1,200"). Throws, showing nothing new, when
 * the engine refuses the files.
 */
export async function showTrainedModel(files, { label }) {
  const bindings = await wasmBindings();
  const earlier = MODELS[TRAINED_MODEL];
  registerTrained(files, { label });
  let built;
  try {
    built = buildTrained(modelNamed(TRAINED_MODEL), bindings);
  } catch (err) {
    if (earlier) MODELS[TRAINED_MODEL] = earlier;
    else delete MODELS[TRAINED_MODEL];
    throw err;
  }
  stopGeneration();
  hideOffer();
  cancelSwitch();
  fillPicker();
  clearError();
  install(built);
  afterSwitch();
}

/** Puts the built model in place of the one shown (whose memory is given back). */
function install({ name, viz, load }) {
  const old = session.viz;
  closeGpu(); // it serves the old model
  session.viz = viz;
  session.modelName = name;
  session.config = { ...viz.config(), tokenizer: viz.tokenizer_kind() }; // tokenizer: word-piece, byte-bpe or bytes
  state.model = name;
  old?.free();
  const model = modelNamed(name);
  $('model').value = name;
  shownLoad = load;
  showSource(load);
  $('model-source').hidden = false;
  $('model').title = `${model.title}: ${model.description}`;
  showTwinSwitch(model);
  renderModelText();
  // A model that spells only a few characters (the reverser: lowercase letters and spaces)
  // starts on its own example rather than refusing the text that was there.
  if (model.accepts && !model.accepts.test(state.text)) {
    showNotice([`${model.short} knows only lowercase letters and spaces, so the text box now holds its example, "${model.example}".`]);
    state.text = model.example;
    $('text').value = model.example;
  }
  publish({ model: name, modelError: null });
}

/** The post-LN / pre-LN switch, for a model trained with a twin that differs only there. */
function showTwinSwitch(model) {
  const box = $('twin-switch');
  box.hidden = !model.twin;
  for (const button of box.querySelectorAll('button')) button.setAttribute('aria-pressed', String(button.dataset.twin === model.name));
}

function fillPicker() {
  const select = $('model');
  select.replaceChildren(...Object.values(MODELS).map((m) => {
    const o = document.createElement('option');
    o.value = m.name;
    o.textContent = labelOf(m);
    o.title = m.description;
    return o;
  }));
  select.value = state.model;
}

/**
 * Loads the model the link asks for (the default without one) while the WebAssembly module
 * starts. A link's model that cannot be loaded is reported and the default model shown.
 */
export async function openFirstModel() {
  // What the tests read: the model shown, each load's outcome, the last download's progress,
  // and what the picker is doing (idle, checking the cache, offering a download, loading).
  publish({ model: null, picker: 'idle', modelError: null, loads: [], progress: null });
  fillPicker();
  const bindings = wasmBindings();
  let asked = state.model;
  const model = modelNamed(asked);
  if (asked !== DEFAULT_MODEL && model && downloadBytes(model) >= SMALL_MODEL_BYTES && !(await isCached(model))) {
    // A link does not start a large download by itself (a few hundred characters could make
    // every visitor fetch 98 MB): it says the size and waits for the student's choice.
    asked = await askFirst(model);
    state.model = asked;
  }
  let loaded;
  try {
    loaded = await fetchAndBuild(asked, bindings, { why: asked === DEFAULT_MODEL ? '' : ', as the link asks' });
  } catch (err) {
    if (asked === DEFAULT_MODEL || !(err instanceof ModelLoadError)) throw err;
    showError(`${err.message}. ${modelNamed(DEFAULT_MODEL).short} is shown instead.`);
    loaded = await fetchAndBuild(DEFAULT_MODEL, bindings);
    install(loaded);
    publish({ modelError: err.message });
    return;
  }
  install(loaded);
}

/** The link's large model, offered with its size before any download: resolves to the model
 * to open (it, or the default). */
function askFirst(model) {
  $('loading').hidden = true;
  showOffer(model, { asker: 'The link asks for ', keep: `Open ${modelNamed(DEFAULT_MODEL).short} instead` });
  return new Promise((resolve) => {
    const listening = new AbortController(); // both buttons answer once, then go back to the picker's
    const choose = (name) => () => {
      listening.abort();
      $('model-offer').hidden = true;
      publish({ picker: 'idle' });
      resolve(name);
    };
    $('model-download').addEventListener('click', choose(model.name), { signal: listening.signal });
    $('model-keep').addEventListener('click', choose(DEFAULT_MODEL), { signal: listening.signal });
  });
}

// ---------- switching ----------
let switching = null; // { seq, controller } of the load under way
let switchSeq = 0;
let afterSwitch = () => {};

function hideOffer() {
  $('model-offer').hidden = true;
  if (testHook.picker === 'offer') publish({ picker: 'idle' });
}

function cancelSwitch() {
  if (!switching) return;
  switching.controller.abort();
  switching = null;
  $('loading').hidden = true;
  $('loading-cancel').hidden = true;
  publish({ picker: 'idle' });
}

/** Shows the model the page has in the picker again (a download declined, cancelled or failed). */
function keepShownModel() {
  hideOffer();
  cancelSwitch();
  $('model').value = session.modelName;
  state.model = session.modelName;
  $('model-source').hidden = false;
}

/** Shows the offer of `model` with its size: "`asker`SmolLM2-135M: 98 MB, download?", and
 * `keep` on the button that declines. */
function showOffer(model, { asker = '', keep }) {
  const size = megabytes(downloadBytes(model));
  $('model-offer-text').textContent = `${asker}${model.short}: ${size} MB, download? ${model.description}`;
  $('model-download').textContent = `Download ${size} MB`;
  $('model-download').dataset.model = model.name;
  $('model-keep').textContent = keep;
  $('model-offer').hidden = false;
  publish({ picker: 'offer' });
}

function offer(model) {
  showOffer(model, { keep: `Keep ${modelNamed(session.modelName).short}` });
  $('model-source').hidden = true; // it describes the model shown, not the one picked
}

/**
 * Loads model `name` and shows it: every section is drawn again for it and the current text
 * is run through it. The page keeps working on the old model while the new one downloads.
 */
export async function switchModel(name) {
  // The student has left this model: a generation under way stops now, not once the next
  // model has loaded (it would go on writing meanwhile, to the end of the context).
  if (name !== session.modelName) stopGeneration();
  hideOffer();
  cancelSwitch();
  if (name === session.modelName) return;
  const seq = ++switchSeq;
  const controller = new AbortController();
  switching = { seq, controller };
  publish({ picker: 'loading' });
  $('loading-cancel').hidden = false;
  $('model-source').hidden = true;
  try {
    const loaded = await fetchAndBuild(name, wasmBindings(), { signal: controller.signal });
    if (switching?.seq !== seq) { loaded.viz.free(); return; } // another choice came first
    switching = null;
    clearError();
    install(loaded);
    afterSwitch();
  } catch (err) {
    if (controller.signal.aborted) return; // cancelled: the page says nothing
    switching = null;
    const message = err instanceof ModelLoadError ? err.message : `${modelNamed(name).short} could not be loaded: ${err.message ?? err}`;
    showError(`${message}. The page still shows ${modelNamed(session.modelName).short}.`);
    publish({ modelError: message });
    keepShownModel();
  } finally {
    if (seq === switchSeq) {
      $('loading').hidden = true;
      $('loading-cancel').hidden = true;
      if (testHook.picker === 'loading') publish({ picker: 'idle' });
    }
  }
}

/** The student chose `name` in the picker: load it at once if cached, else say its size first. */
async function pick(name) {
  const model = modelNamed(name);
  if (model && name !== session.modelName) stopGeneration();
  hideOffer();
  cancelSwitch();
  if (!model || name === session.modelName) {
    $('model-source').hidden = false; // back on the model shown
    publish({ picker: 'idle' });
    return;
  }
  const seq = ++switchSeq;
  publish({ picker: 'checking' });
  const cached = await isCached(model);
  if (seq !== switchSeq || $('model').value !== name) return; // chose again meanwhile
  publish({ picker: 'idle' });
  // A small model (the lecture's own, a few MB) loads at once; a big one says its size first.
  if (cached || downloadBytes(model) < SMALL_MODEL_BYTES) switchModel(name);
  else offer(model);
}

/** Chooses model `name` as the picker does (a lesson's step): a small or cached one loads at
 * once, a big one is offered with its size first. Resolves once the page has chosen which. */
export async function pickModel(name) {
  if (!modelNamed(name)) return;
  $('model').value = name;
  await pick(name);
}

/** Models smaller than this load without asking first. */
const SMALL_MODEL_BYTES = 10e6;

/** `onSwitch()` brings every section up to date after another model was loaded. */
export function wirePicker(onSwitch) {
  afterSwitch = onSwitch;
  $('model').addEventListener('change', () => pick($('model').value));
  for (const button of document.querySelectorAll('#twin-switch button')) {
    button.addEventListener('click', () => { if (button.dataset.twin !== session.modelName) switchModel(button.dataset.twin); });
  }
  $('model-download').addEventListener('click', () => switchModel($('model-download').dataset.model));
  $('model-keep').addEventListener('click', () => { keepShownModel(); $('model').focus(); });
  $('loading-cancel').addEventListener('click', () => { keepShownModel(); $('model').focus(); });
}
