// Parts of the model switched off (heads, feed-forward layers, the positional encoding, the
// causal mask): the picker, the bar under the sentence that lists what is off (one click puts
// each back), and the table of the next token's probabilities as trained and without them.
// The engine computes the changed pass (`Viz::set_switches`); every view draws it.
import { tokenLabel } from './labels.js';
import { $, fillSelect, syncChildren, setIfChanged } from './dom.js';
import { state, writeUrl, newChoice } from './state.js';
import { session } from './session.js';
import { showError, clearError } from './messages.js';
import { offCode } from './url-state.js';
import { gpu } from './backend-status.js';
import { draw, registerChart } from './charts.js';

// A post-LN model's votes are a pass without each part: drawn when the chart is seen.
registerChart('votes', { spec: () => ({ kind: 'votes' }), shape: [0.62, 560], whenSeen: true });
// `off` only tells the chart cache which parts a picture is for; Rust ignores it.
registerChart('off-attention', { spec: () => ({ kind: 'off_difference', layer: state.layer, head: state.head, off: offCode(state.off) }), shape: [0.9, 340] });


const labelOf = (s) => {
  const fill = s.fill === 'mean' ? ' (its mean)' : '';
  switch (s.part) {
    case 'head': return `layer ${s.layer} head ${s.head}${fill}`;
    case 'cross_head': return `layer ${s.layer} cross-attention head ${s.head}${fill}`;
    case 'ffn': return `layer ${s.layer} feed-forward${fill}`;
    case 'position': return 'positional encoding';
    default: return 'causal mask';
  }
};

const samePart = (a, b) => offCode([{ ...a, fill: 'zero' }]) === offCode([{ ...b, fill: 'zero' }]);

let applied = { viz: null, code: null }; // what the model was last told is off

/**
 * Tells the model which parts are off, if that changed (or the model did). A part the model
 * does not have (a link made for another model) is dropped, and the page says so beside the
 * picker. Called before every pass.
 */
export function syncSwitches() {
  const { viz } = session;
  if (!viz) return;
  const code = offCode(state.off);
  if (applied.viz === viz && applied.code === code) return;
  try {
    viz.set_switches(state.off);
    clearError('off-message');
  } catch (err) {
    showError(`${String(err.message ?? err)}: it stays on.`, 'off-message');
    const parts = viz.switchable_parts();
    state.off = state.off.filter((s) => parts.some((p) => samePart(p, s)));
    viz.set_switches(state.off);
  }
  applied = { viz, code: offCode(state.off) };
}

/** Whether the page's passes must run on the CPU: parts switched off are computed there. */
export const switchesNeedCpu = () => state.off.length > 0;

let pickerFor = null; // the Viz the picker's options were listed for

/** After every pass: the bar, the picker (once a model) and the table. */
export function renderSwitches() {
  const { viz } = session;
  if (!viz) return;
  if (pickerFor !== viz) {
    pickerFor = viz;
    const parts = viz.switchable_parts();
    fillSelect($('off-part'), parts.map((_, i) => i), (i) => parts[i].label, 0);
    $('off-part').dataset.parts = JSON.stringify(parts);
  }
  const off = state.off;
  setIfChanged($('off-bar'), 'hidden', off.length === 0);
  // A difference needs something switched off: until then the hint above says so, with no
  // screenful of empty chart under it.
  setIfChanged($('off-attention-figure'), 'hidden', off.length === 0);
  syncChildren($('off-list'), off, () => {
    const li = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    li.append(button);
    return li;
  }, (li, s) => {
    const button = li.firstChild;
    setIfChanged(button, 'textContent', `${labelOf(s)} ×`);
    setIfChanged(button, 'title', `Switch ${labelOf(s)} back on`);
    button.dataset.code = offCode([s]);
  });
  const notes = [];
  if (off.length) notes.push('Every view below shows the model without these parts.');
  if (off.some((s) => s.part === 'mask')) notes.push('Without its mask a token also sees the tokens after it, which the model never saw in training: what it does then is not what it learned.');
  if (off.length && gpu.active) notes.push('Passes run on the CPU while parts are off.');
  setIfChanged($('off-note'), 'textContent', notes.join(' '));
  setIfChanged($('off-this-head'), 'disabled', off.some((s) => s.part === 'head' && s.layer === state.layer && s.head === state.head));
  renderTable();
}

function renderTable() {
  const table = $('off-table');
  let report = { off: [], rows: [] };
  try {
    if (state.off.length && session.config.lm_head !== 'None') report = session.viz.switched_off_prediction(8);
  } catch (err) {
    showError(String(err.message ?? err), 'off-message');
  }
  setIfChanged(table, 'hidden', report.rows.length === 0);
  const nothing = $('off-empty');
  setIfChanged(nothing, 'hidden', state.off.length > 0 && report.rows.length > 0);
  if (state.off.length && session.config.lm_head === 'None') {
    setIfChanged(nothing, 'textContent', 'This model has no next-token prediction to compare; the attention, stream and norm views above show it without the parts.');
  } else {
    setIfChanged(nothing, 'textContent', 'Nothing is switched off: the page shows the model as trained.');
  }
  if (!report.rows.length) return;
  setIfChanged($('off-caption'), 'textContent', `The next token, as trained and with ${report.off.join(', ')} switched off`);
  syncChildren(table.tBodies[0], report.rows, () => {
    const tr = document.createElement('tr');
    for (let i = 0; i < 4; i += 1) tr.append(document.createElement('td'));
    return tr;
  }, (tr, row) => {
    const change = row.changed - row.intact;
    setIfChanged(tr.children[0], 'textContent', tokenLabel(row.token));
    setIfChanged(tr.children[1], 'textContent', `${(row.intact * 100).toFixed(1)}%`);
    setIfChanged(tr.children[2], 'textContent', `${(row.changed * 100).toFixed(1)}%`);
    setIfChanged(tr.children[3], 'textContent', `${change >= 0 ? '+' : '−'}${Math.abs(change * 100).toFixed(1)}`);
  });
}

/** Switches `s` off (or changes how), then passes again. */
function switchOff(s, update) {
  state.off = [...state.off.filter((o) => !samePart(o, s)), s];
  update();
  newChoice();
  writeUrl();
}

export function wireSwitches({ update }) {
  document.addEventListener('tviz:head', () => draw('off-attention'));
  $('off-add').addEventListener('click', () => {
    const parts = JSON.parse($('off-part').dataset.parts || '[]');
    const part = parts[Number($('off-part').value)];
    if (!part) return;
    const { label, ...rest } = part;
    switchOff({ ...rest, fill: rest.part === 'position' || rest.part === 'mask' ? 'zero' : $('off-fill').value }, update);
  });
  $('off-this-head').addEventListener('click', () => {
    const part = state.stack === 'encoder' && session.config.encoder_layers ? null : 'head';
    if (!part) {
      showError('Switching heads off acts on the decoder: choose the decoder\'s attention.', 'off-message');
      return;
    }
    switchOff({ part, layer: state.layer, head: state.head, fill: 'zero' }, update);
  });
  $('off-list').addEventListener('click', (event) => {
    const code = event.target.closest('button')?.dataset.code;
    if (!code) return;
    state.off = state.off.filter((s) => offCode([s]) !== code);
    update();
    newChoice();
    writeUrl();
  });
  $('off-clear').addEventListener('click', () => {
    state.off = [];
    update();
    newChoice();
    writeUrl();
  });
}
