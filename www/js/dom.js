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
