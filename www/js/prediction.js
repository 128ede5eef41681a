// The next-token prediction section.
import { $ } from './dom.js';
import { session } from './session.js';
import { modelNamed } from './models.js';

export function renderPrediction() {
  const el = $('prediction');
  const title = modelNamed(session.modelName)?.title ?? 'This model';
  if (session.config.lm_head === 'None') {
    // Static words with links into the glossary (no text from outside goes into this HTML:
    // the title is the page's own registry's).
    el.innerHTML = `${title} is an <a class="term" href="#g-encoder" title="Every token sees every other token; one vector out per token">encoder</a>: it reads the whole sentence in both directions and outputs one vector per token (averaged, they make a sentence embedding for search and similarity). It has no language-model head, so it makes no next-token prediction. A decoder model ends with an <a class="term" href="#g-unembed" title="Maps the final vector to one raw score (logit) per vocabulary word">unembedding</a> matrix, whose <a class="term" href="#g-logits" title="Raw scores for every vocabulary word, before the softmax">logits</a> a softmax turns into next-token probabilities.`;
  } else {
    el.textContent = `${title} has a language-model head; this page does not draw its next-token prediction yet.`;
  }
}
