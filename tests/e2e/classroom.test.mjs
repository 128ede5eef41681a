// End-to-end tests of the page as a class sees it: the first screen shows a chart, the
// contents bar never covers what it jumps to, presenter mode shows one section at a time in
// bigger text, every piece of jargon links to the glossary, and an error appears beside the
// control that caused it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { usePage, openPage as open, ARTIFACTS, MINILM } from './helpers.mjs';

const env = usePage();
// The page as a class first sees it: its default model, the lecture decoder.
const openPage = (viewport = { width: 1280, height: 720 }) => open(env, env.base, { viewport });

/** Waits until the status line's words settle: the CPU's threads started, WebGPU looked for. */
function statusSettled(page) {
  return page.waitForFunction(() => ['ready', 'off', 'failed'].includes(window.__tviz.cpuThreads)
    && !/starting/.test(document.getElementById('backend-why').textContent)
    && !/looking for WebGPU/.test(document.getElementById('gpu-status').textContent));
}

/** The header's height in CSS pixels. */
function headerHeight(page) {
  return page.evaluate(() => document.querySelector('header').getBoundingClientRect().height);
}

test('the first screen shows a chart at 1280x720 and at 1920x1080, and wide windows use their width', async () => {
  for (const model of [MINILM, null]) { // null: the page's own default, the lecture decoder
    for (const viewport of [{ width: 1280, height: 720 }, { width: 1920, height: 1080 }]) {
      const { page, context, problems } = await open(env, env.base, { viewport, model });
      const where = `${model ?? 'default'} at ${viewport.width}`;
      const first = await page.locator('#attention-canvas').boundingBox();
      assert.ok(first.y + 150 < viewport.height, `${where}: the heatmap starts at ${first.y}px`);
      // The status line changes once the CPU's threads are ready and WebGPU is found (or not):
      // the charts must not jump.
      await statusSettled(page);
      const settled = await page.locator('#attention-canvas').boundingBox();
      assert.equal(settled.y, first.y, `${where}: the heatmap moved from ${first.y}px to ${settled.y}px when the threads started`);
      const main = await page.locator('main').boundingBox();
      assert.ok(main.width > viewport.width * 0.9, `${where}: the content is only ${main.width}px wide`);
      assert.deepEqual(problems, []);
      await context.close();
    }
  }
});

test('a contents jump leaves the section heading below the sticky bar', async () => {
  const { page, context, problems } = await openPage();
  for (const id of ['norm-section', 'stepper-section', 'glossary']) {
    await page.click(`nav.toc a[href="#${id}"]`);
    await page.waitForFunction((s) => Math.abs(document.getElementById(s).getBoundingClientRect().top - 64) < 30, id);
    const [bar, heading] = await page.evaluate((s) => [
      document.querySelector('nav.toc').getBoundingClientRect().bottom,
      document.querySelector(`#${s} h2`).getBoundingClientRect().top,
    ], id);
    assert.ok(heading >= bar, `${id}: heading at ${heading}px under a bar ending at ${bar}px`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});

test('while stepping at 1280x720 the step\'s chart is on screen beside its equation', async () => {
  const { page, context, problems } = await openPage();
  await page.click('nav.toc a[href="#stepper-section"]');
  await page.waitForFunction(() => Math.abs(document.getElementById('stepper-section').getBoundingClientRect().top - 64) < 30);
  for (let i = 0; i < 3; i += 1) await page.click('#forward');
  await page.waitForFunction(() => /step 4 of/.test(document.getElementById('step-count').textContent));
  const chart = await page.locator('#step-canvas').boundingBox();
  const card = await page.locator('.step-card').boundingBox();
  assert.ok(chart.y + 150 < 720, `the step chart starts at ${chart.y}px`);
  assert.ok(Math.abs(chart.y - card.y) < 40, 'the chart sits beside the step card');
  assert.deepEqual(problems, []);
  await context.close();
});

test('presenter mode: bigger text, slides move by key and by button, Esc brings every section back', async () => {
  const { page, context, problems } = await openPage({ width: 1280, height: 720 });
  const normalSize = await page.evaluate(() => parseFloat(getComputedStyle(document.querySelector('#attention-section .explain')).fontSize));
  await page.click('#presenter');
  await page.waitForFunction(() => document.body.classList.contains('presenter'));
  const visible = () => page.evaluate(() => [...document.querySelectorAll('main > section.view')].filter((s) => s.offsetParent !== null).map((s) => s.id));
  assert.deepEqual(await visible(), ['attention-section']);
  const bigSize = await page.evaluate(() => parseFloat(getComputedStyle(document.querySelector('#attention-section .explain')).fontSize));
  assert.ok(bigSize >= normalSize * 1.3, `text ${normalSize}px -> ${bigSize}px`);
  await page.evaluate(() => document.activeElement?.blur());
  const place = () => page.textContent('#presenter-place');
  const first = await place();
  assert.match(first, /^Attention, part 1 of \d+ · section 1 of \d+$/);
  await page.keyboard.press('PageDown');
  await page.waitForFunction((old) => document.getElementById('presenter-place').textContent !== old, first);
  assert.match(await place(), /^Attention, part 2 of/);
  await page.click('#presenter-back');
  await page.waitForFunction((old) => document.getElementById('presenter-place').textContent === old, first);
  assert.equal(await page.isDisabled('#presenter-back'), true, 'the first slide has no previous one');
  // The contents bar's target, then ] and [ across a section's edge.
  await page.evaluate(() => document.querySelector('nav.toc a[href="#norm-section"]').click());
  await page.waitForFunction(() => document.getElementById('norm-section').classList.contains('presenting'));
  await page.keyboard.press('[');
  await page.waitForFunction(() => document.getElementById('position-section').classList.contains('presenting'));
  assert.match(await place(), /^Positional encoding(, part (\d+) of \2)? · section 2 of/, 'back from a section opens the last slide of the one before');
  await page.keyboard.press(']');
  await page.waitForFunction(() => document.getElementById('norm-section').classList.contains('presenting'));
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.body.classList.contains('presenter'));
  assert.ok((await visible()).length >= 6, 'every section is back');
  assert.equal(await page.locator('.off-slide').count(), 0, 'every block is back');
  assert.deepEqual(problems, []);
  await context.close();
});

// Walks every slide of presenter mode: each fits the screen (the page does not scroll), the
// sentence and the slide's place stay in view, no slide shows a note in place of a chart the
// model does not have, every chart on a slide is drawn and whole on screen, and every chart the
// page shows outside presenter mode is on some slide.
for (const [model, viewport] of [[null, { width: 1280, height: 720 }], [null, { width: 1920, height: 1080 }], [MINILM, { width: 1280, height: 720 }]]) {
  test(`presenter mode at ${viewport.width}x${viewport.height} (${model ?? 'default model'}): one screen a slide, every chart on one`, async () => {
    const { page, context, problems } = await open(env, env.base, { viewport, model });
    await statusSettled(page);
    const charts = await page.evaluate(() => [...document.querySelectorAll('main > section.view:not(#glossary) canvas[data-chart]')]
      .filter((c) => c.getClientRects().length && !c.closest('details:not([open])')).map((c) => c.dataset.chart));
    await page.click('#presenter');
    await page.evaluate(() => document.activeElement?.blur());
    const seen = new Set();
    const where = [];
    for (let n = 0; n < 60; n += 1) {
      // A chart from a model still loading (the twin) shows a line saying so, then the slides are
      // cut again with the chart.
      await page.waitForFunction(() => ![...document.querySelectorAll('section.presenting p.not-shown.loading')].some((p) => p.getClientRects().length));
      await page.waitForFunction(() => [...document.querySelectorAll('section.presenting canvas[data-chart]')]
        .filter((c) => c.getClientRects().length && !c.closest('details:not([open])')).every((c) => c.toDataURL().length > 3000));
      const slide = await page.evaluate(() => {
        const inView = (el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight + 1 && r.height > 0; };
        const canvases = [...document.querySelectorAll('section.presenting canvas[data-chart]')].filter((c) => c.getClientRects().length && !c.closest('details:not([open])'));
        return {
          place: document.getElementById('presenter-place').textContent,
          scrolls: document.documentElement.scrollHeight > innerHeight + 1,
          sentence: inView(document.getElementById('text')),
          placeShown: inView(document.getElementById('presenter-place')),
          placeholders: [...document.querySelectorAll('section.presenting p.not-shown')].filter((p) => p.getClientRects().length).map((p) => p.textContent),
          charts: canvases.map((c) => c.dataset.chart),
          cut: canvases.filter((c) => !inView(c)).map((c) => c.dataset.chart),
          last: document.getElementById('presenter-next').disabled,
        };
      });
      where.push(slide.place);
      assert.equal(slide.scrolls, false, `${slide.place}: the page scrolls`);
      assert.ok(slide.sentence, `${slide.place}: the sentence is off screen`);
      assert.ok(slide.placeShown, `${slide.place}: the slide's place is off screen`);
      assert.deepEqual(slide.placeholders, [], `${slide.place}: a placeholder`);
      assert.deepEqual(slide.cut, [], `${slide.place}: charts cut by the screen's edge`);
      slide.charts.forEach((c) => seen.add(c));
      if (slide.last) break;
      await page.keyboard.press('PageDown');
      await page.waitForFunction((old) => document.getElementById('presenter-place').textContent !== old, slide.place);
    }
    assert.ok(where.length >= 7, where.join(' | '));
    assert.deepEqual(charts.filter((c) => !seen.has(c)), [], `charts on no slide (slides: ${where.join(' | ')})`);
    await page.screenshot({ path: join(ARTIFACTS, `presenter-last-${viewport.width}x${viewport.height}${model ? `-${model}` : ''}.png`) });
    assert.deepEqual(problems, []);
    await context.close();
  });
}

test('jargon links to the glossary, and every glossary link has an entry', async () => {
  const { page, context, problems } = await openPage();
  const links = await page.evaluate(() => [...document.querySelectorAll('a.term')].map((a) => ({ href: a.getAttribute('href'), title: a.title, ok: !!document.getElementById(a.getAttribute('href').slice(1)) })));
  assert.ok(links.length >= 8, `${links.length} term links`);
  for (const l of links) {
    assert.ok(l.ok, `${l.href} has no glossary entry`);
    assert.ok(l.title.length > 10, `${l.href} has no short explanation on hover`);
  }
  const terms = await page.locator('.glossary dt').allTextContents();
  for (const word of ['kv head', 'L2 norm', 'cosine', 'logits', 'unembedding', 'feature', 'softmax', 'residual stream']) {
    assert.ok(terms.some((t) => t.includes(word)), `the glossary does not explain "${word}"`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});

// Text the model reads as no tokens at all: nothing on the decoder (its bytes make a space a
// token), nothing but spaces on MiniLM (its normalizer drops them).
test('text with no tokens: the message sits beside the text box and the chips go', async () => {
  for (const [model, typed] of [[null, ''], [MINILM, '   ']]) {
    const where = `${model ?? 'default'} with ${JSON.stringify(typed)}`;
    const { page, context, problems } = await open(env, env.base, { model });
    const renders = await page.evaluate(() => window.__tviz.renders);
    await page.fill('#text', typed);
    await page.waitForFunction((n) => window.__tviz.renders > n, renders);
    await page.waitForFunction(() => !document.getElementById('text-error').hidden);
    const [text, error] = [await page.locator('#text').boundingBox(), await page.locator('#text-error').boundingBox()];
    assert.ok(error.y >= text.y + text.height - 1 && error.y - (text.y + text.height) < 40, `${where}: the error is right under the text box`);
    assert.match(await page.textContent('#text-error'), /empty/i, where);
    assert.equal(await page.locator('#tokens li').count(), 0, where);
    assert.match(await page.textContent('#token-count'), /No tokens/, where);
    assert.equal(await page.isVisible('#error'), false, `${where}: nothing in the box at the top`);
    const again = await page.evaluate(() => window.__tviz.renders);
    await page.fill('#text', 'Back to a real sentence.');
    await page.waitForFunction((n) => window.__tviz.renders > n, again);
    await page.waitForFunction(() => document.getElementById('text-error').hidden && document.querySelectorAll('#tokens li').length > 3);
    assert.deepEqual(problems, [], where);
    await context.close();
  }
});

test('the glossary, the hints and the stepper describe the model that is loaded', async () => {
  const facts = {
    default: { has: ['128 of them', 'ReLU', 'from 128 to 512 features', 'byte-pair encoding', 'tied weights', 'one key/value head per query head'], not: ['384', 'GELU', '##ing', '[CLS]', 'has none'] },
    [MINILM]: { has: ['384 of them', 'GELU', 'from 384 to 1536 features', '##ing', '[CLS]', 'is an encoder and has none'], not: ['ReLU', 'a leading space belongs', 'tied weights', '128 of them'] },
  };
  for (const model of [null, MINILM]) {
    const { page, context, problems } = await open(env, env.base, { model });
    const glossary = await page.locator('.glossary').innerText(); // what shows: hidden variants are left out
    for (const text of facts[model ?? 'default'].has) assert.ok(glossary.includes(text), `${model ?? 'default'}: the glossary does not say "${text}"`);
    for (const text of facts[model ?? 'default'].not) assert.ok(!glossary.includes(text), `${model ?? 'default'}: the glossary says "${text}", which is another model's`);
    const terms = await page.locator('.glossary dt').allTextContents();
    for (const word of ['mask', 'positional encoding', 'temperature', 'top-k', 'top-p', 'byte-pair encoding', '<0xED>', 'attention sink', 'logit lens', 'induction head']) {
      assert.ok(terms.some((t) => t.includes(word)), `the glossary has no entry for "${word}"`);
    }
    // A greyed step says why this model has none, never a reason that is false for it.
    const absent = await page.$$eval('#diagram li.absent', (items) => items.map((li) => `${li.textContent}: ${li.title}`));
    if (model === null) {
      assert.ok(absent.length > 0, 'the lecture decoder has steps other models have');
      for (const a of absent) assert.doesNotMatch(a, /language-model head/, `the lecture decoder has a language-model head: ${a}`);
    }
    assert.deepEqual(problems, []);
    await context.close();
  }
});

test('while the model loads, the token hint names no model\'s special tokens', async () => {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route('**/model.safetensors', async (route) => { await held; await route.continue(); });
  await page.goto(env.base);
  await page.waitForFunction(() => document.querySelector('.chips-hint') !== null);
  const loading = await page.locator('.chips-hint').innerText();
  assert.doesNotMatch(loading, /\[CLS\]|\[SEP\]|##/, `while loading: ${loading}`);
  release();
  await page.waitForFunction(() => window.__tviz?.ready !== undefined);
  await page.evaluate(() => window.__tviz.ready);
  assert.match(await page.locator('.chips-hint').innerText(), /leading space/);
  await context.close();
});

test('the header keeps its height while the forward pass\'s words grow and shrink', async () => {
  for (const viewport of [{ width: 1280, height: 720 }, { width: 390, height: 844 }]) {
    const { page, context, problems } = await open(env, env.base, { viewport });
    // The status line's other words settle first (the threads start, WebGPU is looked for).
    await statusSettled(page);
    const height = () => headerHeight(page);
    const before = await height();
    // A continued pass reports what the KV cache gave: the longest words the line shows.
    const renders = await page.evaluate(() => window.__tviz.renders);
    await page.fill('#text', `${await page.inputValue('#text')} And then`);
    await page.waitForFunction((n) => window.__tviz.renders > n && /reused/.test(document.getElementById('timing').textContent), renders);
    assert.equal(await height(), before, `${viewport.width}: the header grew from ${before}px with "${await page.textContent('#timing')}"`);
    assert.equal(await page.getAttribute('#timing', 'title'), await page.textContent('#timing'));
    assert.deepEqual(problems, []);
    await context.close();
  }
});

/** Whether the status line's "Computed on" words are on screen whole (not cut by the column). */
function backendShown(page) {
  return page.evaluate(() => {
    const words = document.getElementById('backend').getBoundingClientRect();
    const cell = document.getElementById('backend').closest('dd').getBoundingClientRect();
    return { text: document.getElementById('backend').textContent, width: words.width, shown: words.width > 0 && words.right <= cell.right + 0.5 };
  });
}

test('on a laptop the header keeps its height while the start-up notes come and go', async () => {
  // The notes beside the model and the backend change while the page starts (threads starting,
  // WebGPU looked for, the weights cached); at 1280 they once pushed the status to a third row and
  // the first chart below the fold. Here the longest of them are shown at once, on a settled page.
  for (const viewport of [{ width: 1280, height: 720 }, { width: 1920, height: 1080 }]) {
    const { page, context, problems } = await open(env, env.base, { viewport });
    await statusSettled(page);
    const height = () => headerHeight(page);
    const before = await height();
    // Where the pass runs is read whole (a column once squeezed it to nothing at 1280 px).
    const settled = await backendShown(page);
    assert.ok(settled.shown, `${viewport.width}: "${settled.text}" is cut (${settled.width}px shown)`);
    // So are the GPU's line beside it and the pass's time (at 1280 the time's box once left the
    // GPU's line "GPU (software):…").
    const cut = await page.evaluate(() => ['gpu-status', 'timing'].map((id) => {
      const el = document.getElementById(id);
      const box = id === 'timing' ? el : el.closest('dd');
      return { id, text: el.textContent, cut: box.scrollWidth > box.clientWidth + 1 };
    }).filter((c) => c.cut));
    assert.deepEqual(cut, [], `${viewport.width}: cut in the header`);
    await page.evaluate(() => {
      document.getElementById('model-source').textContent = 'downloaded, caching… (46 MB of 46 MB)';
      document.getElementById('backend').textContent = 'CPU (WebAssembly)';
      document.getElementById('backend-why').textContent = '(2 threads starting)';
      document.getElementById('gpu-status').textContent = 'GPU: none (looking for WebGPU)';
    });
    assert.equal(await height(), before, `${viewport.width}: the header grew from ${before}px with the start-up notes`);
    const starting = await backendShown(page);
    assert.ok(starting.shown, `${viewport.width}: "${starting.text}" is cut (${starting.width}px shown)`);
    assert.deepEqual(problems, []);
    await context.close();
  }
});

test('a notice said twice is listed once (a second GPU loss, the same link note)', async () => {
  const { page, context, problems } = await openPage();
  await page.evaluate(() => {
    const loss = 'The GPU stopped (device lost). The page now computes on the CPU; the views show the same numbers.';
    window.__tvizNotice([loss]);
    window.__tvizNotice([loss, 'Another note.']);
  });
  assert.deepEqual(await page.locator('#notice-list li').allTextContents(), [
    'The GPU stopped (device lost). The page now computes on the CPU; the views show the same numbers.',
    'Another note.',
  ]);
  await page.click('#notice-close');
  await page.evaluate(() => window.__tvizNotice(['Another note.']));
  assert.deepEqual(await page.locator('#notice-list li').allTextContents(), ['Another note.'], 'dismissed notes may come back');
  assert.deepEqual(problems, []);
  await context.close();
});

test('on a phone the sticky contents bar is one row that scrolls sideways, every link in it', async () => {
  const { page, context, problems } = await open(env, env.base, { viewport: { width: 390, height: 844 } });
  const bar = await page.evaluate(() => {
    const toc = document.querySelector('.toc');
    const links = [...toc.querySelectorAll('a')].filter((a) => !a.hidden);
    return { height: toc.getBoundingClientRect().height, scrolls: toc.scrollWidth > toc.clientWidth, overflow: getComputedStyle(toc).overflowX, tops: new Set(links.map((a) => Math.round(a.getBoundingClientRect().top))).size };
  });
  assert.ok(bar.height <= 48, `the contents bar is ${bar.height}px tall on a 844px screen`);
  assert.equal(bar.tops, 1, 'the links sit in one row');
  assert.equal(bar.overflow, 'auto', 'the row scrolls');
  assert.deepEqual(problems, []);
  await context.close();
});
