// The encoder-decoder section (shown only for a model with an encoder stack): the text box is
// the source; the decoder's output, written greedily one token a pass with each step's choice
// and its probability; and the cross-attention of the chosen decoder layer and head (target
// tokens down, source tokens across). Its layer and head are the attention section's.
import { $, fillSelect } from './dom.js';
import { state } from './state.js';
import { session } from './session.js';
import { selectHead, attachGrid, gridHeight } from './attention.js';
import { isEncoderDecoder } from './applicable.js';
import { registerChart } from './charts.js';
import { modelNamed } from './models.js';

registerChart('cross', { spec: crossSpec, shape: [0.9, 340] });
registerChart('cross-grid', {
  spec: () => ({ kind: 'grid', layer: state.layer, head: state.head, of: 'cross' }),
  shape: [0.62, 240],
  height: (width) => gridHeight(width),
});

export function crossSpec() {
  return { kind: 'cross_attention', layer: state.layer, head: state.head };
}

function shown(text) {
  return text === ' ' ? '␣' : text;
}

function stepItem(step, index, steps) {
  const li = document.createElement('li');
  const end = step.token.special;
  const choice = document.createElement('strong');
  choice.textContent = end ? 'end' : `"${shown(step.token.text)}"`;
  const written = steps.slice(0, index).filter((s) => !s.token.special).map((s) => s.token.text).join('');
  const before = document.createElement('span');
  before.className = 'hint';
  before.textContent = index === 0 ? 'after the start token: ' : `after "${written}": `;
  const p = document.createElement('span');
  p.textContent = ` ${(100 * step.probability).toFixed(1)}%`;
  li.append(before, choice, p);
  if (step.runner_up) {
    const [token, q] = step.runner_up;
    const runner = document.createElement('span');
    runner.className = 'hint';
    runner.textContent = ` (next best ${token.special ? 'end' : `"${shown(token.text)}"`} ${(100 * q).toFixed(1)}%)`;
    li.append(runner);
  }
  return li;
}

/** The output and the decoding steps of the current pass. */
export function renderTranslation() {
  const t = session.summary?.translation;
  if (!t) return;
  $('translation-output').textContent = t.output === '' ? '(nothing: the first choice was the end token)' : t.output;
  $('translation-source').textContent = state.text;
  $('translation-status').textContent = t.finished
    ? `${t.steps.length} decoding steps: one pass of the decoder each, the last one choosing the end token.`
    : `The output filled the context (${session.config.context} tokens) before the decoder chose the end token.`;
  $('decode-steps').replaceChildren(...t.steps.map(stepItem));
  renderBeyondTraining();
  fillSelect($('cross-layer'), [...Array(session.config.n_layers).keys()], (l) => `${l}`, state.layer);
  fillSelect($('cross-head'), [...Array(session.config.n_heads).keys()], (h) => `${h}`, state.head);
}

/** A source longer than any the model was trained on: say so beside its output. */
function renderBeyondTraining() {
  const lengths = modelNamed(session.modelName)?.trainedLengths;
  const n = [...state.text].length;
  const beyond = lengths && n > lengths[1];
  $('translation-beyond').hidden = !beyond;
  if (beyond) {
    $('translation-beyond').textContent = `Your source has ${n} characters, and this model was trained only on sources of ${lengths[0]} to ${lengths[1]}: it has never seen one this long, so expect its output to go wrong past what it learned.`;
  }
}

export function wireTranslation() {
  attachGrid('cross-grid');
  $('cross-layer').addEventListener('change', () => selectHead(Number($('cross-layer').value), state.head));
  $('cross-head').addEventListener('change', () => selectHead(state.layer, Number($('cross-head').value)));
  // The attention section's choice moves this chart too.
  document.addEventListener('tviz:head', () => {
    if (!isEncoderDecoder()) return;
    $('cross-layer').value = state.layer;
    $('cross-head').value = state.head;
  });
}
