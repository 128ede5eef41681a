// The token chips under the text box, and the count against the model's context.
import { $, syncChildren, setIfChanged } from './dom.js';
import { session } from './session.js';
import { thousands } from './labels.js';

export function renderTokens() {
  const { summary, config } = session;
  // An encoder-decoder's text is its source: the chips are the source's tokens (the tokens
  // the decoder wrote are in the encoder-decoder section).
  const source = summary.translation;
  const tokens = source ? source.source_tokens : summary.tokens;
  const truncated = source ? source.source_truncated : summary.truncated;
  const list = $('tokens');
  syncChildren(list, tokens, () => {
    const li = document.createElement('li');
    li.append(document.createElement('span'), document.createElement('small'));
    return li;
  }, (li, t, i) => {
    li.classList.toggle('special', t.special); // (the head finder marks its token with a class too)
    setIfChanged(li, 'title', `position ${i}, id ${t.id}`);
    setIfChanged(li.children[0], 'textContent', t.text);
    setIfChanged(li.children[1], 'textContent', String(t.id));
  });
  const { context } = config;
  const limit = summary.token_limit ?? context;
  // The page may trace fewer tokens than the model can read (it keeps every layer's attention).
  const why = limit < context
    ? `the page traces at most ${limit} (the model reads up to ${thousands(context)}; every layer's attention is kept for the views)`
    : `the model reads at most ${context}`;
  setIfChanged($('token-count'), 'textContent', limit < context
    ? `${tokens.length} / ${limit} tokens (the page's limit; the model's context is ${thousands(context)})`
    : `${tokens.length} / ${context} ${source ? 'source ' : ''}tokens (the model's context limit)`);
  const warn = $('truncated');
  setIfChanged(warn, 'hidden', !truncated);
  if (truncated) setIfChanged(warn, 'textContent', `Your text is ${truncated.original_tokens} tokens long; ${why}, so only the first ${truncated.kept_tokens} are used.`);
}
