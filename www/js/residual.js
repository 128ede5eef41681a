// The residual-stream section: a picker of the tokens whose vectors the chart follows. The
// chart reports which tokens it drew and in which colour; the picker shows exactly those.
import { $, syncChildren, setIfChanged } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { draw, afterDraw, registerChart } from './charts.js';
import { twinModel } from './twin.js';

registerChart('residual', { spec: () => ({ kind: 'residual', tokens: state.residualTokens }), shape: [0.62, 520] });
// The same tokens through the twin trained with the norm on the other side (twin.js).
registerChart('residual-twin', {
  spec: () => ({ kind: 'residual', tokens: state.residualTokens }),
  shape: [0.62, 520],
  heldWhileGenerating: true,
  model: twinModel,
});

export const MAX_FOLLOWED = 8; // the chart's palette has 8 colours; none repeats

function say(message) {
  setIfChanged($('residual-picker-note'), 'textContent', message);
}

/** Chips for the sentence's tokens (updated only when the tokens change). */
export function renderResidualPicker() {
  const { tokens } = session.summary;
  if (state.residualTokens) {
    state.residualTokens = state.residualTokens.filter((i) => i < tokens.length).slice(0, MAX_FOLLOWED);
    if (!state.residualTokens.length) state.residualTokens = null; // a few defaults
  }
  const box = $('residual-tokens');
  const key = tokens.map((t) => t.text).join('\u0000');
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  syncChildren(box, tokens, () => {
    const label = document.createElement('label');
    label.className = 'pick';
    const input = document.createElement('input');
    input.type = 'checkbox';
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.setAttribute('aria-hidden', 'true');
    label.append(input, swatch, document.createElement('span'));
    return label;
  }, (label, t, i) => {
    setIfChanged(label.children[0], 'value', String(i));
    setIfChanged(label, 'title', `token ${i}`);
    setIfChanged(label.children[2], 'textContent', t.text);
  });
  const drawn = session.drawn.residual;
  if (drawn) paint(drawn);
}

/** Ticks and colours the chips of the tokens the chart drew. */
function paint(drawn) {
  const shown = drawn.plotted?.tokens ?? [];
  const colour = new Map(shown.map((t) => [t.index, t.colour]));
  const full = shown.length >= MAX_FOLLOWED;
  // Written only where changed: this runs on every keystroke, and each write makes the
  // browser style the chip again.
  for (const input of $('residual-tokens').querySelectorAll('input')) {
    const i = Number(input.value);
    setIfChanged(input, 'checked', colour.has(i));
    setIfChanged(input, 'disabled', full && !colour.has(i));
    const swatch = input.nextElementSibling;
    const background = colour.get(i) ?? 'transparent';
    if (swatch.dataset.background !== background) {
      swatch.dataset.background = background;
      swatch.style.background = background;
    }
  }
  say(full
    ? `Following ${shown.length} tokens, the most one chart can tell apart (one colour each); untick one to choose another.`
    : `Following ${shown.length} of ${session.summary.tokens.length} tokens; tick up to ${MAX_FOLLOWED}.`);
}

export function wireResidual() {
  afterDraw.residual = paint;
  $('residual-tokens').addEventListener('change', (event) => {
    const i = Number(event.target.value);
    const shown = (session.drawn.residual?.plotted?.tokens ?? []).map((t) => t.index);
    let next = event.target.checked ? [...shown, i] : shown.filter((j) => j !== i);
    if (!next.length) { // the chart always follows at least one token
      event.target.checked = true;
      say('The chart follows at least one token.');
      return;
    }
    next = next.slice(0, MAX_FOLLOWED);
    state.residualTokens = next;
    draw('residual');
    draw('residual-twin');
    writeUrl();
  });
}
