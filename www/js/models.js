// The models the page can show: what each is, which files it needs and how big they are (so
// the page can say a download's size before starting it). Pure data and functions (no DOM),
// so that Node's tests read the same registry and check each size against the file itself
// (tests/e2e/models.test.mjs).
//
// The list itself is the crate's catalog, src/checkpoints/models.json (read by Rust too:
// src/checkpoints/catalog.rs); ./models.json is a link to it, copied into dist/js/ with this
// folder. The engine builds a model as `new Viz(name, configJson, tokenizerJson, weightsBytes)`.
// A file a model does not have is passed as "" (SmolLM2's GGUF holds its config and vocabulary).
import catalog from './models.json' with { type: 'json' };

/** @typedef {{ path: string, bytes: number }} ModelFile */
/**
 * @typedef {{ name: string, kind: string, short: string, title: string, description: string,
 *   files: { config?: ModelFile, tokenizer?: ModelFile, weights: ModelFile }, twin?: string,
 *   committed?: boolean, example?: string, accepts?: RegExp, trainedLengths?: [number, number],
 *   trained?: { config: string, tokenizer: string, weights: Uint8Array } }} Model
 * `title` is the checkpoint's own name (export captions, messages); `twin` the model trained
 * alongside that differs only in where its norms sit; `committed`: in the repository's
 * trained/, not fetched by the set-up; `example`: what the text box holds when this model is
 * chosen from the picker, for a model that `accepts` only some characters; `trainedLengths`:
 * the shortest and longest text it was trained on (in characters); `trained`: the files of a
 * model the Training section trained, in memory.
 */

/** The page's view of a catalog entry (the catalog's `accepts` is a regular expression's text). */
function pageModel({ name, kind, short, title, description, files, twin, committed, example, accepts, trained_lengths: trainedLengths }) {
  const model = { name, short, title, kind, description, files };
  if (trainedLengths) model.trainedLengths = trainedLengths;
  if (twin) model.twin = twin;
  if (committed) model.committed = true;
  if (example !== undefined) model.example = example;
  if (accepts !== undefined) model.accepts = new RegExp(accepts);
  return model;
}

/** Every model by name, in the picker's order. @type {Record<string, Model>} */
export const MODELS = Object.fromEntries(catalog.map((m) => [m.name, pageModel(m)]));

/** The picker's name for the model the Training section trained (training.js), once one is shown. */
export const TRAINED_MODEL = 'trained-here';

/**
 * Registers (or replaces) the model trained in this page: `files` ({ config, tokenizer,
 * weights }) stay in memory, as the model's `trained`; nothing is downloaded for it. `label`
 * says where it came from ("step 1,200", or "from files"). Throws when the config is not JSON.
 */
export function registerTrained(files, { label }) {
  const c = JSON.parse(files.config);
  const layers = `${c.n_layers} layer${c.n_layers === 1 ? '' : 's'}`;
  const positions = c.position === 'None' ? 'no positions' : 'sinusoidal positions';
  MODELS[TRAINED_MODEL] = {
    name: TRAINED_MODEL,
    short: `Trained here (${label})`,
    title: `the model trained in this page (${label})`,
    kind: 'decoder',
    description: `Trained in this page from random weights (${label}): ${layers}, ${c.n_heads} heads, d_model ${c.d_model}, ${c.norm_place === 'Pre' ? 'pre-LN' : 'post-LN'}, ${positions}, ${c.vocab_size} tokens, a context of ${c.context}.`,
    files: {},
    trained: { ...files, label },
  };
}

/** The model the page opens with when a link names none. */
export const DEFAULT_MODEL = catalog.find((m) => m.default).name;

/** The model called `name`, or undefined. */
export function modelNamed(name) {
  return Object.hasOwn(MODELS, name) ? MODELS[name] : undefined;
}

/** How the prose names model `name` ("the lecture decoder (post-LN)"); `start`: at the start
 * of a sentence, with a capital. */
export function modelTitle(name, { start = false } = {}) {
  const title = modelNamed(name)?.title ?? name ?? 'this model';
  return start ? title.charAt(0).toUpperCase() + title.slice(1) : title;
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
  if (model.trained) return `${model.short} · ${model.kind} · in this page`;
  return `${model.short} · ${model.kind} · ${megabytes(downloadBytes(model))} MB`;
}
