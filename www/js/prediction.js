// The next-token prediction section.
import { $ } from './dom.js';
import { session } from './session.js';

export function renderPrediction() {
  const el = $('prediction');
  if (session.config.lm_head === 'None') {
    el.textContent = `all-MiniLM-L6-v2 is an encoder: it reads the whole sentence in both directions and outputs one vector per token (averaged, they make a sentence embedding for search and similarity). It has no language-model head, so it makes no next-token prediction. A decoder model ends with an unembedding matrix and a softmax over the vocabulary instead.`;
  }
}
