// The models the page can show: what each is, which files it needs and how big they are (so
// the page can say a download's size before starting it). Pure data and functions (no DOM),
// so that Node's tests read the same registry and check each size against the file itself
// (tests/e2e/models.test.mjs).
//
// The engine builds a model as `new Viz(name, configJson, tokenizerJson, weightsBytes)`. A file
// a model does not have is passed as "" (SmolLM2's GGUF holds its config and vocabulary).

/** @typedef {{ path: string, bytes: number }} ModelFile */

export const MODELS = {
  'lecture-post-ln': {
    name: 'lecture-post-ln',
    short: 'Lecture decoder (post-LN)',
    title: 'the lecture decoder (post-LN)',
    kind: 'decoder',
    description: 'The notes\' own transformer, trained by this project on public-domain English: 3 layers, 4 heads, d_model 128, sinusoidal positions, LayerNorm after each sublayer, ReLU feed-forward, tied embeddings, a 512-token vocabulary (0.66M parameters).',
    files: {
      config: { path: 'models/lecture-post-ln/config.json', bytes: 455 },
      tokenizer: { path: 'models/lecture-post-ln/tokenizer.json', bytes: 4774 },
      weights: { path: 'models/lecture-post-ln/model.safetensors', bytes: 2645968 },
    },
    twin: 'lecture-pre-ln',
    committed: true, // in the repository's trained/, not fetched by the set-up
  },
  'lecture-pre-ln': {
    name: 'lecture-pre-ln',
    short: 'Lecture decoder (pre-LN)',
    title: 'the lecture decoder (pre-LN)',
    kind: 'decoder',
    description: 'The post-LN lecture decoder\'s twin, trained on the same data with the same seed, with LayerNorm before each sublayer and one final norm (as GPT-2).',
    files: {
      config: { path: 'models/lecture-pre-ln/config.json', bytes: 453 },
      tokenizer: { path: 'models/lecture-pre-ln/tokenizer.json', bytes: 4774 },
      weights: { path: 'models/lecture-pre-ln/model.safetensors', bytes: 2647144 },
    },
    twin: 'lecture-post-ln',
    committed: true,
  },
  'lecture-reverse': {
    name: 'lecture-reverse',
    short: 'Lecture encoder-decoder (reverses)',
    title: 'the lecture encoder-decoder',
    kind: 'encoder-decoder',
    description: 'The notes\' encoder-decoder, trained by this project to write its source backwards: 2 encoder and 2 decoder layers, 4 heads, d_model 64, sinusoidal positions, pre-LN, ReLU, cross-attention in every decoder layer (0.24M parameters). Lowercase letters and spaces, up to 20 characters.',
    files: {
      config: { path: 'models/lecture-reverse/config.json', bytes: 445 },
      tokenizer: { path: 'models/lecture-reverse/tokenizer.json', bytes: 182 },
      weights: { path: 'models/lecture-reverse/model.safetensors', bytes: 950496 },
    },
    committed: true,
    // What the text box holds when this model is chosen from the picker (a sentence of
    // another kind would be refused: it knows only lowercase letters and spaces).
    example: 'attention heads',
    accepts: /^[a-z ]*$/, // the characters its vocabulary spells
  },
  'minilm-l6': {
    name: 'minilm-l6',
    short: 'MiniLM-L6',
    title: 'all-MiniLM-L6-v2', // the checkpoint's own name: export captions, messages
    kind: 'encoder',
    description: 'A 6-layer encoder (22.7M parameters) that reads the whole sentence at once and outputs one vector per token; it predicts no words.',
    files: {
      config: { path: 'models/minilm-l6/config.json', bytes: 612 },
      tokenizer: { path: 'models/minilm-l6/tokenizer.json', bytes: 466247 },
      weights: { path: 'models/minilm-l6/model.f16.safetensors', bytes: 45441912 },
    },
  },
  'smollm2-135m': {
    name: 'smollm2-135m',
    short: 'SmolLM2-135M',
    title: 'SmolLM2-135M-Instruct',
    kind: 'decoder',
    description: 'A 30-layer decoder (135M parameters, stored in 4-bit blocks) trained to predict the next token from the ones before it.',
    files: {
      weights: { path: 'models/smollm2-135m/model.Q4_1.gguf', bytes: 98362432 },
    },
  },
};

export const DEFAULT_MODEL = 'lecture-post-ln';

/** The model called `name`, or undefined. */
export function modelNamed(name) {
  return Object.hasOwn(MODELS, name) ? MODELS[name] : undefined;
}

/** Every file of `model` as `[role, file]` pairs (roles: config, tokenizer, weights). */
export function filesOf(model) {
  return Object.entries(model.files);
}

/** How many bytes the page downloads for `model`. */
export function downloadBytes(model) {
  return filesOf(model).reduce((sum, [, f]) => sum + f.bytes, 0);
}

/** Bytes as megabytes for a label ("98 MB") or, with `digits`, for progress ("12.3"). */
export function megabytes(bytes, digits = 0) {
  return (bytes / 1e6).toFixed(digits);
}

/** The picker's label: "SmolLM2-135M · decoder · 98 MB". */
export function labelOf(model) {
  return `${model.short} · ${model.kind} · ${megabytes(downloadBytes(model))} MB`;
}
