// What the student chose (sentence, layer, head, step, ...), mirrored in the URL so that a
// shared link reopens the same view.
import { $ } from './dom.js';
import { showError } from './messages.js';

export const MODEL = 'minilm-l6';

export const state = {
  text: $('text').value,
  layer: 0,
  head: 0,
  mode: 'heatmap',
  step: 0,
  stepHead: 0,
  norm: 1,
  dims: [0, 1, 4, 5, 32, 33],
  threads: 2, // 1: no helper thread (`?threads=1`)
  layerHeadFromUrl: false, // else the head finder picks an informative head to open on
};

export function readUrl() {
  const q = new URLSearchParams(location.search);
  const int = (k, d) => (q.has(k) && /^\d+$/.test(q.get(k)) ? Number(q.get(k)) : d);
  if (q.has('text')) state.text = q.get('text');
  if (q.has('model') && q.get('model') !== MODEL) {
    showError(`This page only ships the model "${MODEL}"; the link asked for "${q.get('model')}", so ${MODEL} is shown.`);
  }
  state.layerHeadFromUrl = q.has('layer') || q.has('head');
  state.layer = int('layer', state.layer);
  state.head = int('head', state.head);
  state.step = int('step', state.step);
  state.stepHead = int('stephead', state.stepHead);
  state.norm = int('norm', state.norm);
  if (q.get('mode') === 'lines') state.mode = 'lines';
  if (q.has('dims')) state.dims = parseDims(q.get('dims')) ?? state.dims;
  if (q.get('threads') === '1') state.threads = 1;
}

export function writeUrl() {
  const q = new URLSearchParams({
    model: MODEL, text: state.text, layer: state.layer, head: state.head, mode: state.mode,
    step: state.step, stephead: state.stepHead, norm: state.norm, dims: state.dims.join(','),
  });
  if (state.threads === 1) q.set('threads', '1');
  history.replaceState(null, '', `${location.pathname}?${q}${location.hash}`);
}

export function parseDims(text) {
  const dims = text.split(/[\s,]+/).filter(Boolean).map(Number);
  if (!dims.length || dims.some((d) => !Number.isInteger(d) || d < 0)) return null;
  return dims.slice(0, 8);
}
