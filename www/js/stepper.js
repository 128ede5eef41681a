// The stepper: one operation of the forward pass at a time, with its equation, shapes,
// numbers, and its place on a diagram of the block.
import { $, fillSelect, setIfChanged } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { renderTex } from './math.js';
import { draw, registerChart } from './charts.js';

registerChart('step', {
  spec: () => ({ kind: 'step', index: state.step, head: state.stepHead }),
  shape: [0.55, 340],
  // A 1-D step (the token ids) is one row of cells: kept short.
  height: (width, height) => {
    const { summary } = session;
    const rows = summary.steps[state.step].shape.length === 1 ? 1 : summary.tokens.length;
    return Math.min(height, Math.max(220, rows * 26 + 150));
  },
});

const DIAGRAM = [
  ['Tokenize'], ['TokenEmbedding', 'SegmentEmbedding'], ['PositionEncoding', 'AddPosition'], ['EmbeddingNorm'],
  ['EncoderOutput'],
  ['AttentionNorm@pre'], ['Query', 'Key', 'Value'], ['RotaryQuery', 'RotaryKey'], ['Scores'], ['Mask'], ['Softmax'],
  ['WeightedSum'], ['Concat'], ['OutputProjection'], ['AttentionResidual'], ['AttentionNorm@post'],
  // An encoder-decoder's decoder layer: cross-attention between its self-attention and its FFN.
  ['CrossNorm@pre'], ['CrossQuery', 'CrossKey', 'CrossValue'], ['CrossScores'], ['CrossSoftmax'], ['CrossWeightedSum'],
  ['CrossConcat'], ['CrossOutput'], ['CrossResidual'], ['CrossNorm@post'], ['FfnNorm@pre'],
  ['FfnUp', 'FfnGate'], ['FfnActivation'], ['FfnDown'], ['FfnResidual'], ['FfnNorm@post'], ['FinalNorm'], ['Unembed'],
  ['NextTokenProbabilities'],
];
const DIAGRAM_LABELS = {
  Tokenize: 'tokenize', TokenEmbedding: 'embed', PositionEncoding: 'add position', EmbeddingNorm: 'norm',
  'AttentionNorm@pre': 'norm', Query: 'Q, K, V', RotaryQuery: 'rotate Q, K', Scores: 'scores', Mask: 'mask',
  Softmax: 'softmax', WeightedSum: 'weighted sum', Concat: 'concat heads', OutputProjection: 'output proj.',
  AttentionResidual: 'residual add', 'AttentionNorm@post': 'norm', 'FfnNorm@pre': 'norm', FfnUp: 'FFN expand',
  FfnActivation: 'activation', FfnDown: 'FFN project', FfnResidual: 'residual add', 'FfnNorm@post': 'norm',
  FinalNorm: 'final norm', Unembed: 'unembed', NextTokenProbabilities: 'softmax → next token',
  EncoderOutput: 'encoder output', 'CrossNorm@pre': 'norm', CrossQuery: 'cross Q (K, V from the encoder)',
  CrossScores: 'cross scores', CrossSoftmax: 'cross softmax', CrossWeightedSum: 'cross weighted sum',
  CrossConcat: 'concat heads', CrossOutput: 'output proj.', CrossResidual: 'residual add', 'CrossNorm@post': 'norm',
};

// Steps only some architectures have: left out of the diagram of a model without them.
const ARCHITECTURE_ONLY = new Set(['RotaryQuery', 'FinalNorm', 'EncoderOutput', 'CrossNorm', 'CrossQuery', 'CrossScores',
  'CrossSoftmax', 'CrossWeightedSum', 'CrossConcat', 'CrossOutput', 'CrossResidual']);

// Short explanations of the diagram's less obvious words (the glossary has more).
const DIAGRAM_TITLES = {
  Unembed: 'unembedding: maps the final vector to one logit (raw score) per vocabulary word',
  NextTokenProbabilities: 'softmax of the logits: a probability for every word of the vocabulary',
  Concat: 'the heads\' outputs laid side by side into one vector',
  FfnActivation: 'the feed-forward network\'s non-linearity',
};

// Why a step of the diagram is greyed out: this model's pass has no such step.
const ABSENT_BECAUSE = {
  PositionEncoding: 'this model adds no position vector to its embeddings',
  EmbeddingNorm: 'this model does not normalise its embeddings before the first layer',
  Mask: 'this model lets every token see every other token: nothing is masked',
  Unembed: 'this model has no language-model head',
  NextTokenProbabilities: 'this model has no language-model head',
};

function diagramKey(step, postLn) {
  for (const group of DIAGRAM) {
    for (const key of group) {
      const [op, place] = key.split('@');
      if (op === step.op && (!place || (place === 'post') === postLn)) return group[0];
    }
  }
  return null;
}

let diagramShown = null;
function renderDiagram(current) {
  const { summary, config } = session;
  const postLn = config.norm_place === 'Post';
  const present = new Set(summary.steps.map((s) => diagramKey(s, postLn)));
  const shown = `${config.n_layers}|${current}|${[...present].join(',')}`;
  if (shown === diagramShown) return; // typing does not move the current operation
  diagramShown = shown;
  const items = [];
  let inLayer = false;
  for (const group of DIAGRAM) {
    const key = group[0];
    const [op, place] = key.split('@');
    if (place && (place === 'post') !== postLn) continue;
    const isLayerOp = !['Tokenize', 'TokenEmbedding', 'PositionEncoding', 'EmbeddingNorm', 'EncoderOutput', 'FinalNorm', 'Unembed', 'NextTokenProbabilities'].includes(op);
    if (isLayerOp && !inLayer) {
      const li = document.createElement('li');
      li.className = 'group';
      li.textContent = `× ${config.n_layers} layers:`;
      items.push(li);
      inLayer = true;
    } else if (!isLayerOp) {
      inLayer = false;
    }
    if (!present.has(key) && ARCHITECTURE_ONLY.has(op)) continue; // not part of this architecture
    const li = document.createElement('li');
    li.textContent = DIAGRAM_LABELS[key];
    if (DIAGRAM_TITLES[op]) li.title = DIAGRAM_TITLES[op];
    if (!present.has(key)) {
      li.classList.add('absent');
      const because = ABSENT_BECAUSE[op] ?? 'this model\'s pass has no such step';
      li.title = `${li.title ? `${li.title}; ` : ''}${because}`;
    }
    if (key === current) {
      li.classList.add('current');
      li.setAttribute('aria-current', 'step');
    }
    items.push(li);
  }
  $('diagram').replaceChildren(...items);
}

/** A tensor's shape in words: "4 heads × 22 tokens × 32 dims". */
function shapeText(shape, axes) {
  const counted = (n, axis) => (!axis ? `${n}` : `${n} ${n === 1 || axis.endsWith('s') ? axis : `${axis}s`}`);
  return `[${shape.map((n, i) => counted(n, axes[i])).join(' × ')}]`;
}

export function renderStep() {
  const { summary, stepsByName, config, drawn } = session;
  const step = summary.steps[state.step];
  // Each keystroke comes here: only what changed is written (a write makes the browser style
  // and lay out that part of the page again).
  setIfChanged($('step-slider'), 'value', String(state.step));
  setIfChanged($('step-count'), 'textContent', `step ${state.step + 1} of ${summary.steps.length}`);
  setIfChanged($('back'), 'disabled', state.step === 0);
  setIfChanged($('forward'), 'disabled', state.step === summary.steps.length - 1);
  setIfChanged($('step-title'), 'textContent', step.title);
  renderTex($('step-equation'), step.equation, true);
  setIfChanged($('step-explanation'), 'textContent', step.explanation);
  // Each tensor by its step's title (not its internal name) and its shape in words.
  const ins = step.inputs.map((n) => `${stepsByName[n].title} ${shapeText(stepsByName[n].shape, stepsByName[n].axes)}`);
  setIfChanged($('step-shapes'), 'textContent', `${ins.length ? `in: ${ins.join(' and ')}` : 'in: the text'}  →  out: ${step.title} ${shapeText(step.shape, step.axes)}`);
  const perHead = step.shape.length === 3;
  setIfChanged($('step-head-label'), 'hidden', !perHead);
  if (perHead) {
    state.stepHead = Math.min(state.stepHead, step.shape[0] - 1);
    fillSelect($('step-head'), [...Array(step.shape[0]).keys()], (h) => `${h}`, state.stepHead);
  }
  renderDiagram(diagramKey(step, config.norm_place === 'Post'));
  const note = drawn.step?.note;
  setIfChanged($('step-caption'), 'textContent', `${note ? `${note}. ` : ''}Hover for values.`);
}

export function goToStep(index) {
  const { summary } = session;
  if (!summary) return;
  state.step = Math.max(0, Math.min(summary.steps.length - 1, index));
  draw('step');
  renderStep();
  writeUrl();
}

const OWN_KEYS = 'a[href], button, input, select, textarea, summary, canvas[tabindex], [contenteditable]';

function stepperKeysApply(focused) {
  const section = $('stepper-section');
  const own = focused && focused !== document.body && focused.closest(OWN_KEYS);
  if (own && !(section.contains(own) && own.tagName === 'BUTTON')) return false; // the stepper's own buttons step too
  const r = section.getBoundingClientRect();
  return r.bottom > 0 && r.top < innerHeight; // the stepper is in view
}

export function wireStepper() {
  $('back').addEventListener('click', () => goToStep(state.step - 1));
  $('forward').addEventListener('click', () => goToStep(state.step + 1));
  $('step-slider').addEventListener('input', () => goToStep(Number($('step-slider').value)));
  $('step-head').addEventListener('change', () => { state.stepHead = Number($('step-head').value); draw('step'); renderStep(); writeUrl(); });
  // The left and right arrow keys step only while the stepper is on screen and no other
  // control has the focus (a focused control keeps its own keys: the grid moves heads, a
  // select changes its value, a button ignores them).
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    if (!stepperKeysApply(document.activeElement)) return;
    goToStep(state.step + (event.key === 'ArrowRight' ? 1 : -1));
    event.preventDefault();
  });
}
