// The layer-norm section: which of the model's norms is shown, in its three stages and with
// its learned gamma and beta.
import { $, fillSelect } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { draw, registerChart } from './charts.js';
import { twinModel } from './twin.js';

registerChart('norm', {
  spec: () => ({ kind: 'norm', index: state.norm }),
  shape: [0.5, 460],
  height: (width, height) => (width < 640 ? Math.max(height, 960) : height), // the three stages stack
});
// The same norm in the twin trained with the norm on the other side (twin.js).
registerChart('norm-twin', {
  spec: () => ({ kind: 'norm', index: twinNormIndex(twinModel().summary) }),
  shape: [0.5, 460],
  height: (width, height) => (width < 640 ? Math.max(height, 960) : height),
  heldWhileGenerating: true,
  model: twinModel,
});
registerChart('norm-params', { spec: () => ({ kind: 'norm_parameters', index: state.norm }), shape: [0.32, 300], modelOnly: true });

// The same words as the charts' titles (src/draw/layer_norm.rs `norm_place_words`).
function normLabel(n) {
  if (n.step === 'embed.norm') return 'embedding norm (before layer 0)';
  if (n.step === 'final_norm') return 'final norm (after the last layer)';
  const when = session.config.norm_place === 'Post' ? 'after' : 'before';
  const what = n.step.endsWith('attn_norm') ? 'attention' : n.step.endsWith('cross_norm') ? 'cross-attention' : 'feed-forward';
  return `layer ${n.layer}, ${when} ${what}`;
}

/** The twin's norm (in `twinSummary`, its last pass) at the place of the norm chosen on the
 * model shown: the same layer and sublayer (after it in post-LN, before it in pre-LN); the
 * final norm, which only pre-LN has, faces the post-LN twin's last norm. */
function twinNormIndex(twinSummary) {
  const norms = twinSummary?.norms ?? [];
  const chosen = session.summary?.norms[state.norm];
  if (!chosen || !norms.length) return 0;
  const kind = (step) => step.replace(/^.*\./, '');
  const same = norms.findIndex((n) => n.layer === chosen.layer && kind(n.step) === kind(chosen.step));
  return same >= 0 ? same : norms.length - 1;
}

export function renderNormOptions() {
  const { summary } = session;
  state.norm = Math.min(state.norm, summary.norms.length - 1);
  fillSelect($('norm'), summary.norms.map((_, i) => i), (i) => normLabel(summary.norms[i]), state.norm);
}

export function wireNorm() {
  $('norm').addEventListener('change', () => {
    state.norm = Number($('norm').value);
    draw('norm');
    draw('norm-twin');
    draw('norm-params');
    writeUrl();
  });
}
