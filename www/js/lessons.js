// The Lessons panel: the notes chapter by chapter on the live model. A lesson (a file in
// www/lessons/, or one a teacher opens from disk; format in lesson-format.js and
// docs/lessons.md) is a list of steps; each step sets the page (model, sentence, layer, head,
// step, decoding, parts off), brings its view into place with the rest dimmed, says what to
// look at, and asks a question before it shows the answer, computed from the model on the
// sentence shown (lesson-answers.js). Progress stays in the browser (localStorage); the step
// is in the link; Back/Forward move between steps; in presenter mode PageDown reveals the
// answer, then moves to the next step.
import { $ } from './dom.js';
import { state, writeUrl, newChoice, fromLink } from './state.js';
import { session } from './session.js';
import { MODELS, modelNamed } from './models.js';
import { LESSON_NAME } from './url-state.js';
import { parseLesson, checkLesson, SECTIONS } from './lesson-format.js';
import { computeAnswer, isRight, fillIn, labelOfToken } from './lesson-answers.js';
import { presenting, drivePresenter, presentElement } from './presenter.js';
import { pickModel } from './model-picker.js';
import { exposeForTests } from './testing-hook.js';
import { thousands } from './labels.js';

const PROGRESS_KEY = 'tviz-lesson-progress';
const STEP_KEYS = { text: 'text', layer: 'layer', head: 'head', step: 'step', mode: 'mode', temperature: 'temperature', 'top-k': 'topK', 'top-p': 'topP', seed: 'seed', off: 'off' };

const open = {
  doc: null, // the parsed lesson
  name: null, // a shipped lesson's name (linkable), or null for a file from disk
  file: '', // how errors name the file
  index: 0, // the step shown
  answer: null, // the answer computed on the sentence shown
  reply: null, // what the student answered on this step (null: not yet)
  revealed: false,
  refocus: false, // the step's model is loading: bring its view into place after
  problem: null, // why this step cannot be shown on the model loaded (a lesson error)
};
let showView = () => {}; // main.js: shows the state after it changed (as Back/Forward does)
let shipped = []; // [{name, title, model, about, steps}] from lessons/index.json

// ---------- progress, kept in this browser only ----------
function progress() {
  try {
    const all = JSON.parse(localStorage.getItem(PROGRESS_KEY) ?? '{}');
    return all && typeof all === 'object' ? all : {};
  } catch {
    return {};
  }
}

function remember(index, right = undefined) {
  if (!open.name) return; // a file from disk has no stable name to keep progress under
  const all = progress();
  const mine = all[open.name] ?? { seen: [], right: [] };
  if (!mine.seen.includes(index)) mine.seen.push(index);
  if (right === true && !mine.right.includes(index)) mine.right.push(index);
  mine.last = index;
  all[open.name] = mine;
  try {
    localStorage.setItem(PROGRESS_KEY, JSON.stringify(all));
  } catch {
    // storage full or refused (a private window): progress is simply not kept
  }
}

// ---------- which model and settings a step runs with ----------
/** The model step `index` runs on: the last `model:` at or before it, else the lesson's. */
function modelAt(index) {
  for (let i = index; i >= 0; i -= 1) if (open.doc.steps[i].settings.model) return open.doc.steps[i].settings.model;
  return open.doc.model;
}

/** Step `index`'s settings with those of the steps before it that it does not override: what
 * the page shows when a student lands on it (a link, Back to it). */
function settingsUpTo(index) {
  const merged = {};
  for (let i = 0; i <= index; i += 1) Object.assign(merged, open.doc.steps[i].settings);
  return merged;
}

function focusElement(settings) {
  return settings.section ? document.getElementById(SECTIONS[settings.section]) : null;
}

// ---------- opening ----------
async function fetchShipped(name) {
  const response = await fetch(`lessons/${name}.md`);
  if (!response.ok) throw new Error(`there is no lesson "${name}" beside this page (lessons/${name}.md: ${response.status})`);
  return response.text();
}

/** Opens the lesson in `source`; `name`: a shipped lesson's (null for a file from disk).
 * `at`: the step to show; `apply`: set the page as the step says (false when a link or
 * Back/Forward already holds the whole state). Throws the format's errors. */
function openLesson(source, { name, file, at = 0, apply = true }) {
  const doc = parseLesson(source, { file, models: Object.keys(MODELS) });
  open.doc = doc;
  open.name = name;
  open.file = file;
  document.body.classList.add('lesson-open');
  $('lesson').hidden = false;
  $('lesson-list').hidden = true;
  $('lesson-step').hidden = false;
  $('lesson-name').textContent = doc.title;
  $('lessons-button').setAttribute('aria-pressed', 'true');
  showStep(Math.max(0, Math.min(at, doc.steps.length - 1)), { apply: apply ? 'all' : 'none' });
}

function closeLesson() {
  open.doc = null;
  open.name = null;
  document.body.classList.remove('lesson-open');
  for (const el of document.querySelectorAll('.lesson-focus, .lesson-focus-section')) el.classList.remove('lesson-focus', 'lesson-focus-section');
  $('lesson').hidden = true;
  $('lessons-button').setAttribute('aria-pressed', 'false');
  if (state.lesson !== null) {
    state.lesson = null;
    state.lessonStep = 0;
    newChoice();
    writeUrl();
  }
  publishLesson();
}

// ---------- a step ----------
/**
 * Shows step `index`. `apply`: 'own' (Next: only what this step sets, so a sentence the
 * student typed stays unless the step sets another), 'all' (landing on it: its settings and
 * those before it), 'none' (Back/Forward: the history entry holds the state).
 */
function showStep(index, { apply = 'own' } = {}) {
  const step = open.doc.steps[index];
  open.index = index;
  open.reply = null;
  open.revealed = false;
  open.answer = null;
  open.problem = null;
  const settings = { ...(apply === 'all' ? settingsUpTo(index) : apply === 'own' ? step.settings : {}) };
  // A head, layer or part the loaded model does not have is not applied: the step says why
  // (stepProblem) instead of drawing charts of a head that is not there.
  const model = modelAt(index);
  const config = model === session.modelName ? session.config : null;
  if (config) {
    if (settings.layer >= config.n_layers) delete settings.layer;
    if (settings.head >= config.n_heads) delete settings.head;
    if (settings.off?.some((s) => s.layer >= config.n_layers || s.head >= config.n_heads)) delete settings.off;
  }
  const before = { ...state, off: [...state.off] };
  state.lesson = open.name;
  state.lessonStep = index;
  for (const [key, field] of Object.entries(STEP_KEYS)) {
    if (settings[key] !== undefined) state[field] = Array.isArray(settings[key]) ? [...settings[key]] : settings[key];
  }
  if (settings.layer !== undefined || settings.head !== undefined) state.layerHeadFromUrl = true;
  if (settings.query !== undefined) state.query = settings.query === 'last' ? null : settings.query;
  // A question about the best head of a pattern colours the head grid by that pattern.
  const pattern = step.question?.answer === 'best-head' ? step.question.pattern : null;
  if (pattern && $('grid-pattern').value !== pattern) {
    $('grid-pattern').value = pattern;
    $('grid-pattern').dispatchEvent(new Event('change'));
  }
  newChoice(); // each step its own history entry
  if (apply !== 'none') {
    $('text').value = state.text;
    if (model !== session.modelName) {
      state.model = model;
      open.refocus = true; // once it is loaded, its charts laid out, the view is brought back
      // Loads it (a big one is offered first, and the step says so), then a pass and every chart.
      pickModel(model).then(() => { if (open.doc) renderQuestion(); });
    } else {
      showView(before);
    }
  }
  writeUrl();
  remember(index);
  renderStep();
  focusView(settingsUpTo(index));
}

function focusView(settings) {
  for (const el of document.querySelectorAll('.lesson-focus, .lesson-focus-section')) el.classList.remove('lesson-focus', 'lesson-focus-section');
  const el = focusElement(settings);
  if (!el) return;
  el.classList.add('lesson-focus');
  el.closest('section')?.classList.add('lesson-focus-section');
  if (presenting()) presentElement(el);
  else el.scrollIntoView({ block: 'start' });
}

/** Why step `index` cannot run on the model loaded, or null. */
function stepProblem() {
  const model = modelAt(open.index);
  if (model !== session.modelName) {
    return `This step runs on ${modelNamed(model)?.short ?? model}, which is not loaded yet${$('model-offer').hidden ? '' : ': download it with the button at the top'}.`;
  }
  const errors = checkLesson({ ...open.doc, steps: open.doc.steps.slice(0, open.index + 1) }, (m) => (m === session.modelName ? session.config : null), open.file);
  const mine = errors.find((e) => e.line >= open.doc.steps[open.index].line) ?? null;
  if (mine) return mine.message;
  const el = focusElement(settingsUpTo(open.index));
  if (el && el.closest('[hidden]')) return `${modelNamed(model)?.short ?? model} does not have the view this step is about.`;
  return null;
}

function renderStep() {
  const step = open.doc.steps[open.index];
  const count = open.doc.steps.length;
  const mine = open.name ? progress()[open.name] : null;
  const right = mine?.right?.length ?? 0;
  $('lesson-place').textContent = `Step ${open.index + 1} of ${count}${open.name ? ` · ${right} answered right` : ''}`;
  $('lesson-title').textContent = step.title;
  $('lesson-prose').replaceChildren(...step.prose.map((p) => paragraph(p)));
  $('lesson-back').disabled = open.index === 0;
  $('lesson-next').textContent = open.index === count - 1 ? 'Finish' : 'Next ›';
  renderQuestion();
  publishLesson();
}

/** A paragraph of prose: `code` and *emphasis* marked, everything else text. */
function paragraph(text) {
  const p = document.createElement('p');
  for (const part of text.split(/(`[^`]+`|\*[^*]+\*)/)) {
    if (!part) continue;
    if (/^`[^`]+`$/.test(part)) p.append(Object.assign(document.createElement('code'), { textContent: part.slice(1, -1) }));
    else if (/^\*[^*]+\*$/.test(part)) p.append(Object.assign(document.createElement('em'), { textContent: part.slice(1, -1) }));
    else p.append(part);
  }
  return p;
}

function button(label, onClick, className = 'secondary') {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = className;
  b.textContent = label;
  b.addEventListener('click', onClick);
  return b;
}

/** The question, its reply controls and, once answered or revealed, the answer on the
 * sentence shown. Drawn again after every pass: a new sentence, a new answer. */
function renderQuestion() {
  const q = open.doc?.steps[open.index].question;
  const box = $('lesson-question');
  open.problem = open.doc ? stepProblem() : null;
  $('lesson-problem').textContent = open.problem ?? '';
  $('lesson-problem').hidden = !open.problem;
  if (!q) {
    box.hidden = true;
    publishLesson();
    return;
  }
  box.hidden = false;
  $('lesson-ask').textContent = q.text;
  const replies = $('lesson-replies');
  const waiting = open.problem || !session.summary;
  open.answer = waiting ? null : computeAnswer(q);
  const a = open.answer;
  if (!a || a.none) {
    replies.replaceChildren();
    $('lesson-verdict').textContent = a?.none ? `No answer on this sentence: ${a.none}.` : '';
    $('lesson-then').textContent = '';
    $('lesson-reveal').hidden = true;
    publishLesson();
    return;
  }
  const answered = open.reply !== null || open.revealed;
  replies.replaceChildren(...replyControls(a, answered));
  $('lesson-reveal').hidden = answered;
  if (answered) {
    const verdict = open.reply === null ? 'The answer' : isRight(a, open.reply) ? 'Right.' : 'Not this time.';
    $('lesson-verdict').textContent = `${verdict} On this sentence the model's answer is ${a.values.answer}.`;
    $('lesson-then').textContent = q.then ? fillIn(q.then, a.values) : '';
  } else {
    $('lesson-verdict').textContent = '';
    $('lesson-then').textContent = '';
  }
  publishLesson();
}

function replyControls(a, answered) {
  const mark = (b, chosen, right) => {
    b.disabled = answered;
    if (answered && right) b.classList.add('lesson-right');
    if (answered && chosen && !right) b.classList.add('lesson-wrong');
    return b;
  };
  switch (a.ask) {
    case 'token':
      // The sentence's tokens, or the source's for a question about cross-attention.
      return (a.tokens ?? session.summary.tokens).map((t, i) => {
        const b = mark(button(labelOfToken(t), () => reply(i)), open.reply === i, a.correct === i);
        b.dataset.token = String(i);
        b.title = `Token ${i}`;
        if (i === a.query && !a.tokens) b.classList.add('lesson-query');
        return b;
      });
    case 'head': {
      const grid = document.createElement('div');
      grid.className = 'lesson-heads';
      grid.style.setProperty('--heads', String(session.config.n_heads));
      for (let layer = 0; layer < session.config.n_layers; layer += 1) {
        for (let head = 0; head < session.config.n_heads; head += 1) {
          const chosen = open.reply?.layer === layer && open.reply?.head === head;
          const b = mark(button(`L${layer} H${head}`, () => reply({ layer, head })), chosen, a.correct.layer === layer && a.correct.head === head);
          b.dataset.head = `${layer}.${head}`;
          b.setAttribute('aria-label', `layer ${layer}, head ${head}`);
          grid.append(b);
        }
      }
      return [grid];
    }
    case 'choice':
      return a.options.map((o) => {
        const b = mark(button(o, () => reply(o)), open.reply === o, a.correct === o);
        b.dataset.choice = o;
        return b;
      });
    default: {
      const input = Object.assign(document.createElement('input'), { type: 'number', id: 'lesson-number', min: '0', step: '1', disabled: answered });
      input.setAttribute('aria-label', 'Your answer');
      if (open.reply !== null) input.value = String(open.reply);
      const check = button('Check', () => {
        const n = Number(input.value);
        if (input.value === '' || !Number.isInteger(n)) {
          $('lesson-verdict').textContent = 'Type a whole number first.';
          return;
        }
        reply(n);
      });
      check.id = 'lesson-check';
      check.disabled = answered;
      return [input, check];
    }
  }
}

function reply(value) {
  if (!open.answer || open.answer.none) return;
  open.reply = value;
  remember(open.index, isRight(open.answer, value));
  renderStep();
}

function reveal() {
  open.revealed = true;
  renderQuestion();
}

function move(by) {
  if (!open.doc) return;
  const next = open.index + by;
  if (next >= open.doc.steps.length) {
    closeLesson();
    return;
  }
  if (next < 0) return;
  showStep(next, { apply: by > 0 ? 'own' : 'all' });
}

// ---------- the list of lessons, and files from disk ----------
async function loadIndex() {
  if (shipped.length) return shipped;
  const response = await fetch('lessons/index.json');
  if (!response.ok) throw new Error(`the list of lessons could not be read (${response.status})`);
  shipped = await response.json();
  return shipped;
}

async function showList() {
  $('lesson').hidden = false;
  $('lesson-list').hidden = false;
  $('lesson-step').hidden = true;
  $('lessons-button').setAttribute('aria-pressed', 'true');
  $('lesson-name').textContent = 'Lessons';
  const list = $('lesson-choices');
  try {
    const lessons = await loadIndex();
    const kept = progress();
    list.replaceChildren(...lessons.map((l) => {
      const item = document.createElement('li');
      const seen = kept[l.name]?.seen?.length ?? 0;
      const b = button(l.title, () => startShipped(l.name, kept[l.name]?.last ?? 0), 'link-like');
      b.dataset.lesson = l.name;
      const about = Object.assign(document.createElement('small'), { className: 'why', textContent: ` ${l.about} · ${modelNamed(l.model)?.short ?? l.model} · ${l.steps} steps${seen ? ` · ${seen} seen` : ''}` });
      item.append(b, about);
      return item;
    }));
  } catch (err) {
    list.replaceChildren(Object.assign(document.createElement('li'), { textContent: String(err.message ?? err) }));
  }
  publishLesson();
}

async function startShipped(name, at = 0, apply = true) {
  try {
    openLesson(await fetchShipped(name), { name, file: `lessons/${name}.md`, at, apply });
    $('lesson-file-error').hidden = true;
  } catch (err) {
    showFileError(err);
  }
}

function showFileError(err) {
  $('lesson').hidden = false;
  $('lesson-list').hidden = false;
  $('lesson-step').hidden = true;
  $('lesson-file-error').textContent = String(err.message ?? err);
  $('lesson-file-error').hidden = false;
  publishLesson();
}

async function openFile(file) {
  if (!file) return;
  if (file.size > 200_000) {
    showFileError(new Error(`${file.name} is ${thousands(file.size)} bytes, far longer than a lesson (at most 200,000)`));
    return;
  }
  try {
    openLesson(await file.text(), { name: null, file: file.name });
    $('lesson-file-error').hidden = true;
  } catch (err) {
    showFileError(err);
  }
}

function publishLesson() {
  lessonForTests.open = Boolean(open.doc);
  lessonForTests.name = open.name;
  lessonForTests.step = open.index;
  lessonForTests.steps = open.doc?.steps.length ?? 0;
  lessonForTests.answer = open.answer;
  lessonForTests.problem = open.problem;
  lessonForTests.revealed = open.revealed || open.reply !== null;
  lessonForTests.settings = open.doc ? settingsUpTo(open.index) : null;
  lessonForTests.model = open.doc ? modelAt(open.index) : null;
  lessonForTests.renders += 1;
}
const lessonForTests = { open: false, renders: 0 };
exposeForTests('Lesson', lessonForTests);

// ---------- wiring ----------
/** After a Back/Forward move: the lesson and step the entry holds, without setting the page
 * again (the entry holds the whole state). */
export function showLessonOfState() {
  if (!state.lesson) {
    if (open.doc && open.name) closeLesson();
    return;
  }
  if (state.lesson !== open.name) startShipped(state.lesson, state.lessonStep, false);
  else if (state.lessonStep !== open.index && state.lessonStep < open.doc.steps.length) showStep(state.lessonStep, { apply: 'none' });
}

/** Opens the lesson a link names, at its step: the link's own state when it holds a sentence
 * (a link the page wrote), else the step's settings (a link a teacher typed). */
export function openLinkedLesson() {
  if (!state.lesson || !LESSON_NAME.test(state.lesson)) return;
  startShipped(state.lesson, state.lessonStep, fromLink.text === undefined);
}

/** `show(before)` shows the page's state after it changed (main.js's Back/Forward view). */
export function wireLessons(show) {
  showView = show;
  const hideList = () => {
    $('lesson').hidden = true;
    $('lessons-button').setAttribute('aria-pressed', 'false');
  };
  $('lessons-button').addEventListener('click', () => {
    if (!$('lesson').hidden && !open.doc) hideList();
    else showList();
  });
  $('lesson-close').addEventListener('click', () => { if (open.doc) closeLesson(); else hideList(); });
  $('lesson-all').addEventListener('click', () => { closeLesson(); showList(); });
  $('lesson-back').addEventListener('click', () => move(-1));
  $('lesson-next').addEventListener('click', () => move(1));
  $('lesson-reveal').addEventListener('click', reveal);
  $('lesson-file').addEventListener('change', (event) => {
    openFile(event.target.files[0]);
    event.target.value = ''; // the same file, edited and chosen again, opens again
  });
  const drop = $('lesson');
  drop.addEventListener('dragover', (event) => { event.preventDefault(); drop.classList.add('lesson-drop'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('lesson-drop'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    drop.classList.remove('lesson-drop');
    openFile(event.dataTransfer?.files?.[0]);
  });
  document.addEventListener('tviz:pass', () => {
    if (!open.doc) return;
    if (open.refocus && session.modelName === modelAt(open.index)) {
      open.refocus = false;
      focusView(settingsUpTo(open.index));
    }
    renderQuestion();
  });
  // In presenter mode the lesson drives the slides: the answer first, then the next step.
  drivePresenter({
    move: (by) => {
      if (!open.doc) return false;
      const q = open.doc.steps[open.index].question;
      if (by > 0 && q && open.answer && !open.answer.none && open.reply === null && !open.revealed) reveal();
      else move(by);
      return true;
    },
    place: () => (open.doc ? focusElement(settingsUpTo(open.index)) : null),
  });
}
