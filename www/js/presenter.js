// Presenter mode, for a class watching a projector: bigger text and charts, and the page as
// slides. The sentence stays at the top; below it one slide, a part of one section cut to fit
// the screen, its charts made small enough to fit too. PageDown/PageUp (or ] and [, or the
// bar's buttons) move between slides, Escape leaves.
import { $ } from './dom.js';
import { charts, draw, drawAll, setTextZoom, setChartHeightLimit } from './charts.js';
import { session } from './session.js';

const PRESENTER_TEXT_ZOOM = 1.5;
// Room kept under a chart for its caption (CSS pixels at the presenter's text size).
const CAPTION_ROOM = 96;
// Blocks that introduce the one after them (a heading, a chart's controls): never the last of
// a slide.
const KEEP_WITH_NEXT = '.controls, fieldset, h3, h4';

const place = { section: 0, slide: 0 };
let recut = null; // a pending cut after the window was resized or a part opened
let slides = []; // the current section's slides: each a list of the blocks it shows
let containers = []; // the current section's elements cut into blocks of several slides

// The sections this model shows (one that does not apply to it, such as the encoder-decoder
// section for a decoder, is hidden and skipped); the glossary is for reading, not a slide.
function sections() {
  return [...document.querySelectorAll('main > section.view')].filter((s) => !s.hidden && s.id !== 'glossary');
}

function shown(el) {
  return el.getClientRects().length > 0;
}

// How tall `el` is with its margins (CSS pixels).
function outerHeight(el) {
  const style = getComputedStyle(el);
  return el.getBoundingClientRect().height + parseFloat(style.marginTop) + parseFloat(style.marginBottom);
}

/** The room a slide has below the sentence and the bar, heading excluded (CSS pixels). */
function slideRoom(section) {
  const heading = section.querySelector(':scope > h2');
  return innerHeight - section.getBoundingClientRect().top - (heading ? outerHeight(heading) : 0) - 12;
}

/** The blocks of `el` a slide is made of: its shown children but the heading, each whole
 * unless it is taller than `room` and holds several blocks itself (a row of charts); such a
 * container goes into `split`. */
function blocksOf(el, room, split) {
  const blocks = [];
  for (const child of el.children) {
    if (child.tagName === 'H2' || !shown(child)) continue;
    const inner = [...child.children].filter(shown);
    // Charts side by side (a model and its twin, a head and all heads) stay on one slide.
    const top = (block) => Math.round(block.getBoundingClientRect().top);
    const sideBySide = inner.every((c) => top(c) === top(inner[0]));
    const splittable = child.tagName === 'DIV' && inner.length > 1 && !sideBySide && !child.matches(KEEP_WITH_NEXT);
    if (outerHeight(child) > room && splittable) {
      split.push(child);
      blocks.push(...blocksOf(child, room, split));
    } else blocks.push(child);
  }
  return blocks;
}

/** Cuts `section` into slides that fit the screen: every block shown, its charts sized to fit,
 * then measured and taken in order while they fit. */
function cut(section, squeeze) {
  for (const el of section.querySelectorAll('.off-slide')) el.classList.remove('off-slide');
  const room = slideRoom(section) - squeeze;
  setChartHeightLimit(Math.max(160, room - CAPTION_ROOM));
  for (const canvas of section.querySelectorAll('canvas[data-chart]')) {
    if (Object.hasOwn(charts, canvas.dataset.chart) && session.summary) draw(canvas.dataset.chart);
  }
  containers = [];
  const blocks = blocksOf(section, room, containers);
  const out = [];
  let slide = [];
  let used = 0;
  const heights = blocks.map(outerHeight);
  blocks.forEach((block, i) => {
    // A block that introduces the next one goes with it onto the next slide if both do not fit.
    const needed = heights[i] + (block.matches(KEEP_WITH_NEXT) ? heights[i + 1] ?? 0 : 0);
    if (slide.length && used + needed > room) {
      out.push(slide);
      slide = [];
      used = 0;
    }
    slide.push(block);
    used += heights[i];
  });
  if (slide.length) out.push(slide);
  return out.length ? out : [[]];
}

function show(sectionIndex, slideIndex = 0) {
  const all = sections();
  place.section = Math.max(0, Math.min(all.length - 1, sectionIndex));
  all.forEach((s, i) => s.classList.toggle('presenting', i === place.section));
  const section = all[place.section];
  scrollTo(0, 0);
  // What the page has below the slide (margins, the section's rule) is known once the slide is
  // shown: a slide that still makes the page scroll is cut again with that much less room.
  let squeeze = 0;
  for (let tries = 0; tries < 4; tries += 1) {
    slides = cut(section, squeeze);
    place.slide = slideIndex < 0 ? slides.length - 1 : Math.min(slideIndex, slides.length - 1);
    const visible = new Set(slides[place.slide]);
    for (const block of slides.flat()) block.classList.toggle('off-slide', !visible.has(block));
    for (const box of containers) box.classList.toggle('off-slide', !slides[place.slide].some((b) => box.contains(b)));
    const excess = document.documentElement.scrollHeight - innerHeight;
    if (excess <= 0) break;
    squeeze += excess;
  }
  const heading = section.querySelector('h2')?.textContent ?? '';
  const part = slides.length > 1 ? `, part ${place.slide + 1} of ${slides.length}` : '';
  $('presenter-place').textContent = `${heading}${part} · section ${place.section + 1} of ${all.length}`;
  $('presenter-back').disabled = place.section === 0 && place.slide === 0;
  $('presenter-next').disabled = place.section === all.length - 1 && place.slide === slides.length - 1;
  if (session.summary) drawAll(); // the slide's charts were hidden: size and draw them now
}

let driver = null; // a lesson's own steps, while one is open (lessons.js)

/** While a lesson is open, PageDown/PageUp and the bar's buttons move through its steps:
 * `move(+1 or -1)` returns true when it took the move; `place()` is the element the lesson's
 * step is about (or null), the slide presenter mode opens on. */
export function drivePresenter({ move: moveLesson, place }) {
  driver = { move: moveLesson, place };
}

/** In presenter mode, shows the slide that holds `el` (the view a lesson's step is about). */
export function presentElement(el) {
  if (!presenting()) return;
  const index = sections().findIndex((s) => s.contains(el));
  if (index < 0) return;
  show(index, 0);
  const slide = slides.findIndex((blocks) => blocks.some((b) => b.contains(el) || el.contains(b)));
  if (slide > 0) show(index, slide);
}

function move(step) {
  if (driver?.move(step)) return;
  const next = place.slide + step;
  if (next >= 0 && next < slides.length) show(place.section, next);
  else if (step > 0 && place.section < sections().length - 1) show(place.section + 1, 0);
  else if (step < 0 && place.section > 0) show(place.section - 1, -1);
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
    // Start on a lesson's view, or else the section nearest the top of the window.
    const all = sections();
    const nearest = all.findIndex((s) => s.getBoundingClientRect().bottom > 80);
    show(nearest < 0 ? 0 : nearest);
    const lessonView = driver?.place();
    if (lessonView) presentElement(lessonView);
  } else {
    clearTimeout(recut); // a cut asked for just before leaving must not hide blocks again
    setChartHeightLimit(null);
    for (const el of document.querySelectorAll('.off-slide')) el.classList.remove('off-slide');
    document.querySelectorAll('main > section.view').forEach((s) => s.classList.remove('presenting'));
    if (session.summary) drawAll();
  }
}

export function wirePresenter() {
  $('presenter').addEventListener('click', () => setPresenting(!presenting()));
  $('presenter-back').addEventListener('click', () => move(-1));
  $('presenter-next').addEventListener('click', () => move(1));
  document.addEventListener('keydown', (event) => {
    if (!presenting() || event.altKey || event.ctrlKey || event.metaKey) return;
    if (['TEXTAREA', 'INPUT', 'SELECT'].includes(document.activeElement?.tagName)) return;
    const moves = { PageDown: 1, ']': 1, PageUp: -1, '[': -1 };
    if (event.key === 'Escape') { setPresenting(false); event.preventDefault(); return; }
    if (moves[event.key] === undefined) return;
    move(moves[event.key]);
    event.preventDefault();
  });
  // A new window size or a part opened or closed (the comparison) cuts the slides again, once
  // the window stops changing; a chart drawn in place of the line saying it was loading
  // (twin.js), at once, so the slide never shows the chart uncut.
  const again = () => {
    if (!presenting()) return;
    clearTimeout(recut);
    recut = setTimeout(() => { if (presenting()) show(place.section, place.slide); }, 100);
  };
  addEventListener('resize', again);
  document.addEventListener('toggle', again, true);
  document.addEventListener('tviz:layout', () => { if (presenting()) show(place.section, place.slide); });
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
