// What the student chose (sentence, layer, head, step, ...), mirrored in the address bar so
// that a shared link reopens the same view, and Back/Forward move between the views the
// student chose. The link format itself is in url-state.js.
import { $ } from './dom.js';
import { showNotice, setLinkNote } from './messages.js';
import { parseLink, clampToLimits, textFragment, queryFor, shorten, parseDims as parseDimsText } from './url-state.js';
import { MODELS, DEFAULT_MODEL, modelNamed, TRAINED_MODEL } from './models.js';
import { exposeForTests } from './testing-hook.js';
import { thousands } from './labels.js';
// Sines and cosines of ever longer periods in the sinusoidal table (6, 6, 16, 43 and 112 positions).
export const DEFAULT_DIMS = [0, 1, 40, 80, 120];

export const state = {
  model: DEFAULT_MODEL, // the model shown (models.js); a link's model= until it is loaded
  text: $('text').value,
  layer: 0,
  head: 0,
  mode: 'heatmap',
  stack: 'decoder', // an encoder-decoder's attention heatmap: its decoder's or its encoder's
  step: 0,
  stepHead: 0,
  norm: 1,
  dims: [...DEFAULT_DIMS],
  residualTokens: null, // tokens the residual chart follows; null: a few chosen by the chart
  rotaryPair: 0, // the feature pair the rotary pair chart shows
  query: null, // the one-query chart's token; null: the head finder's (query.js)
  temperature: 1, // decoding: 0 is greedy
  topK: 0, // 0: off
  topP: 1, // 1: off
  seed: 0,
  off: [], // parts switched off (ablation.js): [{part, layer, head, fill}]
  gridPattern: 'previous', // the head grid's colouring: previous, induction, duplicate or first
  trainPattern: 'previous', // the Training section's head timeline: previous, induction or first
  train: null, // the settings of the Training section's run (training.js), or a link's, or null
  threads: null, // a link's threads=N (threads.js); null: as many as the device reports, up to 8
  backend: 'auto', // where passes run: auto, cpu or gpu (`?backend=`, gpu-backend.js)
  layerHeadFromUrl: false, // else the head finder picks an informative head to open on
  lesson: null, // the shipped lesson open (lessons.js: its file's name in www/lessons/), or null
  lessonStep: 0, // its step, from 0 (a link's lstep= counts from 1)
};

/** What the opening link stated (before any clamping), for `checkAgainst`. */
export const fromLink = {};

export const parseDims = parseDimsText;

/** Reads the opening link into `state`; notes what it had to ignore. */
export async function readUrl() {
  const { values, notes } = await parseLink(location.search, location.hash);
  if (values.model === TRAINED_MODEL) {
    notes.push(`The link showed a model trained in its page: its weights stayed in that tab, so ${DEFAULT_MODEL} is shown.${values.train ? ' The run\'s settings are in the Training section: press Train there to train it again (the same seed gives the same run on the same machine).' : ''}`);
    delete values.model;
  } else if (values.model !== undefined && !modelNamed(values.model)) {
    notes.push(`This page has no model "${shorten(values.model)}" (it has ${Object.keys(MODELS).join(' and ')}), so ${DEFAULT_MODEL} is shown.`);
    delete values.model;
  }
  state.layerHeadFromUrl = values.layer !== undefined || values.head !== undefined;
  Object.assign(fromLink, values);
  Object.assign(state, values);
  if (notes.length) showNotice(notes);
}

/**
 * Brings the state inside the model's ranges (`limits`: how many layers, heads, ... there
 * are) and says what a link asked for that the model does not have.
 */
export function checkAgainst(limits, asked = state) {
  const { values, notes } = clampToLimits({ ...state, ...asked }, limits);
  for (const key of Object.keys(limits)) if (values[key] !== undefined) state[key] = values[key];
  if (notes.length) showNotice(notes);
}

// ---------- the address bar ----------
const KEYS = ['model', 'text', 'layer', 'head', 'mode', 'stack', 'step', 'stepHead', 'norm', 'dims', 'residualTokens', 'rotaryPair', 'query', 'temperature', 'topK', 'topP', 'seed', 'off', 'lesson', 'lessonStep', 'train'];
let written = null; // the state the current history entry shows
let lastChange = { keys: '', at: -Infinity };
let linkSeq = 0;
let textLink = { text: null, fragment: '' };
const SAME_CHOICE_MS = 1500; // changes of the same kind this close together make one entry

function snapshot() {
  return Object.fromEntries(KEYS.map((k) => [k, Array.isArray(state[k]) ? [...state[k]] : state[k]]));
}

/**
 * Writes the state into the address bar. A new choice (another head, another step, a new
 * sentence) makes a new history entry, so Back returns to the view before it; a run of the
 * same kind of change (typing, stepping) updates one entry.
 */
export async function writeUrl() {
  writing += 1;
  try {
    await writeUrlNow();
  } finally {
    writing -= 1;
  }
}
let writing = 0; // writeUrl calls under way or scheduled (the text's compression is asynchronous)

/**
 * `writeUrl` in a task of its own, after the current one: a pass calls it, and the address
 * (the text compressed for the link) is not needed to draw the charts. While the text is being
 * typed it waits until typing pauses (TYPING_PAUSE_MS): compressing the text took ~2 ms a
 * keystroke, in the way of the next one, and the entry it updates waits for the pause anyway
 * (REPLACE_AFTER_MS). Calls made before it runs make one write.
 */
const TYPING_PAUSE_MS = 150;
let writeScheduled = false;
let writeTimer = null;
export function writeUrlSoon() {
  const typing = state.text !== textLink.text;
  if (writeScheduled && !typing) return;
  if (!writeScheduled) writing += 1; // counted from now, so that __tvizUrlWritten waits for it
  writeScheduled = true;
  clearTimeout(writeTimer);
  writeTimer = setTimeout(() => {
    writeScheduled = false;
    writing -= 1;
    writeUrl(); // counts itself again before this task ends
  }, typing ? TYPING_PAUSE_MS : 0);
}
/** For tests: true once the address bar shows every change made so far. */
exposeForTests('UrlWritten', () => writing === 0 && pendingReplace === null);

async function writeUrlNow() {
  const seq = ++linkSeq;
  if (state.text !== textLink.text) {
    const text = state.text;
    const link = await textFragment(text);
    if (seq !== linkSeq) return; // a newer call will write
    textLink = { text, fragment: link.fragment };
    setLinkNote(link.keptChars < link.totalChars
      ? `This text is too long to share whole in a link: a link keeps its first ${thousands(link.keptChars)} of ${thousands(link.totalChars)} characters.`
      : null);
  }
  const url = `${location.pathname}${queryFor(state, state.model)}#t=${textLink.fragment}`;
  const now = snapshot();
  const changed = written ? KEYS.filter((k) => JSON.stringify(now[k]) !== JSON.stringify(written[k])).join(',') : '';
  const here = pendingReplace?.url ?? `${location.pathname}${location.search}${location.hash}`;
  if (url === here && changed === '') return;
  const t = performance.now();
  const sameChoice = changed === lastChange.keys && t - lastChange.at < SAME_CHOICE_MS;
  if (written === null || changed === '' || sameChoice) replaceSoon(now, url);
  else {
    flushReplace(); // the entry being left keeps its last state
    history.pushState(now, '', url);
  }
  if (changed) lastChange = { keys: changed, at: t };
  written = now;
}

// Updating the current entry (each keystroke, each step of a run) waits until the changes
// pause: Chromium's replaceState takes several milliseconds, which a keystroke's charts need.
// A new entry (pushState) first writes any update still waiting, so Back lands on the view
// the student left.
const REPLACE_AFTER_MS = 250;
let pendingReplace = null;
let replaceTimer = null;

function replaceSoon(entry, url) {
  pendingReplace = { entry, url };
  clearTimeout(replaceTimer);
  replaceTimer = setTimeout(flushReplace, REPLACE_AFTER_MS);
}

function flushReplace() {
  clearTimeout(replaceTimer);
  if (!pendingReplace) return;
  const { entry, url } = pendingReplace;
  pendingReplace = null;
  history.replaceState(entry, '', url);
}
addEventListener('pagehide', flushReplace);

/** The next write makes a history entry of its own, however soon after the last change of
 * the same kind (a part switched off, then another: Back undoes one at a time). */
export function newChoice() {
  lastChange = { keys: '', at: -Infinity };
}

/** Calls `apply(previousState)` when Back or Forward lands on another view. */
export function onHistoryMove(apply) {
  addEventListener('popstate', async (event) => {
    // Back or Forward has already left the entry a waiting update was for.
    clearTimeout(replaceTimer);
    pendingReplace = null;
    const before = snapshot();
    if (event.state && typeof event.state === 'object') {
      for (const k of KEYS) if (event.state[k] !== undefined) state[k] = event.state[k];
    } else {
      const { values } = await parseLink(location.search, location.hash);
      if (!modelNamed(values.model)) delete values.model;
      Object.assign(state, values);
    }
    written = snapshot();
    lastChange = { keys: '', at: -Infinity };
    apply(before);
  });
}

/** In-page links (contents, skip link) scroll without touching the address bar. */
export function keepLinksOutOfHistory() {
  document.addEventListener('click', (event) => {
    const a = event.target.closest?.('a[href^="#"]');
    if (!a || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
    const target = document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)));
    if (!target) return;
    event.preventDefault();
    target.scrollIntoView({ block: 'start' });
    if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
    target.focus({ preventScroll: true });
  });
}
