// Presenter mode, for a class watching a projector: bigger text and charts, one section at a
// time (the sentence stays above it), PageDown/PageUp (or ] and [) to move between sections,
// Escape to leave.
import { $ } from './dom.js';
import { drawAll, setTextZoom } from './charts.js';
import { session } from './session.js';

const PRESENTER_TEXT_ZOOM = 1.5;
let current = 0;

// The sections this model shows (one that does not apply to it, such as the encoder-decoder
// section for a decoder, is hidden and skipped).
function sections() {
  return [...document.querySelectorAll('main > section.view')].filter((s) => !s.hidden);
}

function show(index) {
  const all = sections();
  current = Math.max(0, Math.min(all.length - 1, index));
  all.forEach((s, i) => s.classList.toggle('presenting', i === current));
  const heading = all[current].querySelector('h2')?.textContent ?? '';
  $('presenter-where').textContent = `${heading}: ${current + 1} of ${all.length}. PageDown or ] for the next, PageUp or [ for the previous, Esc to leave.`;
  all[current].scrollIntoView({ block: 'start' });
  if (session.summary) drawAll(); // the section's charts were hidden: size and draw them now
}

export function presenting() {
  return document.body.classList.contains('presenter');
}

function setPresenting(on) {
  document.body.classList.toggle('presenter', on);
  $('presenter').setAttribute('aria-pressed', String(on));
  $('presenter').textContent = on ? 'Leave presenter mode' : 'Presenter mode';
  $('presenter-where').hidden = !on;
  setTextZoom(on ? PRESENTER_TEXT_ZOOM : 1);
  if (on) {
    // Start on the section nearest the top of the window.
    const all = sections();
    const nearest = all.findIndex((s) => s.getBoundingClientRect().bottom > 80);
    show(nearest < 0 ? 0 : nearest);
  } else {
    document.querySelectorAll('main > section.view').forEach((s) => s.classList.remove('presenting'));
    if (session.summary) drawAll();
  }
}

export function wirePresenter() {
  $('presenter').addEventListener('click', () => setPresenting(!presenting()));
  document.addEventListener('keydown', (event) => {
    if (!presenting() || event.altKey || event.ctrlKey || event.metaKey) return;
    if (['TEXTAREA', 'INPUT', 'SELECT'].includes(document.activeElement?.tagName)) return;
    const moves = { PageDown: 1, ']': 1, PageUp: -1, '[': -1 };
    if (event.key === 'Escape') { setPresenting(false); event.preventDefault(); return; }
    if (moves[event.key] === undefined) return;
    show(current + moves[event.key]);
    event.preventDefault();
  });
  // The contents bar switches sections while presenting.
  document.querySelector('nav.toc').addEventListener('click', (event) => {
    const a = event.target.closest('a[href^="#"]');
    if (!a || !presenting()) return;
    const index = sections().findIndex((s) => `#${s.id}` === a.getAttribute('href'));
    if (index < 0) return;
    event.preventDefault();
    show(index);
  }, true);
}
