// The token chips under the text box, and the count against the model's context.
import { $ } from './dom.js';
import { session } from './session.js';

export function renderTokens() {
  const { summary, config } = session;
  const list = $('tokens');
  list.replaceChildren(...summary.tokens.map((t, i) => {
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
    ? `${summary.tokens.length} / ${limit} tokens (the page's limit; the model's context is ${context.toLocaleString('en')})`
    : `${summary.tokens.length} / ${context} tokens (the model's context limit)`;
  const warn = $('truncated');
  if (summary.truncated) {
    warn.hidden = false;
    warn.textContent = `Your text is ${summary.truncated.original_tokens} tokens long; ${why}, so only the first ${summary.truncated.kept_tokens} are used.`;
  } else {
    warn.hidden = true;
  }
}
