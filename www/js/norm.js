// The layer-norm section: which of the model's norms is shown, in its three stages and with
// its learned gamma and beta.
import { $, fillSelect } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { draw, registerChart } from './charts.js';

registerChart('norm', {
  spec: () => ({ kind: 'norm', index: state.norm }),
  shape: [0.5, 460],
  height: (width, height) => (width < 640 ? Math.max(height, 960) : height), // the three stages stack
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

export function renderNormOptions() {
  const { summary } = session;
  state.norm = Math.min(state.norm, summary.norms.length - 1);
  fillSelect($('norm'), summary.norms.map((_, i) => i), (i) => normLabel(summary.norms[i]), state.norm);
}

export function wireNorm() {
  $('norm').addEventListener('change', () => {
    state.norm = Number($('norm').value);
    draw('norm');
    draw('norm-params');
    writeUrl();
  });
}
