// One query at a time (the attention section): for a chosen token, the chart of its query
// against every key in the head shown above (q·k, ÷ √d_k, softmax) and the values summed with
// those weights (Rust's `View::Query`). The token is the link's `query=`, else the one the head
// finder starts from (a pronoun, else the last word).
import { $, fillSelect } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { draw, registerChart } from './charts.js';
import { defaultToken } from './head-finder.js';

registerChart('query', { spec: () => ({ kind: 'query', layer: state.layer, head: state.head, query: queryToken() }), shape: [0.62, 380] });

/** The query token shown: the chosen one while the sentence has it, else the default. */
export function queryToken() {
  const n = session.summary?.tokens.length ?? 0;
  return state.query !== null && state.query < n ? state.query : defaultToken();
}

/** After each pass: the token list, with the query shown chosen. */
export function renderQuery() {
  const texts = session.summary.tokens.map((t) => t.text);
  fillSelect($('query-token'), texts.map((_, i) => i), (i) => `${i}: ${texts[i]}`, queryToken());
}

export function wireQuery() {
  $('query-token').addEventListener('change', () => {
    state.query = Number($('query-token').value);
    draw('query');
    writeUrl();
  });
  document.addEventListener('tviz:head', () => draw('query'));
}
