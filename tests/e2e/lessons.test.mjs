// The Lessons panel (www/js/lessons.js) in headless Chromium: every step of every shipped
// lesson sets the page it says (link, section in view, head, step, model), and the answer the
// page expects is the one this test reads independently from what the charts drew; a typed
// sentence changes the answer; Back/Forward, links and progress; a teacher's own file with
// mistakes, or with HTML in it; presenter mode; screenshots at three sizes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { usePage, openPage as open, typeSentence, writtenUrl, ARTIFACTS, ROOT } from './helpers.mjs';
import { parseLesson } from '../../www/js/lesson-format.js';

const env = usePage();
const openPage = (url, options) => open(env, url, options);
const INDEX = JSON.parse(readFileSync(join(ROOT, 'www/lessons/index.json'), 'utf8'));
const lessonText = (name) => readFileSync(join(ROOT, `www/lessons/${name}.md`), 'utf8');

/** Waits until the lesson shows step `index` on its model with its answer (if it asks one)
 * computed on the pass the page shows; a large model's download offer is accepted. */
async function stepShown(page, index, model, asks) {
  for (;;) {
    const ready = await page.waitForFunction(({ index, model, asks }) => {
      const l = window.__tvizLesson;
      if (window.__tviz.picker === 'offer') return 'offer';
      const loaded = window.__tviz.model === model && window.__tviz.picker !== 'loading';
      return l.open && l.step === index && loaded && (!asks || l.answer) && 'shown';
    }, { index, model, asks }, { timeout: 180_000 });
    if ((await ready.jsonValue()) === 'shown') return;
    // A model not yet downloaded: the step says so, and the page offers it with its size.
    await page.waitForFunction(() => /is not loaded yet: download it with the button at the top/.test(window.__tvizLesson.problem ?? ''));
    assert.match(await page.textContent('#model-download'), /^Download \d+ MB$/);
    await page.click('#model-download');
    await page.waitForFunction(() => window.__tviz.picker !== 'offer');
  }
}

/** The answer read from what the page drew (not from the lesson's own computation). */
async function answerFromCharts(page, question) {
  await page.evaluate(() => window.__tvizFlush());
  switch (question.answer) {
    case 'token-count':
      return page.$$eval('#tokens li', (chips) => chips.length);
    case 'most-attended': {
      const { layer, head, query } = await page.evaluate(() => ({ layer: document.querySelector('#layer').value, head: document.querySelector('#head').value, query: window.__tvizLesson.answer.query }));
      await page.locator('#attention-canvas').scrollIntoViewIfNeeded();
      await page.waitForFunction(({ layer, head }) => {
        const d = window.__tvizDrawn.attention;
        const t = document.querySelectorAll('#tokens li').length;
        return d?.values?.length === t * t && document.querySelector('#attention-caption').textContent.includes(`layer ${layer}, head ${head}`);
      }, { layer, head });
      const weights = await page.evaluate(() => Array.from(window.__tvizDrawn.attention.values));
      const t = Math.round(Math.sqrt(weights.length));
      const row = weights.slice(query * t, query * t + t);
      return row.indexOf(Math.max(...row));
    }
    case 'cross-attended': {
      const query = await page.evaluate(() => window.__tvizLesson.answer.query);
      await page.locator('canvas[data-chart="cross"]').scrollIntoViewIfNeeded();
      await page.evaluate(() => window.__tvizFlush());
      const d = await page.evaluate(() => {
        const c = window.__tvizDrawn.cross;
        return { values: Array.from(c.values), s: c.col_labels.length, t: c.row_labels.length };
      });
      assert.equal(d.values.length, d.s * d.t);
      const row = d.values.slice(query * d.s, query * d.s + d.s);
      return row.indexOf(Math.max(...row));
    }
    case 'best-head': {
      await page.locator('#head-grid-canvas').scrollIntoViewIfNeeded();
      await page.waitForFunction((p) => document.querySelector('#grid-pattern').value === p, question.pattern);
      await page.evaluate(() => window.__tvizFlush());
      const { values, heads } = await page.evaluate(() => ({ values: Array.from(window.__tvizDrawn['head-grid'].values), heads: window.__tvizDrawn['head-grid'].labels.cols.length }));
      const scores = values.map((v) => (Number.isFinite(v) ? v : -Infinity));
      const best = scores.indexOf(Math.max(...scores));
      return { layer: Math.floor(best / heads), head: best % heads };
    }
    case 'next-token': {
      await page.locator('canvas[data-chart="prediction"]').scrollIntoViewIfNeeded();
      await page.evaluate(() => window.__tvizFlush());
      const bars = await page.evaluate(() => window.__tvizDrawn.prediction.plotted.bars);
      return bars.reduce((a, b) => (b.before > a.before ? b : a)).label;
    }
    case 'top-changes': {
      await page.waitForFunction(() => document.querySelectorAll('#off-table tbody tr').length > 0);
      const rows = await page.$$eval('#off-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
      const top = (col) => rows.reduce((a, b) => (parseFloat(b[col]) > parseFloat(a[col]) ? b : a))[0];
      return top(1) !== top(2) ? 'yes' : 'no';
    }
    default:
      throw new Error(`no independent check for ${question.answer}`);
  }
}

test('every step of every shipped lesson sets the page it names and expects the answer the charts show', async () => {
  const { page, problems } = await openPage(env.base);
  for (const entry of INDEX) {
    const lesson = parseLesson(lessonText(entry.name));
    // A link a teacher types: the lesson's name and nothing else.
    await page.goto(`${env.base}?lesson=${entry.name}`);
    await page.waitForFunction(() => window.__tviz?.ready !== undefined);
    let model = lesson.model;
    const carried = {};
    for (const [i, step] of lesson.steps.entries()) {
      if (step.settings.model) model = step.settings.model;
      Object.assign(carried, step.settings);
      const where = `${entry.name}, step ${i + 1} "${step.title}"`;
      await stepShown(page, i, model, Boolean(step.question));
      const shown = await page.evaluate(() => window.__tvizLesson);
      assert.equal(shown.problem, null, `${where}: ${shown.problem}`);
      assert.equal(await page.textContent('#lesson-title'), step.title, where);
      assert.match(await page.textContent('#lesson-place'), new RegExp(`^Step ${i + 1} of ${lesson.steps.length}`), where);
      const url = new URL(await writtenUrl(page));
      assert.equal(url.searchParams.get('lesson'), entry.name, where);
      assert.equal(url.searchParams.get('lstep'), String(i + 1), where);
      assert.equal(url.searchParams.get('model'), model, where);
      if (step.settings.text !== undefined) assert.equal(await page.inputValue('#text'), step.settings.text, where);
      if (step.settings.layer !== undefined) assert.equal(await page.inputValue('#layer'), String(step.settings.layer), where);
      if (step.settings.head !== undefined) assert.equal(await page.inputValue('#head'), String(step.settings.head), where);
      if (step.settings.step !== undefined) assert.equal(await page.inputValue('#step-slider'), String(step.settings.step), where);
      if (step.settings.temperature !== undefined) assert.equal(Number(await page.inputValue('#temperature')), step.settings.temperature, where);
      if (step.settings.off !== undefined) assert.equal(url.searchParams.get('off') ?? '', step.settings.off.map((s) => (s.part === 'position' ? 'pos' : s.part === 'mask' ? 'mask' : s.part === 'ffn' ? `f${s.layer}` : `h${s.layer}.${s.head}`)).join(','), where);
      if (carried.section) {
        // The view the step is about is outlined, in its section, and on screen.
        const place = await page.evaluate(() => {
          const el = document.querySelector('.lesson-focus');
          if (!el) return null;
          const r = el.getBoundingClientRect();
          return { id: el.id, onScreen: r.top < innerHeight && r.bottom > 0, hidden: Boolean(el.closest('[hidden]')) };
        });
        assert.ok(place, `${where}: a view is outlined`);
        assert.ok(place.onScreen && !place.hidden, `${where}: ${place.id} is in view`);
      }
      if (step.question) {
        const expected = await page.evaluate(() => window.__tvizLesson.answer);
        assert.equal(expected.none, undefined, `${where}: ${expected.none}`);
        const fromCharts = await answerFromCharts(page, step.question);
        const correct = step.question.answer === 'best-head' ? { layer: expected.correct.layer, head: expected.correct.head } : expected.correct;
        assert.deepEqual(correct, fromCharts, `${where}: the lesson expects what the charts show`);
        // Asked before it is answered: no verdict until the student replies or asks.
        assert.equal(await page.textContent('#lesson-verdict'), '', where);
        await page.click('#lesson-reveal');
        await page.waitForFunction(() => window.__tvizLesson.revealed);
        assert.match(await page.textContent('#lesson-verdict'), /On this sentence the model's answer is /, where);
        if (step.question.then) assert.doesNotMatch(await page.textContent('#lesson-then'), /\{[a-z]+\}/, `${where}: every blank filled`);
      }
      await page.click('#lesson-next');
    }
    await page.waitForFunction(() => !window.__tvizLesson.open);
    assert.doesNotMatch(await writtenUrl(page), /lesson=/, `${entry.name}: Finish closes the lesson and leaves the link`);
  }
  assert.deepEqual(problems, []);
});

test('a sentence the student types gets its own answer, and a right reply is kept as progress', async () => {
  const { page, context, problems } = await openPage(`${env.base}?lesson=tokens`);
  await stepShown(page, 0, 'lecture-post-ln', true);
  const first = await page.evaluate(() => window.__tvizLesson.answer.correct);
  await typeSentence(page, 'A much longer sentence of my own, with many more words in it than before.');
  await page.waitForFunction((n) => window.__tvizLesson.answer?.correct !== n, first);
  const mine = await page.evaluate(() => window.__tvizLesson.answer.correct);
  assert.equal(mine, await page.$$eval('#tokens li', (c) => c.length), 'the answer follows the typed sentence');
  assert.ok(mine > first);
  // A wrong reply says so and shows the right answer; the page does not count it.
  await page.fill('#lesson-number', String(mine + 1));
  await page.click('#lesson-check');
  await page.waitForFunction(() => window.__tvizLesson.revealed);
  assert.match(await page.textContent('#lesson-verdict'), new RegExp(`^Not this time\\. On this sentence the model's answer is ${mine}\\.`));
  // The next step, answered right.
  await page.click('#lesson-next');
  await stepShown(page, 1, 'lecture-post-ln', true);
  const count = await page.evaluate(() => window.__tvizLesson.answer.correct);
  await page.fill('#lesson-number', String(count));
  await page.click('#lesson-check');
  await page.waitForFunction(() => /^Right\./.test(document.querySelector('#lesson-verdict').textContent));
  assert.match(await page.textContent('#lesson-place'), /1 answered right/);
  // Kept in this browser: a second visit lists the lesson as seen and opens where it was left.
  const again = await openPage(env.base, { context });
  await again.page.click('#lessons-button');
  await again.page.waitForSelector('#lesson-choices [data-lesson=tokens]');
  assert.match(await again.page.textContent('#lesson-choices li:first-child'), /2 seen/);
  await again.page.click('#lesson-choices [data-lesson=tokens]');
  await stepShown(again.page, 1, 'lecture-post-ln', true);
  assert.deepEqual(problems, []);
  assert.deepEqual(again.problems, []);
});

test('Back and Forward move between steps; a link the page wrote opens the same step and sentence', async () => {
  const { page, context, problems } = await openPage(`${env.base}?lesson=attention`);
  await stepShown(page, 0, 'lecture-post-ln', true);
  await page.click('#lesson-next');
  await stepShown(page, 1, 'lecture-post-ln', false);
  await page.click('#lesson-next');
  await stepShown(page, 2, 'lecture-post-ln', false);
  assert.equal(await page.inputValue('#step-slider'), '8', 'the stepper at the masked scores');
  await writtenUrl(page);
  await page.goBack();
  await page.waitForFunction(() => window.__tvizLesson.step === 1);
  assert.match(await page.textContent('#lesson-title'), /How that row is computed/);
  await page.goForward();
  await page.waitForFunction(() => window.__tvizLesson.step === 2);
  // The page's own link to this step, opened anew, shows the step with its whole state.
  await typeSentence(page, 'Stars shine at night.');
  const link = await writtenUrl(page);
  assert.match(link, /lesson=attention&lstep=3/);
  const other = await openPage(link, { context });
  await stepShown(other.page, 2, 'lecture-post-ln', false);
  assert.equal(await other.page.inputValue('#text'), 'Stars shine at night.', "the link's own sentence, not the step's");
  assert.equal(await other.page.inputValue('#step-slider'), '8');
  assert.deepEqual(problems, []);
  assert.deepEqual(other.problems, []);
});

test("a teacher's file: each mistake named with its line beside the control, HTML refused, a good file opens", async () => {
  const { page, problems } = await openPage(env.base);
  await page.click('#lessons-button');
  const load = (name, text) => page.setInputFiles('#lesson-file', { name, mimeType: 'text/markdown', buffer: Buffer.from(text) });
  const good = lessonText('heads').replace('title: Heads and their jobs', 'title: My own lesson');
  for (const [text, message] of [
    [good.replace('section: head-grid', 'section: headgrid'), /mine\.md, line \d+: "headgrid" is not a section/],
    [good.replace('---\ntitle', '---\ntopic: x\ntitle'), /mine\.md, line 2: the front matter has no key "topic"/],
    [good.replace('Some', 'Some').replace('A layer runs', 'A <img src=x onerror="window.__pwned=1"> layer runs'), /mine\.md, line \d+: a lesson holds text, not HTML/],
  ]) {
    await load('mine.md', text);
    await page.waitForFunction((m) => new RegExp(m).test(document.querySelector('#lesson-file-error').textContent), message.source);
    assert.equal(await page.isVisible('#lesson-file-error'), true);
  }
  // A head the model does not have is named with its line once the step runs on the model.
  await load('mine.md', good.replace('## A head that looks one token back\n', '## A head that looks one token back\nhead: 9\n'));
  await page.click('#lesson-next');
  await page.waitForFunction(() => /line \d+: lecture-post-ln has 4 heads \(0-3\), so head 9 does not exist/.test(window.__tvizLesson.problem ?? ''));
  assert.equal(await page.isVisible('#lesson-problem'), true);
  // Markup in a title is only text: shown as typed, never run.
  await page.click('#lesson-all');
  const dropped = good.replace('## All heads at once', '## All heads <img src=x onerror="window.__pwned=1"> at once');
  await page.evaluate((text) => {
    const data = new DataTransfer();
    data.items.add(new File([text], 'dropped.md', { type: 'text/markdown' }));
    document.querySelector('#lesson').dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
  }, dropped);
  await page.waitForFunction(() => window.__tvizLesson.open && document.querySelector('#lesson-name').textContent === 'My own lesson');
  assert.match(await page.textContent('#lesson-title'), /<img src=x/);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator('#lesson img').count(), 0);
  assert.deepEqual(await page.evaluate(() => window.__cspViolations), []);
  assert.deepEqual(problems, []);
});

test('presenter mode steps through a lesson, the question before its answer; screenshots at three sizes', async () => {
  const { page, context, problems } = await openPage(`${env.base}?lesson=attention`, { viewport: { width: 1280, height: 720 } });
  await stepShown(page, 0, 'lecture-post-ln', true);
  await page.screenshot({ path: join(ARTIFACTS, 'lesson-1280x720.png') });
  await context.close();

  const wide = await openPage(`${env.base}?lesson=heads&lstep=2`, { viewport: { width: 1920, height: 1080 } });
  await stepShown(wide.page, 1, 'lecture-post-ln', true);
  await wide.page.click('#presenter');
  await wide.page.waitForFunction(() => document.body.classList.contains('presenter'));
  // The slide is the one that holds the step's view (the head finder, not the section's start).
  await wide.page.waitForFunction(() => {
    const el = document.querySelector('.lesson-focus');
    return el?.closest('section')?.classList.contains('presenting') && el.getClientRects().length > 0 && !el.closest('.off-slide');
  });
  assert.equal(await wide.page.isVisible('#head-grid-canvas'), true, 'the head grid is on the slide');
  assert.equal(await wide.page.isVisible('#lesson-question'), true);
  assert.equal(await wide.page.textContent('#lesson-verdict'), '', 'the question comes first');
  await wide.page.screenshot({ path: join(ARTIFACTS, 'lesson-presenter-1920x1080.png') });
  await wide.page.keyboard.press('PageDown');
  await wide.page.waitForFunction(() => window.__tvizLesson.revealed);
  assert.equal(await wide.page.evaluate(() => window.__tvizLesson.step), 1, 'PageDown shows the answer before moving on');
  await wide.page.keyboard.press('PageUp');
  await wide.page.waitForFunction(() => window.__tvizLesson.step === 0);
  assert.deepEqual(wide.problems, []);
  await wide.context.close();

  const phone = await openPage(`${env.base}?lesson=prediction`, { viewport: { width: 390, height: 844 } });
  await stepShown(phone.page, 0, 'lecture-post-ln', true);
  const sheet = await phone.page.locator('#lesson').boundingBox();
  assert.ok(sheet.width <= 390 && sheet.y > 300, `a sheet at the bottom of the phone's screen: ${JSON.stringify(sheet)}`);
  assert.equal(await phone.page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), true, 'no sideways scrolling');
  await phone.page.screenshot({ path: join(ARTIFACTS, 'lesson-390x844.png') });
  assert.deepEqual(phone.problems, []);
  assert.deepEqual(problems, []);
});
