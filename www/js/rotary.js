// The rotary block of the positional-encoding section (models with rotary positions): the
// feature pair whose turning the pair chart shows. Layer and head are the attention section's.
import { $ } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { draw, registerChart } from './charts.js';
import { positionKind } from './applicable.js';

registerChart('rotary-freq', { spec: () => ({ kind: 'rotary_frequencies' }), shape: [0.5, 300] });
registerChart('rotary-pair', { spec: () => ({ kind: 'rotary_pair', layer: state.layer, head: state.head, pair: state.rotaryPair }), shape: [1.0, 340] });
registerChart('rotary-distance', { spec: () => ({ kind: 'rotary_distance', layer: state.layer, head: state.head }), shape: [0.92, 340] });

/** Pairs in one head of the loaded model (0 for a model without rotary positions). */
export function pairCount() {
  // Only a model that turns its queries and keys has pairs to choose (no note about a clamped
  // pair on a model without rotary positions).
  if (!session.config || positionKind(session.config) !== 'Rotary') return 0;
  return Math.floor(session.config.head_dim / 2);
}

function say(message) {
  const el = $('rotary-pair-message');
  el.textContent = message ?? '';
  el.hidden = !message;
}

/** The pair box's range for the loaded model; a pair it does not have becomes the last one. */
export function renderRotaryForModel() {
  const count = pairCount();
  const input = $('rotary-pair');
  if (!count) return;
  input.max = String(count - 1);
  if (state.rotaryPair >= count) {
    say(`This model's heads have pairs 0 to ${count - 1}; pair ${count - 1} is shown.`);
    state.rotaryPair = count - 1;
  }
  input.value = String(state.rotaryPair);
}

export function wireRotary() {
  $('rotary-pair').addEventListener('input', () => {
    const text = $('rotary-pair').value.trim();
    const count = pairCount();
    if (!/^\d{1,6}$/.test(text) || Number(text) >= count) {
      say(`Type a pair from 0 to ${count - 1}.`);
      return;
    }
    say(null);
    state.rotaryPair = Number(text);
    draw('rotary-pair');
    writeUrl();
  });
}
