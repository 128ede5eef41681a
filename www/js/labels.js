// How the page writes a token as text, as the charts write it (Rust's
// draw::prediction::token_label): a leading space as "·" (" it" is "·it"), line breaks and
// tabs as escapes. One function for every list and button that names a token.

/** `text` (a token's) as a label. */
export function tokenLabel(text) {
  return text.replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r').replace(/^ /, '·');
}
