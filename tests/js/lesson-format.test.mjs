// The lesson file format (www/js/lesson-format.js): every shipped lesson reads and is listed in
// www/lessons/index.json as it is, and each kind of mistake is an error naming its line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { parseLesson, checkLesson, LessonError } from '../../www/js/lesson-format.js';

const LESSONS = new URL('../../www/lessons/', import.meta.url);
const MODELS = ['lecture-post-ln', 'lecture-pre-ln', 'lecture-reverse', 'minilm-l6', 'smollm2-135m'];
const CONFIGS = {
  'lecture-post-ln': { n_layers: 3, n_heads: 4, lm_head: 'Tied' },
  'minilm-l6': { n_layers: 6, n_heads: 12, lm_head: 'None' },
};

const GOOD = `---
title: A lesson
model: lecture-post-ln
---

## First step
text: The cat sat.
section: attention
layer: 0
head: 3

Some prose about the step.

? Which token?
answer: most-attended
then: It is {answer}.
`;

/** The error `source` gives: its line and message. */
function mistake(source, options = {}) {
  try {
    parseLesson(source, { models: MODELS, ...options });
  } catch (err) {
    assert.ok(err instanceof LessonError, `a LessonError, not ${err}`);
    return { line: err.line, message: err.message };
  }
  assert.fail('no error');
}

test('every shipped lesson reads, names models the page has, and is listed in index.json as it is', () => {
  const index = JSON.parse(readFileSync(new URL('index.json', LESSONS), 'utf8'));
  const files = readdirSync(LESSONS).filter((f) => f.endsWith('.md')).map((f) => f.replace(/\.md$/, '')).sort();
  assert.deepEqual(index.map((l) => l.name).sort(), files, 'each lesson file listed once');
  for (const entry of index) {
    const lesson = parseLesson(readFileSync(new URL(`${entry.name}.md`, LESSONS), 'utf8'), { file: entry.name, models: MODELS });
    assert.deepEqual(entry, { name: entry.name, title: lesson.title, model: lesson.model, about: lesson.about, steps: lesson.steps.length });
    assert.deepEqual(checkLesson(lesson, (m) => CONFIGS[m] ?? null, entry.name), [], `${entry.name} fits its models`);
    for (const step of lesson.steps) assert.ok(step.prose.length >= 1, `${entry.name}: "${step.title}" says something`);
    assert.ok(lesson.steps.some((s) => s.question), `${entry.name} asks at least one question`);
  }
});

test('a good lesson reads into steps with settings, prose and a question', () => {
  const lesson = parseLesson(GOOD, { models: MODELS });
  assert.equal(lesson.title, 'A lesson');
  assert.equal(lesson.steps.length, 1);
  const [step] = lesson.steps;
  assert.deepEqual(step.settings, { text: 'The cat sat.', section: 'attention', layer: 0, head: 3 });
  assert.equal(step.lines.head, 10);
  assert.deepEqual(step.prose, ['Some prose about the step.']);
  assert.equal(step.question.answer, 'most-attended');
  assert.equal(step.question.ask, 'token');
  assert.equal(step.question.then, 'It is {answer}.');
  // Parts off as a link writes them, and none.
  const off = parseLesson(GOOD.replace('head: 3', 'head: 3\noff: h1.2, f0m, pos'), { models: MODELS });
  assert.deepEqual(off.steps[0].settings.off.map((s) => s.part), ['head', 'ffn', 'position']);
  assert.deepEqual(parseLesson(GOOD.replace('head: 3', 'off: none'), { models: MODELS }).steps[0].settings.off, []);
});

test('each kind of mistake is an error naming its line', () => {
  const cases = [
    ['no front matter', GOOD.replace('---\n', ''), 1, /starts with its front matter/],
    ['front matter not closed', GOOD.replace(/---\n\n##/, '\n##'), 5, /not closed/],
    ['unknown front matter key', GOOD.replace('model:', 'author: me\nmodel:'), 3, /no key "author"/],
    ['front matter without a model', GOOD.replace('model: lecture-post-ln\n', ''), 3, /no model:/],
    ['a model the page does not have', GOOD.replace('model: lecture-post-ln', 'model: gpt-5'), 3, /no model "gpt-5"/],
    ['unknown section', GOOD.replace('section: attention', 'section: attentoin'), 8, /"attentoin" is not a section/],
    ['a layer that is not a number', GOOD.replace('layer: 0', 'layer: one'), 9, /layer must be a whole number/],
    ['unknown setting', GOOD.replace('head: 3', 'head: 3\ncolour: red'), 11, /no setting "colour"/],
    ['a setting given twice', GOOD.replace('head: 3', 'head: 3\nhead: 2'), 11, /set twice/],
    ['bad parts off', GOOD.replace('head: 3', 'off: h1'), 10, /off must name parts/],
    ['a temperature out of range', GOOD.replace('head: 3', 'temperature: 7'), 10, /temperature must be a number from 0 to 2/],
    ['a question without an answer', GOOD.replace('answer: most-attended\n', ''), 14, /needs an answer/],
    ['an answer the page does not compute', GOOD.replace('answer: most-attended', 'answer: the-meaning'), 15, /"the-meaning" is not an answer/],
    ['best-head without its pattern', GOOD.replace('answer: most-attended', 'answer: best-head'), 15, /needs a pattern/],
    ['an ask that does not fit the answer', GOOD.replace('answer: most-attended', 'ask: number\nanswer: most-attended'), 15, /asked as token, not number/],
    ['prose after the question', GOOD.replace('then: It is {answer}.', 'then: It is {answer}.\nMore prose.'), 17, /only ask:, answer: and then:/],
    ['two questions', GOOD.replace('then: It is {answer}.', 'then: It is {answer}.\n? Again?'), 17, /one question/],
    ['text before the first step', GOOD.replace('## First step', 'Hello\n## First step'), 6, /before the first step/],
    ['a step with no prose', GOOD.replace('Some prose about the step.\n', ''), 6, /has no prose/],
    ['a heading of another level', GOOD.replace('Some prose', '### Sub\nSome prose'), 12, /"## "/],
    ['HTML in the prose', GOOD.replace('Some prose about the step.', 'Some <script>alert(1)</script> prose.'), 12, /not HTML/],
    ['an image tag', GOOD.replace('Some prose about the step.', '<img src=x onerror=alert(1)>'), 12, /not HTML/],
    ['no steps at all', '---\ntitle: A\nmodel: lecture-post-ln\n---\n', 5, /no steps/],
  ];
  for (const [what, source, line, message] of cases) {
    const got = mistake(source);
    assert.equal(got.line, line, `${what}: line ${got.line} (${got.message})`);
    assert.match(got.message, message, what);
    assert.match(got.message, new RegExp(`line ${line}:`), `${what}: the message names the line`);
  }
  assert.doesNotThrow(() => parseLesson(GOOD, { file: 'mine.md', models: MODELS }), 'the good file has no mistake');
  assert.match(mistake(GOOD.replace('layer: 0', 'layer: x'), { file: 'mine.md' }).message, /^mine\.md, line 9: /, 'the file is named');
});

test('numbers are checked against the model each step runs on, naming the line', () => {
  const outOfRange = parseLesson(GOOD.replace('head: 3', 'head: 7'), { models: MODELS });
  const [error] = checkLesson(outOfRange, (m) => CONFIGS[m] ?? null, 'mine.md');
  assert.equal(error.line, 10);
  assert.match(error.message, /mine\.md, line 10: lecture-post-ln has 4 heads \(0-3\), so head 7 does not exist/);
  // A step on another model is checked against that model.
  const encoder = parseLesson(GOOD.replace('head: 3', 'head: 3\nmodel: minilm-l6').replace('answer: most-attended', 'answer: next-token'), { models: MODELS });
  const [noHead] = checkLesson(encoder, (m) => CONFIGS[m] ?? null);
  assert.match(noHead.message, /minilm-l6 is an encoder and predicts no next token/);
  assert.equal(noHead.line, 16);
  // A question that needs parts switched off when none are.
  const nothingOff = parseLesson(GOOD.replace('answer: most-attended', 'answer: top-changes'), { models: MODELS });
  assert.match(checkLesson(nothingOff, (m) => CONFIGS[m] ?? null)[0].message, /top-changes needs a off/);
  // Cross-attention only in an encoder-decoder.
  const crossed = parseLesson(GOOD.replace('answer: most-attended', 'answer: cross-attended'), { models: MODELS });
  assert.match(checkLesson(crossed, (m) => CONFIGS[m] ?? null)[0].message, /lecture-post-ln is not an encoder-decoder: it has no cross-attention/);
  assert.deepEqual(checkLesson(crossed, () => ({ n_layers: 2, n_heads: 4, lm_head: 'Tied', encoder_layers: 2 })), []);
  // A model whose config is not known yet is not checked (it is, once loaded).
  assert.deepEqual(checkLesson(outOfRange, () => null), []);
});

test('a lesson file is text: bad input is an error, not a crash', () => {
  assert.match(mistake(42).message, /not text/);
  assert.match(mistake('x'.repeat(200_001)).message, /longer than 200,000/);
  assert.equal(mistake('\uFEFF' + GOOD.replace('section: attention', 'section: nowhere')).line, 8, 'a byte-order mark does not shift lines');
  assert.equal(mistake(GOOD.replace(/\n/g, '\r\n').replace('section: attention', 'section: nowhere')).line, 8, 'Windows line ends');
});
