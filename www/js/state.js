// What the student chose (sentence, layer, head, step, ...), mirrored in the URL so that a
// shared link reopens the same view.
import { $ } from './dom.js';
import { showError } from './messages.js';

export const MODEL = 'minilm-l6';
// Sines and cosines of ever longer periods in the sinusoidal table (6, 6, 16, 43 and 112 positions).
export const DEFAULT_DIMS = [0, 1, 40, 80, 120];

export const state = {
  text: $('text').value,
  layer: 0,
  head: 0,
  mode: 'heatmap',
  step: 0,
  stepHead: 0,
  norm: 1,
  dims: [...DEFAULT_DIMS],
  residualTokens: null, // tokens the residual chart follows; null: a few chosen by the chart
  threads: 2, // 1: no helper thread (`?threads=1`)
};

export function readUrl() {
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
  if (q.has('dims')) state.dims = parseDims(q.get('dims')) ?? state.dims; // checked against the model by position.js
  if (q.has('follow')) state.residualTokens = parseDims(q.get('follow'));
  if (q.get('threads') === '1') state.threads = 1;
}

export function writeUrl() {
  const q = new URLSearchParams({
    model: MODEL, text: state.text, layer: state.layer, head: state.head, mode: state.mode,
    step: state.step, stephead: state.stepHead, norm: state.norm, dims: state.dims.join(','),
  });
  if (state.residualTokens) q.set('follow', state.residualTokens.join(','));
  if (state.threads === 1) q.set('threads', '1');
  history.replaceState(null, '', `${location.pathname}?${q}${location.hash}`);
}

/** Whole numbers separated by commas or spaces (all of them), or null. */
export function parseDims(text) {
  const dims = text.split(/[\s,]+/).filter(Boolean).map(Number);
  if (!dims.length || dims.some((d) => !Number.isInteger(d) || d < 0)) return null;
  return dims;
}
