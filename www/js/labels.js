// How the page writes a token as text, as the charts write it (Rust's
// draw::prediction::token_label): a leading space as "·" (" it" is "·it"), line breaks and
// tabs as escapes. One function for every list and button that names a token. And how it
// writes a count.

/** `text` (a token's) as a label. */
export function tokenLabel(text) {
  return text.replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\r/g, '\\r').replace(/^ /, '·');
}

/** A count with commas between its thousands ("4,608"), as `toLocaleString('en')` writes a
 * whole number. Not that function: its first call in a page loads the browser's number
 * formats, on the first view's path (docs/benchmarks.md, "Counts without the number formats"). */
export function thousands(n) {
  const [whole, fraction] = String(n).split('.');
  return whole.replace(/\B(?=(\d{3})+$)/g, ',') + (fraction === undefined ? '' : `.${fraction}`);
}
