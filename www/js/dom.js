// Small DOM helpers shared by the sections.

export const $ = (id) => document.getElementById(id);

/** Fills a <select> with `values`, keeping its elements when the choices are unchanged. */
export function fillSelect(select, values, label, selected) {
  const labels = values.map((v) => `${v}\t${label(v)}`).join('\n');
  if (select.dataset.options === labels) { // the same choices: keep the elements
    select.value = String(selected);
    return;
  }
  select.dataset.options = labels;
  const options = values.map((v) => {
    const o = document.createElement('option');
    o.value = v;
    o.textContent = label(v);
    return o;
  });
  select.replaceChildren(...options);
  select.value = String(selected);
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

/** Sets `element.textContent` (or `key`) to `value` when it differs. */
export function setIfChanged(element, key, value) {
  if (element[key] !== value) element[key] = value;
}
