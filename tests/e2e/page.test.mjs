// End-to-end tests of the release page in Debian's headless Chromium, driven by
// playwright-core. Run by scripts/test.sh after `bash scripts/build-page.sh`:
//   node --test tests/e2e/
// Screenshots go to tests/artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { usePage, openPage as open, typeSentence, isShownAndBlank, ARTIFACTS, CHARTS, MINILM } from './helpers.mjs';
import { MODELS, DEFAULT_MODEL } from '../../www/js/models.js';

// Views of the model itself (its position tables, a norm's gamma and beta), identical for
// every sentence under 64 tokens.
const MODEL_ONLY = new Set(['pos-table', 'pos-sin-table', 'pos-waves', 'pos-sin-waves', 'pos-sim', 'pos-sin', 'norm-params']);

const env = usePage();
// The page's default model, or MiniLM for the tests that know its tokens, layers, heads, steps
// and context (512 tokens).
const openPage = (url = env.base, viewport) => open(env, url, { viewport });
const openMiniLM = (url = env.base, viewport) => open(env, url, { viewport, model: MINILM });

async function snapshot(page) {
  // Scroll every chart into view, as a student would, so that it is drawn.
  for (const c of CHARTS) {
    await page.locator(`canvas[data-chart="${c}"]`).scrollIntoViewIfNeeded();
    await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
  }
  return page.evaluate((charts) => ({
    tokens: [...document.querySelectorAll('#tokens li')].map((li) => li.textContent),
    pixels: Object.fromEntries(charts.map((c) => [c, document.querySelector(`canvas[data-chart="${c}"]`).toDataURL()])),
    shapes: document.getElementById('step-shapes').textContent,
    title: document.getElementById('step-title').textContent,
    renders: window.__tviz.renders,
    error: ['error', 'text-error'].map((id) => document.getElementById(id)).filter((e) => !e.hidden).map((e) => e.textContent).join(' ') || null,
  }), CHARTS);
}

function blank(dataUrl) {
  // A canvas that was never drawn on encodes to a tiny PNG.
  return dataUrl.length < 3000;
}

test('a page of another origin cannot show this one in a frame', async () => {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  await page.setContent(`<iframe src="${env.base}"></iframe>`, { waitUntil: 'load' }); // about:blank: another origin
  const frame = page.frames().find((f) => f !== page.mainFrame());
  assert.ok(frame, 'no frame');
  assert.ok(!frame.url().startsWith(env.base), `the frame shows the page (${frame.url()})`);
  await context.close();
});

test('one Content-Security-Policy in the page and from the server: it holds, and the page keeps it', async () => {
  const res = await fetch(env.base);
  const header = res.headers.get('content-security-policy');
  const html = await res.text();
  const meta = html.match(/<meta http-equiv="Content-Security-Policy" content="([^"]*)">/)?.[1];
  assert.equal(`${meta}; frame-ancestors 'self'`, header, 'the <meta> policy (for any server) and the served header differ, beyond the frame-ancestors only a header can carry');
  assert.equal(res.headers.get('x-frame-options'), 'SAMEORIGIN');
  for (const directive of ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "object-src 'none'", "base-uri 'none'"]) {
    assert.ok(header.split('; ').includes(directive), `${directive} is missing from ${header}`);
  }
  assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'an inline script: the policy would block it');

  const { page, context, problems } = await openPage(); // asserts no violation while loading
  await page.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads), null, { timeout: 60000 });
  assert.equal(await page.evaluate(() => window.__tviz.cpuThreads), 'ready', 'the worker threads run the wasm under the policy');
  await typeSentence(page, 'A policy that holds for every pass.');
  assert.deepEqual(await page.evaluate(() => window.__cspViolations), []);
  assert.deepEqual(problems, []);

  // The policy is enforced, and the recorder sees it: an injected inline script does not run.
  await page.evaluate(() => {
    const script = document.createElement('script');
    script.textContent = 'window.__injected = true;';
    document.head.append(script);
  });
  await page.waitForFunction(() => window.__cspViolations.length > 0);
  assert.equal(await page.evaluate(() => window.__injected), undefined);
  assert.match((await page.evaluate(() => window.__cspViolations))[0], /^script-src-elem blocked inline/);
  await context.close();
});

// The fixed equations a student sees without scrolling: whether each is typeset, and its text.
const equationsOnScreen = () => [...document.querySelectorAll('[data-tex]')]
  .filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.top < innerHeight && r.bottom > 0; })
  .map((el) => ({ tex: el.dataset.tex, typeset: el.querySelector('.katex') !== null, text: el.textContent }));
// The same, as a condition to wait for (a page function cannot call another: the page's
// policy allows no eval): some equation is on screen, and every one there is typeset.
const everyEquationOnScreenTypeset = () => {
  const shown = [...document.querySelectorAll('[data-tex]')].filter((el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.top < innerHeight && r.bottom > 0; });
  return shown.length > 0 && shown.every((el) => el.querySelector('.katex') !== null);
};

test('the equations on screen are typeset by KaTeX', async () => {
  const { page, context } = await openPage();
  await page.waitForFunction(everyEquationOnScreenTypeset);
  await context.close();
});

test('KaTeX arriving after the first view: the equations show their TeX, then are typeset', async () => {
  // The page runs main.js before KaTeX's script (index.html): hold that script back until the
  // charts are drawn, as a slow connection might.
  let release;
  const held = new Promise((ok) => { release = ok; });
  const context = await env.browser.newContext({ viewport: { width: 1280, height: 720 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(String(err)));
  await page.route('**/katex/katex.min.js', async (route) => { await held; await route.continue(); });
  await page.goto(env.base, { waitUntil: 'commit' }); // the load event waits for the held script
  await page.waitForFunction(() => window.__tviz?.firstSettledAt !== undefined || window.__tviz?.failed);
  assert.equal(await page.evaluate(() => window.__tviz.failed ?? null), null);
  const before = await page.evaluate(equationsOnScreen);
  assert.ok(before.length > 0, 'no equation on the first screen');
  for (const e of before) assert.deepEqual([e.typeset, e.text], [false, e.tex], 'without KaTeX an equation shows its TeX');
  release();
  await page.waitForFunction(everyEquationOnScreenTypeset);
  assert.deepEqual(problems, []);
  await context.close();
});

test('two sentences give different tokens, views and shapes', async () => {
  const { page, context, problems } = await openMiniLM();
  await page.keyboard.press('Tab'); // move focus off the text box so arrow keys drive the stepper
  await page.click('#step-title');
  for (let i = 0; i < 12; i += 1) await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => /step 13 of/.test(document.getElementById('step-count').textContent));
  const first = await snapshot(page);
  assert.equal(first.error, null);
  assert.ok(first.tokens.length > 5);
  for (const c of CHARTS) assert.ok(!blank(first.pixels[c]), `${c} is blank`);
  assert.match(first.title, /\(layer 0\)/, 'twelve steps in, the stepper is inside layer 0');

  await typeSentence(page, 'Stock markets in Tokyo fell sharply on Monday after weak export data.');
  const second = await snapshot(page);
  assert.equal(second.error, null);
  assert.notDeepEqual(second.tokens, first.tokens, 'token chips did not change');
  assert.ok(second.tokens.some((t) => t.startsWith('tokyo')), `chips: ${second.tokens}`);
  for (const c of CHARTS) {
    if (MODEL_ONLY.has(c)) assert.equal(second.pixels[c], first.pixels[c], `${c} shows the model's table and should not change`);
    else assert.notEqual(second.pixels[c], first.pixels[c], `${c} did not change with the sentence`);
  }
  assert.equal(second.title, first.title, 'the stepper stays on the same step');
  assert.notEqual(second.shapes, first.shapes, 'the stepper shapes did not follow the new token count');
  assert.match(second.shapes, new RegExp(`\\b${second.tokens.length} (query |key )?tokens\\b`));
  assert.doesNotMatch(second.shapes, /layer\d\./, 'an internal tensor name on screen');
  assert.deepEqual(problems, []);
  await context.close();
});

test('hovering the heatmap shows the attention weight, and the grid selects heads', async () => {
  const { page, context, problems } = await openMiniLM();
  await page.locator('#attention-canvas').scrollIntoViewIfNeeded();
  const box = await page.locator('#attention-canvas').boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
  const tip = page.locator('#tooltip');
  await tip.waitFor({ state: 'visible' });
  assert.match(await tip.textContent(), /"[^"]+" → "[^"]+": 0\.\d{4}/);

  const before = await snapshot(page);
  await page.locator('#grid-canvas').scrollIntoViewIfNeeded();
  const grid = await page.locator('#grid-canvas').boundingBox();
  const g = await page.evaluate(() => ({ ...window.__tvizDrawn.grid.grid, width: document.querySelector('#grid-canvas').width }));
  const scale = grid.width / g.width;
  const at = (layer, head) => [grid.x + (g.left + (head + 0.5) * g.cell_width) * scale, grid.y + (g.top + (layer + 0.5) * g.cell_height) * scale];
  await page.mouse.click(...at(4, 10));
  await page.waitForFunction(() => document.getElementById('layer').value === '4' && document.getElementById('head').value === '10');
  const after = await snapshot(page);
  assert.notEqual(after.pixels.attention, before.pixels.attention, 'the large heatmap shows the chosen head');
  const layer = 4;
  await page.focus('#grid-canvas');
  await page.keyboard.press('ArrowUp');
  await page.waitForFunction((want) => document.getElementById('layer').value === want, String(layer - 1));
  assert.deepEqual(problems, []);
  await context.close();
});

test('a shared URL restores sentence, layer, head and step', async () => {
  const { page, context, problems } = await openMiniLM();
  await typeSentence(page, 'Colourless green ideas sleep furiously.');
  await page.selectOption('#layer', '3');
  await page.selectOption('#head', '7');
  await page.click('#step-title');
  for (let i = 0; i < 20; i += 1) await page.keyboard.press('ArrowRight');
  // Wait for the state asserted: the label, then the address bar (never read right after input).
  await page.waitForFunction(() => /step 21 of/.test(document.getElementById('step-count').textContent));
  await page.waitForFunction(() => /[?&]step=20(&|$)/.test(location.search) && /[?&]head=7(&|$)/.test(location.search));
  const url = page.url();
  const original = await snapshot(page);
  assert.match(url, /layer=3/);
  assert.match(url, /head=7/);
  assert.match(url, /step=20/);

  const reopened = await openPage(url);
  const restored = await snapshot(reopened.page);
  assert.equal(await reopened.page.inputValue('#text'), 'Colourless green ideas sleep furiously.');
  assert.equal(await reopened.page.inputValue('#layer'), '3');
  assert.equal(await reopened.page.inputValue('#head'), '7');
  assert.equal(restored.title, original.title);
  assert.equal(restored.shapes, original.shapes);
  assert.deepEqual(restored.tokens, original.tokens);
  assert.equal(restored.pixels.attention, original.pixels.attention, 'the same head is drawn');
  assert.equal(restored.pixels.step, original.pixels.step, 'the same step is drawn');
  assert.deepEqual([...problems, ...reopened.problems], []);
  await reopened.context.close();
  await context.close();
});

test('exports are valid PNG and SVG files', async () => {
  const { page, context, problems } = await openMiniLM();
  const box = page.locator('.export[data-for="attention"]');
  const [png] = await Promise.all([page.waitForEvent('download'), box.getByText('Export PNG').click()]);
  const pngBytes = readFileSync(await png.path());
  assert.deepEqual([...pngBytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.ok(pngBytes.length > 5000);
  const [svg] = await Promise.all([page.waitForEvent('download'), box.getByText('Export SVG').click()]);
  const svgText = readFileSync(await svg.path(), 'utf8');
  assert.match(svgText, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.match(svgText, /<\/svg>\s*$/);
  assert.ok((svgText.match(/<rect/g) ?? []).length > 50, 'the SVG has vector cells');
  assert.match(svgText, /\[CLS\]/);
  // The exported SVG parses as XML in the browser.
  const parses = await page.evaluate((text) => !new DOMParser().parseFromString(text, 'image/svg+xml').querySelector('parsererror'), svgText);
  assert.ok(parses);
  const [norm] = await Promise.all([page.waitForEvent('download'), page.locator('.export[data-for="norm"]').getByText('Export SVG').click()]);
  assert.match(readFileSync(await norm.path(), 'utf8'), /^<svg/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('bad input gets a plain message and keeps the previous views', async () => {
  const { page, context, problems } = await openMiniLM();
  const before = await snapshot(page);
  await typeSentence(page, '   ');
  const empty = await snapshot(page);
  assert.match(empty.error, /empty/);
  assert.equal(empty.pixels.attention, before.pixels.attention, 'the previous view stays');
  await typeSentence(page, 'word '.repeat(600));
  const long = await snapshot(page);
  assert.equal(long.error, null);
  assert.equal(long.tokens.length, 512);
  assert.match(await page.textContent('#truncated'), /only the first 512/);
  await typeSentence(page, '日本語 🎉 مرحبا \u0007 e\u0301');
  const unicode = await snapshot(page);
  assert.equal(unicode.error, null);
  assert.ok(unicode.tokens.length >= 5);
  assert.deepEqual(problems, []);
  await context.close();
});

test('screenshots at projector and phone sizes', async () => {
  for (const [name, viewport] of [['1280x720', { width: 1280, height: 720 }], ['390x844', { width: 390, height: 844 }]]) {
    const { page, context, problems } = await openPage(env.base, viewport);
    await page.waitForFunction(() => window.__tvizSettled());
    // The page's default model: a chart it does not have says why instead.
    for (const c of CHARTS) assert.ok(!(await isShownAndBlank(page, c)), `${name}: ${c} is still blank after the page settled`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `${name}: the page scrolls sideways by ${overflow}px`);
    await page.screenshot({ path: join(ARTIFACTS, `page-${name}.png`) });
    await page.screenshot({ path: join(ARTIFACTS, `page-${name}-full.png`), fullPage: true });
    assert.deepEqual(problems, []);
    await context.close();
  }
});

// The default model's files (a link's model that fails gives way to the default instead).
const DEFAULT_WEIGHTS = `**/${MODELS[DEFAULT_MODEL].files.weights.path}`;
const DEFAULT_CONFIG = `**/${MODELS[DEFAULT_MODEL].files.config.path}`;

test('a missing model file gives a plain message, not a blank page', async () => {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  await page.route(DEFAULT_WEIGHTS, (route) => route.fulfill({ status: 404, body: 'gone' }));
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  await page.goto(env.base);
  await page.waitForFunction(() => window.__tviz?.failed);
  const message = await page.textContent('#error');
  assert.match(message, /could not be loaded/);
  assert.match(message, /model\.safetensors/);
  assert.deepEqual(pageErrors, []);
  await context.close();
});

test('a corrupt model file is reported in plain words', async () => {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  await page.route(DEFAULT_WEIGHTS, (route) => route.fulfill({ status: 200, body: Buffer.from('definitely not safetensors') }));
  await page.goto(env.base);
  await page.waitForFunction(() => window.__tviz?.failed);
  assert.match(await page.textContent('#error'), /not valid safetensors/);
  writeFileSync(join(ARTIFACTS, 'corrupt-model-message.txt'), await page.textContent('#error'));
  await context.close();
});

test('an absurd config is refused in plain words that name the field, never a WebAssembly trap', async () => {
  for (const layers of [1e8, 2 ** 32 - 1, 1e18]) {
    const context = await env.browser.newContext();
    const page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    await page.route(DEFAULT_CONFIG, async (route) => {
      const response = await route.fetch();
      const config = await response.json();
      config.n_layers = layers;
      await route.fulfill({ response, body: JSON.stringify(config) });
    });
    await page.goto(env.base);
    await page.waitForFunction(() => window.__tviz?.failed);
    const message = await page.textContent('#error');
    assert.match(message, /n_layers/, message);
    assert.doesNotMatch(message, /unreachable|RuntimeError|memory/i, message);
    assert.ok(message.length < 700, `a message of ${message.length} characters`);
    assert.deepEqual(pageErrors, []);
    await context.close();
  }
});

test('a pass shared among threads (as many as the cores, or four by the link) gives the numbers of one thread', async () => {
  const sentence = 'Threads share every dense layer of this forward pass.';
  const read = async (query) => {
    const { page, context, problems } = await openMiniLM(`${env.base}?layer=5&head=3&step=100${query}`);
    await page.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads), null, { timeout: 60000 });
    const threads = await page.evaluate(() => window.__tviz.cpuThreads);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    await typeSentence(page, sentence);
    await page.evaluate(() => window.__tvizFlush());
    const result = await page.evaluate(() => ({
      backend: document.getElementById('backend').textContent,
      attention: Array.from(window.__tvizDrawn.attention.values),
      step: Array.from(window.__tvizDrawn.step.values),
    }));
    assert.deepEqual(problems, []);
    await context.close();
    return { threads, cores, ...result };
  };
  const shared = await read('');
  const four = await read('&threads=4');
  const alone = await read('&threads=1');
  assert.equal(shared.threads, 'ready', 'the README server makes the page cross-origin isolated, so its threads start');
  assert.equal(shared.backend, `CPU (WebAssembly, ${Math.min(shared.cores, 8)} threads)`);
  assert.equal(four.backend, 'CPU (WebAssembly, 4 threads)');
  assert.equal(alone.threads, 'off');
  assert.equal(alone.backend, 'CPU (WebAssembly)');
  assert.ok(shared.attention.length > 100 && shared.step.length > 100);
  for (const [name, run] of [['the cores\' threads', shared], ['four threads', four]]) {
    assert.deepEqual(run.attention, alone.attention, `layer 5 attention differs between one thread and ${name}`);
    assert.deepEqual(run.step, alone.step, `the last layer's output differs between one thread and ${name}`);
  }
});
