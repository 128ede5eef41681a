// What one part writes: for a head, a cross-attention head or a feed-forward layer, the tokens
// its output pushes up most and down most after the last token (`Viz::part_tokens`). The part
// follows the head chosen in the attention section until the student picks another here or
// clicks a bar of the votes chart. Computed after each pass while the panel is near the screen;
// the page holds the lists' rows from the start (index.html), so filling them moves nothing.
import { tokenLabel } from './labels.js';
import { $, fillSelect, syncChildren, setIfChanged } from './dom.js';
import { state } from './state.js';
import { session } from './session.js';
import { showError, clearError } from './messages.js';
import { chartPoint } from './hover.js';

const SHOWN = 8; // tokens in each list


const keyOf = (p) => (p.part === 'ffn' ? `ffn:${p.layer}` : `${p.part}:${p.layer}:${p.head}`);

let listedFor = null; // the Viz whose parts the picker lists
let chosen = null; // the part's key, or null: the attention section's head
let nearScreen = false;

/** The parts that write into the stream, as `switchable_parts` lists them. */
function writers() {
  return session.viz.switchable_parts().filter((p) => p.part === 'head' || p.part === 'cross_head' || p.part === 'ffn');
}

/** The attention section's head, when it is one of the decoder's (or a decoder-only model's). */
function attentionHead() {
  if (state.stack === 'encoder' && session.config.encoder_layers) return null;
  return `head:${state.layer}:${state.head}`;
}

export function renderPartTokens() {
  const { viz } = session;
  if (!viz || !nearScreen) return;
  const panel = $('writes');
  const noHead = session.config.lm_head === 'None';
  setIfChanged(panel, 'hidden', noHead);
  setIfChanged($('writes-controls'), 'hidden', noHead);
  if (noHead) {
    setIfChanged($('writes-note'), 'textContent', 'This model has no next-token prediction, so no part pushes a token up or down; switch parts off above to see what they change in the attention, stream and norm views.');
    return;
  }
  const parts = writers();
  if (listedFor !== viz) {
    listedFor = viz;
    if (chosen && !parts.some((p) => keyOf(p) === chosen)) chosen = null;
  }
  const key = chosen ?? attentionHead() ?? keyOf(parts[0]);
  const index = Math.max(0, parts.findIndex((p) => keyOf(p) === key));
  fillSelect($('writes-part'), parts.map((_, i) => i), (i) => parts[i].label, index);
  const { label, ...part } = parts[index];
  let report;
  try {
    report = viz.part_tokens(part, SHOWN);
    clearError('writes-message');
  } catch (err) {
    showError(String(err.message ?? err), 'writes-message');
    setIfChanged(panel, 'hidden', true);
    return;
  }
  setIfChanged($('writes-up-caption'), 'textContent', `${label} pushes up`);
  setIfChanged($('writes-down-caption'), 'textContent', `${label} pushes down`);
  const fill = (table, rows) => syncChildren(table.tBodies[0], rows, () => {
    const tr = document.createElement('tr');
    tr.append(document.createElement('td'), document.createElement('td'));
    return tr;
  }, (tr, row) => {
    setIfChanged(tr.children[0], 'textContent', tokenLabel(row.token));
    setIfChanged(tr.children[1], 'textContent', `${row.logit >= 0 ? '+' : '−'}${Math.abs(row.logit).toFixed(2)}`);
  });
  fill($('writes-up'), report.promoted);
  fill($('writes-down'), report.suppressed);
  setIfChanged($('writes-note'), 'textContent', report.note);
}

export function wirePartTokens() {
  // Near the screen: the heading or the lists within 200 px of it.
  const near = new Map();
  const observer = new IntersectionObserver((entries) => {
    for (const e of entries) near.set(e.target, e.isIntersecting);
    nearScreen = [...near.values()].some(Boolean);
    renderPartTokens();
  }, { rootMargin: '200px' });
  for (const id of ['writes-heading', 'writes']) observer.observe($(id));
  $('writes-part').addEventListener('change', () => {
    const parts = writers();
    const p = parts[Number($('writes-part').value)];
    chosen = p ? keyOf(p) : null;
    renderPartTokens();
  });
  document.addEventListener('tviz:head', () => {
    chosen = null;
    renderPartTokens();
  });
  $('votes-canvas').addEventListener('click', (event) => {
    const point = chartPoint('votes', event);
    const bar = point?.info.plotted?.bars?.find((b) => b.part && point.y >= b.top && point.y < b.bottom);
    if (!bar) return;
    chosen = keyOf(bar.part);
    renderPartTokens();
    $('writes-heading').scrollIntoView({ block: 'nearest' });
  });
}
