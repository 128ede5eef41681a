// The lesson file format: a lesson is Markdown with a small front matter, one step a `##`
// heading (docs/lessons.md has the schema and an example). Pure functions (no page, no DOM),
// so Node runs the same code in tests/js/lesson-format.test.mjs.
//
//   ---
//   title: Attention for one query
//   model: lecture-post-ln
//   ---
//   ## A step's title
//   text: The cat sat on the mat.
//   section: attention
//   layer: 0
//   head: 3
//
//   Two to five sentences of prose; *emphasis* and `code` are the only markup.
//
//   ? Which token does the last one look at most?
//   answer: most-attended
//   then: It puts {weight} of its attention on {answer}.
//
// Every mistake is an error naming its line; text is only ever text (the page writes it with
// textContent, never as HTML).
import { parseOff, MAX_TEXT_CHARS } from './url-state.js';

/** The page's sections a step can show, by the name a lesson uses: the element's id. */
export const SECTIONS = {
  tokens: 'input-section',
  translation: 'translation-section',
  attention: 'attention-section',
  'one-query': 'one-query',
  'head-finder': 'head-finder',
  'head-grid': 'head-grid',
  position: 'position-section',
  norm: 'norm-section',
  residual: 'residual-section',
  lens: 'lens-section',
  stepper: 'stepper-section',
  prediction: 'prediction-section',
  switch: 'switch-section',
};

/** The answers the page computes from the live model, what a student is asked to give for
 * each (`ask`), and what each needs from the step. */
export const ANSWERS = {
  // The key token the step's head puts the most weight on, from the step's query token.
  'most-attended': { ask: 'token', needs: ['layer', 'head'] },
  // The source token the step's cross-attention head gives the most weight to, from the step's
  // query token among those the decoder wrote (an encoder-decoder).
  'cross-attended': { ask: 'token', needs: ['layer', 'head'], crossed: true },
  // The head with the highest score of a pattern on the sentence (`answer: best-head induction`).
  'best-head': { ask: 'head', patterns: ['previous', 'induction', 'duplicate', 'first', 'antecedent'] },
  // The most likely next token, among the model's four most likely.
  'next-token': { ask: 'choice', decoder: true },
  // How many tokens the model reads.
  'token-count': { ask: 'number' },
  // Whether the most likely next token changes with the step's parts switched off (yes / no).
  'top-changes': { ask: 'choice', decoder: true, needs: ['off'] },
};

const FRONT_KEYS = new Set(['title', 'model', 'about']);
const WHOLE = /^\d{1,6}$/;
// Step settings: each key's check, which returns the value or throws a message.
const SETTINGS = {
  text: (v) => {
    if ([...v].length > MAX_TEXT_CHARS) throw new Error(`the text is longer than ${MAX_TEXT_CHARS} characters`);
    return v;
  },
  model: (v) => v,
  section: (v) => {
    if (!Object.hasOwn(SECTIONS, v)) throw new Error(`"${v}" is not a section (one of ${Object.keys(SECTIONS).join(', ')})`);
    return v;
  },
  layer: whole('layer'),
  head: whole('head'),
  step: whole('step'),
  query: (v) => {
    if (v === 'last') return v;
    if (!WHOLE.test(v)) throw new Error(`query must be a token's position (from 0) or "last", not "${v}"`);
    return Number(v);
  },
  mode: (v) => {
    if (v !== 'heatmap' && v !== 'lines') throw new Error(`mode must be heatmap or lines, not "${v}"`);
    return v;
  },
  temperature: number('temperature', 0, 2),
  'top-k': (v) => { const n = whole('top-k')(v); if (n > 1000) throw new Error('top-k must be at most 1000'); return n; },
  'top-p': number('top-p', 0.05, 1),
  seed: whole('seed'),
  off: (v) => {
    if (v === 'none') return [];
    const off = parseOff(v.replace(/\s+/g, ''));
    if (!off) throw new Error(`off must name parts as a link does (h1.2 is layer 1 head 2, f0 layer 0's feed-forward, pos, mask; m after one means its mean) or be "none", not "${v}"`);
    return off;
  },
};
const QUESTION_KEYS = new Set(['ask', 'answer', 'then']);

function whole(name) {
  return (v) => {
    if (!WHOLE.test(v)) throw new Error(`${name} must be a whole number, not "${v}"`);
    return Number(v);
  };
}

function number(name, lo, hi) {
  return (v) => {
    const n = /^\d{1,3}(\.\d{1,4})?$/.test(v) ? Number(v) : NaN;
    if (!(n >= lo && n <= hi)) throw new Error(`${name} must be a number from ${lo} to ${hi}, not "${v}"`);
    return n;
  };
}

/** A mistake in a lesson file, with the line it is on (from 1). */
export class LessonError extends Error {
  constructor(line, message, file = 'the lesson') {
    super(`${file}, line ${line}: ${message}`);
    this.line = line;
  }
}

/**
 * Reads a lesson file. Returns `{ title, model, about, steps }`; each step `{ title, line,
 * settings: {key: value}, lines: {key: line}, prose: [paragraph], question?: { text, ask,
 * answer, pattern?, then?, line } }`. A step's settings hold what it changes; what it does not
 * name stays as the student left it. Throws a `LessonError` naming the line of the first mistake.
 * `models`: the names a lesson may name (the page's registry), to check them here.
 */
export function parseLesson(source, { file = 'the lesson', models = null } = {}) {
  const fail = (line, message) => { throw new LessonError(line, message, file); };
  if (typeof source !== 'string') fail(1, 'the file is not text');
  if (source.length > 200_000) fail(1, 'the file is longer than 200,000 characters, far longer than any lesson');
  const lines = source.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  if (lines[0].trim() !== '---') fail(1, 'a lesson starts with its front matter: a line "---", then title: and model:, then "---"');
  const front = {};
  let at = 1;
  for (; at < lines.length && lines[at].trim() !== '---'; at++) {
    const line = lines[at];
    if (!line.trim()) continue;
    if (line.trim().startsWith('#')) fail(at + 1, 'the front matter is not closed: a line "---" must come before the first step');
    const m = /^([a-z-]+):\s*(.*)$/.exec(line.trim());
    if (!m) fail(at + 1, `the front matter holds "key: value" lines, not "${short(line)}"`);
    if (!FRONT_KEYS.has(m[1])) fail(at + 1, `the front matter has no key "${m[1]}" (it takes ${[...FRONT_KEYS].join(', ')})`);
    if (!m[2]) fail(at + 1, `${m[1]} is empty`);
    front[m[1]] = { value: m[2], line: at + 1 };
  }
  if (at >= lines.length) fail(1, 'the front matter is not closed by a line "---"');
  for (const key of ['title', 'model']) if (!front[key]) fail(at + 1, `the front matter has no ${key}:`);
  if (models && !models.includes(front.model.value)) {
    fail(front.model.line, `this page has no model "${front.model.value}" (it has ${models.join(', ')})`);
  }
  const lesson = { title: front.title.value, model: front.model.value, about: front.about?.value ?? '', steps: [] };
  let step = null;
  let paragraph = [];
  let inSettings = false;
  const endParagraph = () => {
    if (paragraph.length) step.prose.push(paragraph.join(' '));
    paragraph = [];
  };
  for (at += 1; at < lines.length; at++) {
    const n = at + 1;
    const line = lines[at];
    const trimmed = line.trim();
    if (/^##\s/.test(trimmed)) {
      if (step) { endParagraph(); finishStep(step, fail); }
      const title = trimmed.replace(/^##\s+/, '');
      if (!title) fail(n, 'a step needs a title after "##"');
      step = { title, line: n, settings: {}, lines: {}, prose: [] };
      lesson.steps.push(step);
      inSettings = true;
      continue;
    }
    if (/^#\s/.test(trimmed) || /^#{3,}\s/.test(trimmed)) fail(n, 'each step starts with "## " and a title; other headings are not used');
    if (!step) {
      if (trimmed) fail(n, 'text before the first step: each step starts with "## " and a title');
      continue;
    }
    if (!trimmed) { inSettings = false; endParagraph(); continue; }
    if (/<\s*\/?\s*[a-z!]/i.test(trimmed)) fail(n, 'a lesson holds text, not HTML: remove the "<" tag');
    if (trimmed.startsWith('? ') || trimmed === '?') {
      endParagraph();
      inSettings = false;
      if (step.question) fail(n, 'a step asks one question');
      const text = trimmed.slice(1).trim();
      if (!text) fail(n, 'the question is empty');
      step.question = { text, line: n };
      continue;
    }
    const kv = /^([a-z-]+):\s*(.*)$/.exec(trimmed);
    if (step.question && kv && QUESTION_KEYS.has(kv[1]) && !paragraph.length) {
      readQuestionKey(step.question, kv[1], kv[2], n, fail);
      continue;
    }
    if (inSettings && kv) {
      if (!Object.hasOwn(SETTINGS, kv[1])) fail(n, `a step has no setting "${kv[1]}" (it takes ${Object.keys(SETTINGS).join(', ')})`);
      if (Object.hasOwn(step.settings, kv[1])) fail(n, `${kv[1]} is set twice in this step`);
      if (!kv[2]) fail(n, `${kv[1]} is empty`);
      try {
        step.settings[kv[1]] = SETTINGS[kv[1]](kv[2]);
      } catch (err) {
        fail(n, err.message);
      }
      if (kv[1] === 'model' && models && !models.includes(kv[2])) fail(n, `this page has no model "${kv[2]}" (it has ${models.join(', ')})`);
      step.lines[kv[1]] = n;
      continue;
    }
    if (step.question) fail(n, `after the question come only ask:, answer: and then: lines, not "${short(trimmed)}"`);
    inSettings = false;
    paragraph.push(trimmed);
  }
  if (!step) fail(lines.length, 'the lesson has no steps: each starts with "## " and a title');
  endParagraph();
  finishStep(step, fail);
  return lesson;
}

function readQuestionKey(question, key, value, n, fail) {
  if (Object.hasOwn(question, key)) fail(n, `${key} is given twice`);
  if (!value) fail(n, `${key} is empty`);
  if (key === 'answer') {
    const [kind, pattern, ...rest] = value.split(/\s+/);
    const spec = ANSWERS[kind];
    if (!spec) fail(n, `"${kind}" is not an answer the page computes (one of ${Object.keys(ANSWERS).join(', ')})`);
    if (spec.patterns) {
      if (!spec.patterns.includes(pattern)) fail(n, `${kind} needs a pattern: one of ${spec.patterns.join(', ')}`);
      question.pattern = pattern;
    } else if (pattern !== undefined) fail(n, `${kind} takes nothing after it`);
    if (rest.length) fail(n, `${kind} takes one word after it at most`);
    question.answer = kind;
    question.answerLine = n;
  } else if (key === 'ask') {
    if (!['token', 'head', 'choice', 'number'].includes(value)) fail(n, `ask must be token, head, choice or number, not "${value}"`);
    question.ask = value;
    question.askLine = n;
  } else {
    question.then = value;
  }
}

function finishStep(step, fail) {
  if (!step.prose.length) fail(step.line, `the step "${short(step.title)}" has no prose: say what to look at in a few sentences`);
  const q = step.question;
  if (!q) return;
  if (!q.answer) fail(q.line, 'a question needs an answer: line saying which answer the page computes');
  const spec = ANSWERS[q.answer];
  if (q.ask && q.ask !== spec.ask) fail(q.askLine, `${q.answer} is asked as ${spec.ask}, not ${q.ask}`);
  q.ask = spec.ask;
}

/**
 * Checks a lesson's numbers against the model each step runs on (`configOf(model)`: its
 * config, or null when not yet known). Returns the mistakes as `LessonError`s: a layer or
 * head the model does not have, a question the model cannot answer (a next token from an
 * encoder), a question that needs a setting no step before gave.
 */
export function checkLesson(lesson, configOf, file = 'the lesson') {
  const errors = [];
  let model = lesson.model;
  const carried = {};
  for (const step of lesson.steps) {
    if (step.settings.model) model = step.settings.model;
    Object.assign(carried, step.settings);
    const config = configOf(model);
    if (!config) continue;
    for (const [key, count] of [['layer', config.n_layers], ['head', config.n_heads]]) {
      if (step.settings[key] !== undefined && step.settings[key] >= count) {
        errors.push(new LessonError(step.lines[key], `${model} has ${count} ${key}s (0-${count - 1}), so ${key} ${step.settings[key]} does not exist`, file));
      }
    }
    for (const s of step.settings.off ?? []) {
      const bad = (s.layer !== undefined && s.layer >= config.n_layers) || (s.head !== undefined && s.head >= config.n_heads);
      if (bad) errors.push(new LessonError(step.lines.off, `${model} has ${config.n_layers} layers of ${config.n_heads} heads: off names a part it does not have`, file));
    }
    const q = step.question;
    if (!q) continue;
    const spec = ANSWERS[q.answer];
    if (spec.decoder && config.lm_head === 'None') {
      errors.push(new LessonError(q.answerLine, `${model} is an encoder and predicts no next token, so ${q.answer} has no answer`, file));
    }
    if (spec.crossed && !(config.encoder_layers > 0)) {
      errors.push(new LessonError(q.answerLine, `${model} is not an encoder-decoder: it has no cross-attention, so ${q.answer} has no answer`, file));
    }
    for (const need of spec.needs ?? []) {
      const have = carried[need] !== undefined && !(need === 'off' && !carried.off.length);
      if (!have) errors.push(new LessonError(q.answerLine, `${q.answer} needs a ${need}: set it in this step or one before`, file));
    }
  }
  return errors;
}

function short(text) {
  const chars = [...text];
  return chars.length > 40 ? `${chars.slice(0, 40).join('')}…` : text;
}
