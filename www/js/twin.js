// The lecture decoder's twin beside it: the same training with the layer norm on the other
// side of each sublayer. When the model shown has a twin, it is loaded too (3 MB, from the
// cache after the first time) and reads the same sentence, so the layer-norm and residual
// sections draw post-LN and pre-LN side by side.
import { session } from './session.js';
import { state } from './state.js';
import { modelNamed, modelTitle } from './models.js';
import { loadModelFiles } from './model-files.js';
import { draw } from './charts.js';

const twin = { name: null, viz: null, text: null, summary: null, error: null };

// The charts drawn from the twin (registered by norm.js and residual.js with `twinModel`).
const TWIN_CHARTS = ['norm-twin', 'residual-twin'];

/** The twin's name for the model shown, or null. */
function twinName() {
  return modelNamed(session.modelName)?.twin ?? null;
}

async function load(name) {
  twin.viz?.free();
  Object.assign(twin, { name, viz: null, text: null, summary: null, error: null });
  try {
    const files = await loadModelFiles(modelNamed(name));
    if (twin.name !== name) return; // another model was chosen meanwhile
    // The engine's class, from the model shown: it is loaded by the time a chart asks.
    twin.viz = new session.viz.constructor(name, files.config, files.tokenizer, files.weights);
  } catch (err) {
    if (twin.name === name) twin.error = String(err.message ?? err);
  }
  for (const chart of TWIN_CHARTS) draw(chart);
  // The charts took the place of a line saying the twin was loading: presenter mode cuts its
  // slides again.
  document.dispatchEvent(new Event('tviz:layout'));
}

/** The twin, with a pass over the page's sentence: `{ viz, name, summary }`, or `{ why }` while it
 * cannot draw (no twin, failed; `loading: true` while its files arrive). Started on the first ask. */
export function twinModel() {
  const name = twinName();
  const shown = modelTitle(session.modelName, { start: true });
  if (!name) return { why: `${shown} has no twin trained with the norm on the other side.` };
  if (twin.name !== name) load(name);
  if (twin.error) return { why: `The twin, ${modelTitle(name)}, could not be loaded: ${twin.error}` };
  if (!twin.viz) return { why: `Loading the twin, ${modelTitle(name)}…`, loading: true };
  if (twin.text !== state.text) {
    try {
      twin.summary = twin.viz.set_text(state.text);
      twin.text = state.text;
    } catch (err) {
      return { why: `The twin could not read this text: ${err.message ?? err}` };
    }
  }
  return { viz: twin.viz, name, summary: twin.summary };
}
