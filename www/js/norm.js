// The layer-norm section: which norm of the model is shown.
import { $, fillSelect } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { draw } from './charts.js';

export function renderNormOptions() {
  const { summary } = session;
  const labels = summary.norms.map((n) => {
    if (n.layer === null) return 'embedding norm (before layer 0)';
    const after = n.step.endsWith('attn_norm') ? 'after attention' : 'after feed-forward';
    return `layer ${n.layer}, ${after}`;
  });
  state.norm = Math.min(state.norm, summary.norms.length - 1);
  fillSelect($('norm'), summary.norms.map((_, i) => i), (i) => labels[i], state.norm);
}

export function wireNorm() {
  $('norm').addEventListener('change', () => { state.norm = Number($('norm').value); draw('norm'); writeUrl(); });
}
