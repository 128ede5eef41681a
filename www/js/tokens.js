// The token chips under the text box, and the count against the model's context.
import { $ } from './dom.js';
import { session } from './session.js';

export function renderTokens() {
  const { summary, config } = session;
  // An encoder-decoder's text is its source: the chips are the source's tokens (the tokens
  // the decoder wrote are in the encoder-decoder section).
  const source = summary.translation;
  const tokens = source ? source.source_tokens : summary.tokens;
  const truncated = source ? source.source_truncated : summary.truncated;
  const list = $('tokens');
  list.replaceChildren(...tokens.map((t, i) => {
    const li = document.createElement('li');
    li.className = t.special ? 'special' : '';
    li.title = `position ${i}, id ${t.id}`;
    const text = document.createElement('span');
    text.textContent = t.text;
    const id = document.createElement('small');
    id.textContent = t.id;
    li.append(text, id);
    return li;
  }));
  const { context } = config;
  const limit = summary.token_limit ?? context;
  // The page may trace fewer tokens than the model can read (it keeps every layer's attention).
  const why = limit < context
    ? `the page traces at most ${limit} (the model reads up to ${context.toLocaleString('en')}; every layer's attention is kept for the views)`
    : `the model reads at most ${context}`;
  $('token-count').textContent = limit < context
    ? `${tokens.length} / ${limit} tokens (the page's limit; the model's context is ${context.toLocaleString('en')})`
    : `${tokens.length} / ${context} ${source ? 'source ' : ''}tokens (the model's context limit)`;
  const warn = $('truncated');
  if (truncated) {
    warn.hidden = false;
    warn.textContent = `Your text is ${truncated.original_tokens} tokens long; ${why}, so only the first ${truncated.kept_tokens} are used.`;
  } else {
    warn.hidden = true;
  }
}
