// The positional-encoding section: which features the two wave charts (the model's table and
// the sinusoidal one) plot. A value the box cannot plot is refused with a message beside it,
// and the box and the URL always show exactly the features that are plotted.
import { $ } from './dom.js';
import { state, writeUrl, DEFAULT_DIMS } from './state.js';
import { session } from './session.js';
import { draw, registerChart } from './charts.js';

// The model's own table (learned) beside the paper's sinusoidal one at the model's width. They
// depend on the model alone while the sentence is under 64 tokens.
for (const [name, spec, shape] of [
  ['pos-table', () => ({ kind: 'position_table' }), [0.72, 300]],
  ['pos-waves', () => ({ kind: 'position_waves', dims: state.dims }), [0.72, 340]],
  ['pos-sin-table', () => ({ kind: 'sinusoidal_table' }), [0.72, 300]],
  ['pos-sin-waves', () => ({ kind: 'sinusoidal_waves', dims: state.dims }), [0.72, 340]],
  ['pos-sim', () => ({ kind: 'position_similarity' }), [0.9, 340]],
  ['pos-sin', () => ({ kind: 'sinusoidal_similarity' }), [0.9, 340]],
]) registerChart(name, { spec, shape, modelOnly: true });

export const MAX_DIMS = 8; // one colour each

/** The features in `text`, or a message saying why they cannot be plotted. */
export function checkDims(text, dModel) {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  if (!parts.length) return { message: 'Type at least one feature number.' };
  const bad = parts.find((p) => !/^\d+$/.test(p));
  if (bad !== undefined) return { message: `"${bad}" is not a feature number (whole numbers from 0 to ${dModel - 1}).` };
  const dims = [...new Set(parts.map(Number))];
  const outside = dims.find((d) => d >= dModel);
  if (outside !== undefined) return { message: `Feature ${outside} does not exist: this model has features 0 to ${dModel - 1}.` };
  if (dims.length > MAX_DIMS) return { message: `At most ${MAX_DIMS} features at once (that was ${dims.length}).` };
  return { dims };
}

function say(message) {
  const box = $('dims-message');
  box.textContent = message ?? '';
  box.hidden = !message;
}

function showDims() {
  $('dims').value = state.dims.join(', ');
}

/** The features box for the loaded model: its range, and the chosen features checked against it. */
export function renderDimsForModel(asked = 'The link asked for features this page cannot plot.') {
  const d = session.config.d_model;
  $('dims-help').textContent = `comma-separated, 0–${d - 1}, up to ${MAX_DIMS}; both wave charts plot them`;
  // Features from a shared link (or chosen for another model) are checked against this model.
  const fromUrl = checkDims(state.dims.join(','), d);
  if (fromUrl.message) {
    const chosen = state.dims.join(',') !== DEFAULT_DIMS.join(','); // else the page's own choice
    state.dims = DEFAULT_DIMS.filter((dim) => dim < d); // a narrow model (64 wide) keeps 0, 1, 40
    if (chosen) say(`${asked} ${fromUrl.message} Showing ${state.dims.join(', ')}.`);
  }
  showDims();
}

export function wirePosition() {
  renderDimsForModel();
  $('dims').addEventListener('change', () => {
    const { dims, message } = checkDims($('dims').value, session.config.d_model);
    if (message) {
      say(`${message} Still showing ${state.dims.join(', ')}.`);
      showDims();
      return;
    }
    say(null);
    state.dims = dims;
    showDims();
    draw('pos-waves');
    draw('pos-sin-waves');
    writeUrl();
  });
}
