// Small DOM helpers shared by the sections.

export const $ = (id) => document.getElementById(id);

/** Fills a <select> with `values`, keeping its elements: only the options whose choice
 * changed are written (a keystroke changes one or two of a sentence's tokens). */
export function fillSelect(select, values, label, selected) {
  const labels = values.map((v) => `${v}\t${label(v)}`).join('\n');
  if (select.dataset.options !== labels) {
    select.dataset.options = labels;
    syncChildren(select, values, () => document.createElement('option'), (o, v) => {
      setIfChanged(o, 'value', String(v));
      setIfChanged(o, 'textContent', label(v));
    });
  }
  setIfChanged(select, 'value', String(selected));
}

/** Saves `blob` as a file named `filename`. */
export function download(blob, filename) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

/**
 * Makes `list`'s children one element for each of `items`: `make(item, i)` builds a new one,
 * `update(element, item, i)` brings one up to date. Elements already there are kept and
 * updated (a keystroke changes one or two of a sentence's tokens, and building every chip
 * anew made the browser style and lay out all of them again); extra ones are removed.
 */
export function syncChildren(list, items, make, update) {
  const kept = Math.min(list.children.length, items.length);
  for (let i = 0; i < kept; i += 1) update(list.children[i], items[i], i);
  while (list.children.length > items.length) list.lastElementChild.remove();
  if (items.length > kept) list.append(...items.slice(kept).map((item, k) => { const e = make(item, kept + k); update(e, item, kept + k); return e; }));
}

/** Sets `element.textContent` (or `key`) to `value` when it differs. Setting an attribute,
 * even to the value it has, marks the element's style to be worked out again; a keystroke's
 * charts then wait for that inside the keystroke, as the first font a chart sets makes the
 * browser bring the page's style up to date (docs/benchmarks.md). */
export function setIfChanged(element, key, value) {
  if (element[key] !== value) element[key] = value;
}
