// Which charts the loaded model has. A chart that does not apply to a model (SmolLM2 has no
// learned position table) is replaced by a sentence saying why, keyed on the model's config,
// never on its name, so a new model gets the right views without new code here.
import { session } from './session.js';
import { setIfChanged } from './dom.js';
import { modelTitle, modelNamed } from './models.js';
import { thousands } from './labels.js';

// Charts of the model's own learned position table.
const LEARNED_POSITION_CHARTS = new Set(['pos-table', 'pos-waves', 'pos-sim']);

/** Whether a model has an encoder stack beside its decoder (its text is a source to rewrite). */
export function isEncoderDecoder(config = session.config) {
  return (config?.encoder_layers ?? 0) > 0;
}

/** The config's position scheme as one word: Learned, Sinusoidal, Rotary or None. */
export function positionKind(config) {
  const p = config.position;
  return typeof p === 'string' ? p : Object.keys(p ?? {})[0];
}

function positionWords(config) {
  switch (positionKind(config)) {
    case 'Rotary': return 'it rotates each query and key by an angle that grows with the token\'s position (rotary positions), so no position vector is added to the embeddings';
    case 'Sinusoidal': return 'it adds the fixed sinusoidal table of the original paper, drawn beside this chart: those are its real position vectors';
    case 'Learned': return 'it adds a learned position vector to each token\'s embedding (the charts above)';
    default: return 'it gets no position information at all';
  }
}

/** Why chart `name` does not apply to the loaded model, in plain words; null when it does. */
export function whyNotShown(name) {
  const { config } = session;
  const title = modelTitle(session.modelName, { start: true });
  if (LEARNED_POSITION_CHARTS.has(name) && positionKind(config) !== 'Learned') {
    return `${title} has no learned position table: ${positionWords(config)}.`;
  }
  if (name.startsWith('rotary-') && positionKind(config) !== 'Rotary') {
    return `${title} does not rotate its queries and keys: ${positionWords(config)}.`;
  }
  if ((name === 'cross' || name === 'cross-grid') && !isEncoderDecoder(config)) {
    return `${title} has no encoder stack, so nothing to cross-attend to: only an encoder-decoder's decoder reads another stack's output.`;
  }
  if (name === 'votes' && config.lm_head === 'None') {
    return `${title} has no language-model head: no logit for its parts to vote on.`;
  }
  if (name === 'prediction' && config.lm_head === 'None') {
    return `${title} has no language-model head, so there is no prediction to draw.`;
  }
  if (name === 'lens' && config.lm_head === 'None') {
    return `${title} is an encoder with no language-model head: there is no final norm and unembedding to read its stream with, so it has no logit lens.`;
  }
  return null;
}

// Each canvas's note, once one was needed (kept: this runs for every chart drawn).
const notes = new WeakMap();

/** Shows `why` in place of the chart on `canvas` (its caption and export buttons too), or the
 * chart again. `loading`: the chart will come once its model's files arrive (presenter mode
 * keeps such a note on its slide; a chart the model does not have is left off the slides). */
export function showWhyNotShown(canvas, why, { loading = false } = {}) {
  let note = notes.get(canvas);
  // Never replaced: nothing to show again (a canvas the page starts hidden, waiting for
  // something to draw, is shown).
  if (!note && !why && !canvas.hidden) return;
  const figure = canvas.closest('figure') ?? canvas.parentElement;
  if (!note) {
    note = document.createElement('p');
    note.className = 'not-shown';
    note.dataset.for = canvas.dataset.chart;
    canvas.before(note);
    notes.set(canvas, note);
  }
  const hidden = Boolean(why);
  setIfChanged(note, 'hidden', !hidden);
  note.classList.toggle('loading', hidden && loading); // a forced toggle changes nothing when it holds already
  if (why) setIfChanged(note, 'textContent', why);
  setIfChanged(canvas, 'hidden', hidden);
  for (const el of figure.querySelectorAll(':scope > figcaption, :scope > .export')) setIfChanged(el, 'hidden', hidden);
}

// The conditions a `data-when` element may name (all must hold for it to show).
const CONDITIONS = {
  encoder: (c) => !c.causal,
  decoder: (c) => c.causal && !isEncoderDecoder(c),
  'encoder-decoder': (c) => isEncoderDecoder(c),
  'not-encoder-decoder': (c) => !isEncoderDecoder(c),
  'post-norm': (c) => c.norm_place === 'Post',
  'pre-norm': (c) => c.norm_place === 'Pre',
  'layer-norm': (c) => c.norm === 'Layer',
  'rms-norm': (c) => c.norm === 'Rms',
  'learned-position': (c) => positionKind(c) === 'Learned',
  'sinusoidal-position': (c) => positionKind(c) === 'Sinusoidal',
  rotary: (c) => positionKind(c) === 'Rotary',
  'no-position': (c) => positionKind(c) === 'None',
  'word-piece': (c) => c.tokenizer === 'word-piece',
  'byte-bpe': (c) => c.tokenizer === 'byte-bpe',
  gqa: (c) => c.n_kv_heads < c.n_heads,
  'no-gqa': (c) => c.n_kv_heads >= c.n_heads,
  'lm-head': (c) => c.lm_head !== 'None',
  'tied-head': (c) => c.lm_head === 'Tied',
  'separate-head': (c) => c.lm_head !== 'None' && c.lm_head !== 'Tied',
  'no-lm-head': (c) => c.lm_head === 'None',
  twin: () => Boolean(modelNamed(session.modelName)?.twin), // trained again with the norm moved
};

// The feed-forward network's non-linearity as the prose names it.
const ACTIVATION_WORDS = { Gelu: 'GELU', Relu: 'ReLU', SwiGlu: 'SwiGLU (a SiLU-gated pair of projections)', Silu: 'SiLU' };

/**
 * The page's prose for the loaded model: `data-config` spans get the model's numbers
 * (n_heads, n_layers, d_model, all_heads) or its name (model); `data-when="pre-norm rms-norm"`
 * elements show only for a model with all those traits, so a section can hold one paragraph
 * for each kind of model.
 */
export function renderModelText() {
  const { config } = session;
  const values = {
    n_heads: config.n_heads,
    n_layers: config.n_layers,
    d_model: config.d_model,
    all_heads: config.n_layers * config.n_heads,
    d_ff: config.d_ff,
    n_kv_heads: config.n_kv_heads,
    activation: ACTIVATION_WORDS[config.activation] ?? String(config.activation),
    vocab_size: thousands(config.vocab_size),
    context: config.context,
    model: modelTitle(session.modelName),
    Model: modelTitle(session.modelName, { start: true }),
    norm_place: config.norm_place === 'Pre' ? 'pre-LN' : 'post-LN',
    twin_norm_place: config.norm_place === 'Pre' ? 'post-LN' : 'pre-LN',
  };
  for (const el of document.querySelectorAll('[data-config]')) {
    const value = String(values[el.dataset.config] ?? el.textContent);
    if (el.textContent !== value) el.textContent = value;
  }
  for (const el of document.querySelectorAll('[data-when]')) {
    el.hidden = !el.dataset.when.split(/\s+/).every((c) => CONDITIONS[c]?.(config) ?? false);
  }
}
