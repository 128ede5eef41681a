// The link format: what a URL holds and how it is read back. Pure functions (no page, no
// DOM), so that Node runs the same code in tests/e2e/url-state.test.mjs.
//
//   ?model=minilm-l6&layer=3&head=1&mode=heatmap&step=12&stephead=0&norm=1&dims=0,1,4&threads=4
//   #t=<the text, UTF-8, deflate-raw compressed, base64url>
//
// The text lives in the fragment, which browsers never send to a server, so a long text
// cannot make a link fail with "431 Request Header Fields Too Large"; compressed, a 512-token
// text takes a few thousand characters. Older links with `?text=` still open.

import { threadsInLink, MAX_THREADS } from './threads.js';
import { thousands } from './labels.js';

/** Longest fragment a link carries; past it the link keeps a shorter prefix of the text. */
export const MAX_TEXT_FRAGMENT = 8000;
/** Longest text the page takes, in characters (code points), from the text box or a link:
 * about 8,000 tokens at four characters a token, the longest context of the page's models
 * (SmolLM2 reads 8,192; the page traces at most 512). A longer text would only make the browser
 * lay out, and the tokenizer read, what no model sees. */
export const MAX_TEXT_CHARS = 32768;

/** `text` cut to `MAX_TEXT_CHARS` code points: `{ text, cut }` (`cut`: how many were left out). */
export function capText(text) {
  if (text.length <= MAX_TEXT_CHARS) return { text, cut: 0 }; // fewer UTF-16 units than the cap: fewer code points too
  const points = [...text];
  if (points.length <= MAX_TEXT_CHARS) return { text, cut: 0 };
  return { text: points.slice(0, MAX_TEXT_CHARS).join(''), cut: points.length - MAX_TEXT_CHARS };
}

/** Longest text a link is allowed to expand to (a hostile link could hold a zip bomb). */
export const MAX_DECODED_TEXT_BYTES = 1 << 20;
/** Most features the waves chart plots at once. */
export const MAX_DIMS = 8;

const MODES = new Set(['heatmap', 'lines']);
/** A shipped lesson's name: its file in www/lessons/ without ".md". */
export const LESSON_NAME = /^[a-z0-9][a-z0-9-]{0,59}$/;
const STACKS = new Set(['encoder', 'decoder']);
const BACKENDS = new Set(['auto', 'cpu', 'gpu']);

function toBase64Url(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error('not base64url');
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function pipeBytes(bytes, transform, maxBytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(transform);
  const reader = stream.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      throw new Error(`longer than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

/** The text as a fragment value: UTF-8, deflate-raw, base64url. */
export async function encodeText(text) {
  const bytes = new TextEncoder().encode(text);
  return toBase64Url(await pipeBytes(bytes, new CompressionStream('deflate-raw'), Infinity));
}

/** Reverses `encodeText`; throws on anything that is not such a value. */
export async function decodeText(value) {
  const bytes = await pipeBytes(fromBase64Url(value), new DecompressionStream('deflate-raw'), MAX_DECODED_TEXT_BYTES);
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}

/**
 * The fragment for `text`, cut to a prefix when the whole text would make the link longer
 * than `maxChars`. Returns `{ fragment, keptChars, totalChars }` (counts in code points).
 */
export async function textFragment(text, maxChars = MAX_TEXT_FRAGMENT) {
  const chars = [...text];
  const whole = await encodeText(text);
  if (whole.length <= maxChars) return { fragment: whole, keptChars: chars.length, totalChars: chars.length };
  // Binary search for the longest prefix whose compressed form fits.
  let lo = 0;
  let hi = chars.length;
  let best = '';
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const encoded = await encodeText(chars.slice(0, mid).join(''));
    if (encoded.length <= maxChars) { lo = mid; best = encoded; } else { hi = mid - 1; }
  }
  return { fragment: best, keptChars: lo, totalChars: chars.length };
}

/** A whole number from a URL value: digits only, at most 15 of them (else null). */
function wholeNumber(value) {
  return value !== null && /^\d{1,15}$/.test(value) ? Number(value) : null;
}

/**
 * Reads a link's query and fragment. Returns `{ values, notes }`: `values` holds only what
 * the link states in a valid form (numbers not yet checked against the model), `notes` says
 * in plain words what was ignored.
 */
export async function parseLink(search, hash) {
  const q = new URLSearchParams(search);
  const values = {};
  const notes = [];
  const fragment = new URLSearchParams(hash.startsWith('#') ? hash.slice(1) : hash);
  if (fragment.has('t')) {
    try {
      values.text = await decodeText(fragment.get('t'));
    } catch {
      notes.push('The link\'s text could not be read (it is damaged or too long), so the default sentence is shown.');
    }
  } else if (q.has('text')) {
    values.text = q.get('text'); // links made before the text moved to the fragment
  }
  if (values.text !== undefined) {
    const { text, cut } = capText(values.text);
    if (cut) notes.push(`The link's text was cut to its first ${thousands(MAX_TEXT_CHARS)} characters (${thousands(cut)} more were left out): far more than any model here reads.`);
    values.text = text;
  }
  if (q.has('model')) values.model = q.get('model');
  for (const [key, param] of [['layer', 'layer'], ['head', 'head'], ['step', 'step'], ['stepHead', 'stephead'], ['norm', 'norm'], ['rotaryPair', 'pair'], ['query', 'query']]) {
    if (!q.has(param)) continue;
    const n = wholeNumber(q.get(param));
    if (n === null) notes.push(`The link's ${param}=${shorten(q.get(param))} is not a whole number, so it was ignored.`);
    else values[key] = n;
  }
  if (q.has('stack')) {
    if (STACKS.has(q.get('stack'))) values.stack = q.get('stack');
    else notes.push(`The link's stack=${shorten(q.get('stack'))} is neither encoder nor decoder, so it was ignored.`);
  }
  if (q.has('mode')) {
    if (MODES.has(q.get('mode'))) values.mode = q.get('mode');
    else notes.push(`The link's mode=${shorten(q.get('mode'))} is not one of heatmap or lines, so it was ignored.`);
  }
  if (q.has('dims')) {
    const dims = parseDims(q.get('dims'));
    if (!dims) notes.push(`The link's dims=${shorten(q.get('dims'))} is not a list of whole numbers, so it was ignored.`);
    else if (dims.length > MAX_DIMS) notes.push(`The link asks for ${dims.length} features; the first ${MAX_DIMS} are plotted.`);
    if (dims) values.dims = dims.slice(0, MAX_DIMS);
  }
  if (q.has('follow')) {
    const tokens = parseDims(q.get('follow'));
    if (tokens) values.residualTokens = tokens.slice(0, MAX_DIMS); // checked against the sentence by residual.js
    else notes.push(`The link's follow=${shorten(q.get('follow'))} is not a list of token positions, so it was ignored.`);
  }
  // Decoding settings, each within its control's range (a hostile value is refused with a note).
  for (const [key, param, lo, hi, whole] of SAMPLING) {
    if (!q.has(param)) continue;
    const text = q.get(param);
    const n = /^\d{1,12}(\.\d{1,6})?$/.test(text) ? Number(text) : NaN;
    if (Number.isFinite(n) && n >= lo && n <= hi && (!whole || Number.isInteger(n))) values[key] = n;
    else notes.push(`The link's ${param}=${shorten(text)} is not ${whole ? 'a whole number' : 'a number'} from ${lo} to ${hi}, so it was ignored.`);
  }
  if (q.has('off')) {
    const off = parseOff(q.get('off'));
    if (off) values.off = off;
    else notes.push(`The link's off=${shorten(q.get('off'))} does not name parts of a model (h1.2 is layer 1 head 2, f0 layer 0's feed-forward, pos and mask; m after one means its mean), so nothing is switched off.`);
  }
  if (q.has('train')) {
    const train = parseTrain(q.get('train'));
    if (train) values.train = train; // checked against the trainer's limits when Train is pressed
    else notes.push(`The link's train=${shorten(q.get('train'))} is not a training run's settings (such as l1_h4_d64_c64_b16_n600_r0.003_s1_pre_pos_stories), so the Training section keeps its preset.`);
  }
  if (q.has('lesson')) {
    const name = q.get('lesson');
    if (LESSON_NAME.test(name)) values.lesson = name;
    else notes.push(`The link's lesson=${shorten(name)} is not a lesson's name (small letters, digits and hyphens), so no lesson is opened.`);
  }
  if (q.has('lstep')) {
    const n = wholeNumber(q.get('lstep'));
    if (n === null || n < 1) notes.push(`The link's lstep=${shorten(q.get('lstep'))} is not a step number (from 1), so the lesson opens at its first step.`);
    else values.lessonStep = n - 1; // checked against the lesson by lessons.js
  }
  const threads = threadsInLink(search);
  if (Number.isInteger(threads)) values.threads = threads;
  else if (Number.isNaN(threads)) notes.push(`The link's threads=${shorten(q.get('threads'))} is not a whole number from 1 to ${MAX_THREADS}, so the page chooses how many threads compute.`);
  if (q.has('backend')) {
    const backend = q.get('backend');
    if (BACKENDS.has(backend)) values.backend = backend;
    else notes.push(`The link's backend=${shorten(backend)} is not auto, cpu or gpu, so the page chooses (auto).`);
  }
  return { values, notes };
}

/**
 * The numbers of `values` brought inside the model's ranges: `limits` gives, for each key,
 * how many choices there are (`layer: n_layers`, ...). Out-of-range values are clamped to
 * the last choice and noted; out-of-range features are dropped and noted.
 */
export function clampToLimits(values, limits) {
  const out = { ...values };
  const notes = [];
  for (const [key, count] of Object.entries(limits)) {
    if (key === 'dims' || out[key] === undefined || count === undefined) continue;
    if (out[key] >= count) {
      notes.push(`The link asked for ${WORDS[key] ?? key} ${shorten(String(out[key]))}, but there are only ${count} (0–${count - 1}); ${count - 1} is shown.`);
      out[key] = count - 1;
    }
  }
  if (out.dims && limits.dims !== undefined) {
    const kept = out.dims.filter((d) => d < limits.dims);
    if (kept.length < out.dims.length) {
      notes.push(`The link's features ${out.dims.filter((d) => d >= limits.dims).map((d) => shorten(String(d))).join(', ')} are beyond the model's ${limits.dims} features (0–${limits.dims - 1}), so they were dropped.`);
    }
    if (kept.length) out.dims = kept;
    else delete out.dims;
  }
  return { values: out, notes };
}

// Decoding settings in a link: [state key, parameter, lowest, highest, whole numbers only].
export const SAMPLING = [
  ['temperature', 'temp', 0, 2, false],
  ['topK', 'topk', 0, 1000, true],
  ['topP', 'topp', 0.05, 1, false],
  ['seed', 'seed', 0, 999999999, true],
];

// How a clamped choice is named in a note.
const WORDS = { stepHead: 'step head', rotaryPair: 'rotary pair', query: 'query token' };

/** A list typed as "0, 1, 4": distinct whole numbers, at most 64 given (else null). */
export function parseDims(text) {
  const parts = String(text).split(/[\s,]+/).filter(Boolean);
  if (!parts.length || parts.length > 64 || parts.some((p) => !/^\d{1,15}$/.test(p))) return null;
  return [...new Set(parts.map(Number))];
}

/** The query string for the chosen view (the text goes in the fragment, see `textFragment`). */
export function queryFor(state, model) {
  const q = new URLSearchParams({
    model, layer: state.layer, head: state.head, mode: state.mode, step: state.step,
    stephead: state.stepHead, norm: state.norm, dims: state.dims.join(','),
  });
  if (state.residualTokens?.length) q.set('follow', state.residualTokens.join(','));
  if (state.rotaryPair) q.set('pair', String(state.rotaryPair));
  if (state.stack === 'encoder') q.set('stack', 'encoder');
  if (state.query !== null && state.query !== undefined) q.set('query', String(state.query));
  // Decoding settings only when changed from the model's own distribution.
  if (state.temperature !== undefined && state.temperature !== 1) q.set('temp', String(state.temperature));
  if (state.topK) q.set('topk', String(state.topK));
  if (state.topP !== undefined && state.topP !== 1) q.set('topp', String(state.topP));
  if (state.seed) q.set('seed', String(state.seed));
  if (state.off?.length) q.set('off', offCode(state.off));
  if (state.train) q.set('train', trainCode(state.train));
  if (state.lesson) {
    q.set('lesson', state.lesson);
    q.set('lstep', String((state.lessonStep ?? 0) + 1));
  }
  if (state.threads) q.set('threads', String(state.threads));
  if (state.backend && state.backend !== 'auto') q.set('backend', state.backend);
  return `?${q}`;
}

/** A value from a link, short enough to quote in a message. */
export function shorten(value, max = 40) {
  const chars = [...String(value)];
  return chars.length > max ? `${chars.slice(0, max).join('')}…` : chars.join('');
}

/** Parts switched off in a link: "h1.2" (layer 1 head 2), "x0.1" (a cross-attention head),
 * "f0" (layer 0's feed-forward), "pos", "mask"; an "m" after a head or a layer means its mean
 * over the text instead of zeros. Comma-separated; at most 64. */
export function offCode(off) {
  return off.map((s) => {
    const mean = s.fill === 'mean' ? 'm' : '';
    switch (s.part) {
      case 'head': return `h${s.layer}.${s.head}${mean}`;
      case 'cross_head': return `x${s.layer}.${s.head}${mean}`;
      case 'ffn': return `f${s.layer}${mean}`;
      case 'position': return 'pos';
      default: return 'mask';
    }
  }).join(',');
}

/** The parts a link's `off=` names (see `offCode`), or null when it is not such a list. */
export function parseOff(text) {
  const parts = String(text).split(',').filter(Boolean);
  if (!parts.length || parts.length > 64) return null;
  const off = [];
  for (const p of parts) {
    let m;
    if (p === 'pos') off.push({ part: 'position', fill: 'zero' });
    else if (p === 'mask') off.push({ part: 'mask', fill: 'zero' });
    else if ((m = /^([hx])(\d{1,4})\.(\d{1,4})(m?)$/.exec(p))) {
      off.push({ part: m[1] === 'h' ? 'head' : 'cross_head', layer: Number(m[2]), head: Number(m[3]), fill: m[4] ? 'mean' : 'zero' });
    } else if ((m = /^f(\d{1,4})(m?)$/.exec(p))) off.push({ part: 'ffn', layer: Number(m[1]), fill: m[2] ? 'mean' : 'zero' });
    else return null;
  }
  const codes = off.map((s) => offCode([s]).replace(/m$/, ''));
  return off.filter((_, i) => codes.indexOf(codes[i]) === i); // each part once
}

const TRAIN_TASKS = new Set(['stories', 'repeat', 'mixed', 'reverse', 'text']);

/** A training run's settings in a link (training.js): "l1_h4_d64_c64_b16_n600_r0.003_s1_pre_pos_stories"
 * (layers, heads, d_model, context, batch, steps, learning rate, seed; pre or post; pos or nopos; the task). */
export function trainCode(t) {
  return [`l${t.layers}`, `h${t.heads}`, `d${t.d_model}`, `c${t.context}`, `b${t.batch}`, `n${t.steps}`, `r${t.learning_rate}`, `s${t.seed}`,
    t.pre_ln ? 'pre' : 'post', t.positions ? 'pos' : 'nopos', t.task].join('_');
}

/** The settings a link's `train=` names (see `trainCode`), or null when it is not such a value.
 * Only the form is checked here; the trainer checks the ranges when Train is pressed. */
export function parseTrain(text) {
  const m = /^l(\d{1,6})_h(\d{1,6})_d(\d{1,6})_c(\d{1,9})_b(\d{1,6})_n(\d{1,9})_r(\d{1,3}(?:\.\d{1,12})?(?:e-?\d{1,2})?)_s(\d{1,15})_(pre|post)_(pos|nopos)_([a-z]{1,12})$/.exec(String(text));
  if (!m || !TRAIN_TASKS.has(m[11])) return null;
  const n = (i) => Number(m[i]);
  return {
    layers: n(1), heads: n(2), d_model: n(3), context: n(4), batch: n(5), steps: n(6), learning_rate: n(7), seed: n(8),
    pre_ln: m[9] === 'pre', positions: m[10] === 'pos', task: m[11],
  };
}
