// Equations typeset with KaTeX (loaded by index.html), or shown as TeX source without it.

export function renderTex(el, tex, display = false) {
  if (el.dataset.rendered === tex) return; // typing leaves most equations as they are
  el.dataset.rendered = tex;
  if (window.katex) {
    window.katex.render(tex, el, { displayMode: display, throwOnError: false, output: 'htmlAndMathml' });
  } else {
    el.textContent = tex;
  }
}

export function renderStaticMath() {
  document.querySelectorAll('[data-tex]').forEach((el) => renderTex(el, el.dataset.tex, el.classList.contains('math-block')));
}
