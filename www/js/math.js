// Equations typeset with KaTeX (loaded by index.html), or shown as TeX source without it.

function typeset(el, tex, display) {
  window.katex.render(tex, el, { displayMode: display, throwOnError: false, output: 'htmlAndMathml' });
}

// KaTeX's script runs after main.js (index.html), so an equation asked for before it has run
// shows its TeX source until then, and is typeset when the script has loaded.
const untypeset = new Map(); // element -> [tex, display]

function typesetOnceKatexRuns(el, tex, display) {
  if (!untypeset.size) {
    document.querySelector('script[src$="katex.min.js"]')?.addEventListener('load', () => {
      for (const [e, [t, d]] of untypeset) if (window.katex && e.dataset.rendered === t) typeset(e, t, d);
      untypeset.clear();
    }, { once: true });
  }
  untypeset.set(el, [tex, display]);
}

export function renderTex(el, tex, display = false) {
  if (el.dataset.rendered === tex) return; // typing leaves most equations as they are
  el.dataset.rendered = tex;
  if (window.katex) {
    typeset(el, tex, display);
  } else {
    el.textContent = tex;
    typesetOnceKatexRuns(el, tex, display);
  }
}

const typesetFixed = new WeakSet(); // fixed equations already typeset

function renderStatic(el) {
  if (typesetFixed.has(el)) return;
  renderTex(el, el.dataset.tex, el.classList.contains('math-block'));
  typesetFixed.add(el);
}

// The page's fixed equations. Those on screen (or within 200 px of it) are typeset at once; the
// others when they come near the screen or, at the latest, by `renderRemainingMath` once the
// first view is complete: typesetting all of them first (and laying the taller page out) held
// the first view back by about 0.1 s.
let approaching = null;
export function renderStaticMath() {
  const all = [...document.querySelectorAll('[data-tex]')];
  // Every position is read before anything is typeset, so the page is laid out once.
  const near = all.map((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.bottom > -200 && r.top < innerHeight + 200; // a hidden section's are 0 wide
  });
  const later = all.filter((el, i) => !near[i]);
  all.filter((el, i) => near[i]).forEach(renderStatic);
  if (!later.length) return;
  approaching = new IntersectionObserver((entries) => {
    for (const e of entries.filter((x) => x.isIntersecting)) {
      renderStatic(e.target);
      approaching?.unobserve(e.target);
    }
  }, { rootMargin: '800px 0px' });
  later.forEach((el) => approaching.observe(el));
}

/** Typesets every fixed equation not yet shown (called once the first view is complete). */
export function renderRemainingMath() {
  approaching?.disconnect();
  approaching = null;
  document.querySelectorAll('[data-tex]').forEach(renderStatic);
}
