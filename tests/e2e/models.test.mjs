// The model picker: the registry's sizes, the size said before a download, the progress bar,
// the browser's Cache API on a second visit (and a damaged cached copy downloaded again), the
// model in the link, a damaged file refused in plain words, and the page without a Cache API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { usePage, openPage as open, typeSentence, ROOT, writtenUrl, MINILM } from './helpers.mjs';
import { MODELS, DEFAULT_MODEL, labelOf, downloadBytes } from '../../www/js/models.js';
import { CACHE_NAME } from '../../www/js/model-files.js';

const env = usePage();
const openPage = (url, options) => open(env, url, options);
/** MiniLM, the model these tests pick SmolLM2 from (a download it offers first, then back). */
const openMiniLM = (url, options) => open(env, url, { ...options, model: MINILM });
const SMOLLM2 = MODELS['smollm2-135m'];
const GGUF = SMOLLM2.files.weights.path;
const DEFAULT = MODELS[DEFAULT_MODEL];
const DEFAULT_WEIGHTS = DEFAULT.files.weights.path;

/** Opens `url`, recording the page's requests for model files in `requests`. */
function recording(requests) {
  return (page) => page.on('request', (r) => { if (r.url().includes('/models/')) requests.push(new URL(r.url()).pathname.slice(1)); });
}

/** The address bar's model= value. */
const modelInUrl = async (page) => new URL(await writtenUrl(page)).searchParams.get('model');

/** Waits until the picker has finished loading a model (or failed to). */
async function loadSettled(page) {
  await page.waitForFunction(() => window.__tviz.picker === 'idle');
}

/** Waits until every download has been written to the cache (it is written in the background). */
async function cacheWritten(page) {
  await page.waitForFunction(() => window.__tviz.loads.every((l) => l.stored !== null));
}

/** SmolLM2 is the model shown, in the picker and the link, with no error. */
async function assertSmolLM2Shown(page) {
  assert.deepEqual(await page.evaluate(() => [window.__tviz.model, window.__tviz.modelError]), ['smollm2-135m', null]);
  assert.equal(await page.inputValue('#model'), 'smollm2-135m');
  assert.equal(await modelInUrl(page), 'smollm2-135m');
  assert.equal(await page.isVisible('#error'), false);
}

/** The engine refused SmolLM2's file: said at the top in plain words, MiniLM kept and working. */
/** SmolLM2 was refused and the page shows `kept` (MiniLM when it was picked from MiniLM, the
 * default model when a link asked for SmolLM2), which still works. */
async function assertRefused(page, why, kept = 'minilm-l6') {
  const error = await page.evaluate(() => window.__tviz.modelError);
  assert.match(error, /SmolLM2-135M .*could not be loaded: /);
  assert.match(error, why);
  assert.ok(await page.isVisible('#error'));
  assert.match(await page.textContent('#error'), /SmolLM2-135M .*could not be loaded/);
  assert.equal(await page.inputValue('#model'), kept, 'the picker shows the model the page has');
  assert.equal(await page.evaluate(() => window.__tviz.model), kept);
  await typeSentence(page, 'The page keeps working.');
  // [CLS] the page keeps working . [SEP] for MiniLM; <|endoftext|> first for the lecture decoder.
  const chips = await page.locator('#tokens li').allTextContents();
  if (kept === 'minilm-l6') assert.equal(chips.length, 7, 'MiniLM still tokenizes');
  else assert.ok(chips.length >= 5 && /endoftext/.test(chips[0]), `the model shown still tokenizes: ${chips}`);
  assert.equal(await modelInUrl(page), kept);
}

/** Size in the cache of the page's copy of `path` (null: not cached). */
function cachedSize(page, path) {
  return page.evaluate(async ([name, p]) => {
    const cache = await caches.open(name);
    const res = await cache.match(new URL(p, document.baseURI).href);
    return res ? (await res.blob()).size : null;
  }, [CACHE_NAME, path]);
}

/** Replaces the cached copy of `path` by its first `keep` bytes (an interrupted download). */
function truncateCached(page, path, keep) {
  return page.evaluate(async ([name, p, n]) => {
    const cache = await caches.open(name);
    const url = new URL(p, document.baseURI).href;
    const whole = await (await cache.match(url)).arrayBuffer();
    await cache.put(url, new Response(whole.slice(0, n)));
  }, [CACHE_NAME, path, keep]);
}

test('the registry names every model file with its true size, and the build ships them', () => {
  for (const model of Object.values(MODELS)) {
    for (const file of Object.values(model.files)) {
      // The lecture's models are committed in trained/, the fetched ones set up in models/.
      const source = model.committed ? file.path.replace(/^models\//, 'trained/') : file.path;
      assert.equal(statSync(join(ROOT, source)).size, file.bytes, `${source}: the registry's size`);
      assert.equal(statSync(join(ROOT, 'dist', file.path)).size, file.bytes, `${file.path} is in the built page`);
    }
  }
  assert.equal(labelOf(SMOLLM2), 'SmolLM2-135M · decoder · 98 MB');
  assert.equal(labelOf(MODELS['minilm-l6']), 'MiniLM-L6 · encoder · 46 MB');
  // No model is preloaded: a second visit reads them from the Cache API, and SmolLM2 only
  // downloads when a student picks it.
  assert.doesNotMatch(readFileSync(join(ROOT, 'dist/index.html'), 'utf8'), /rel="preload"[^>]*models\//);
});

test('picking SmolLM2 says its size first, then shows the download\'s progress to 100%, then the model, and back', async () => {
  const requests = [];
  const { page, context, problems } = await openMiniLM(env.base, { route: recording(requests) });
  assert.equal(await page.inputValue('#model'), 'minilm-l6');
  assert.deepEqual(await page.locator('#model option').allTextContents(), Object.values(MODELS).map(labelOf));
  assert.equal(await modelInUrl(page), 'minilm-l6');

  await page.selectOption('#model', 'smollm2-135m');
  await page.waitForFunction(() => window.__tviz.picker === 'offer');
  assert.match(await page.textContent('#model-offer-text'), /^SmolLM2-135M: 98 MB, download\?/);
  assert.equal(await page.textContent('#model-download'), 'Download 98 MB');
  assert.deepEqual(requests.filter((r) => r === GGUF), [], 'nothing is downloaded before the student agrees');
  assert.equal(await page.evaluate(() => window.__tviz.model), 'minilm-l6', 'the page still shows MiniLM');

  await page.click('#model-download');
  await loadSettled(page);
  assert.deepEqual(requests.filter((r) => r === GGUF), [GGUF], 'one download');
  const progress = await page.evaluate(() => ({
    ...window.__tviz.progress,
    value: document.getElementById('loading-progress').value,
    max: document.getElementById('loading-progress').max,
    amount: document.getElementById('loading-amount').textContent,
  }));
  const total = downloadBytes(SMOLLM2);
  assert.equal(progress.model, 'smollm2-135m');
  assert.ok(progress.updates > 2, `the bar moved during the download (${progress.updates} updates)`);
  assert.deepEqual([progress.done, progress.value, progress.max], [total, total, total], 'the bar reached 100%');
  assert.equal(progress.amount, '98.4 of 98.4 MB');
  await cacheWritten(page);
  assert.equal(await cachedSize(page, GGUF), total, 'kept in the Cache API');

  await assertSmolLM2Shown(page);
  assert.match(await page.textContent('#model-source'), /^downloaded, now cached$/); // written: cacheWritten above
  assert.equal(await page.locator('#layer option').count(), 30);
  // The prose follows the model: its head count, and its norm (RMSNorm before each sublayer).
  assert.match(await page.textContent('#grid-canvas + figcaption'), /^All 270 heads/);
  assert.equal(await page.isVisible('#norm-section p[data-when="pre-norm rms-norm"]'), true);
  assert.equal(await page.isVisible('#norm-section p[data-when="post-norm layer-norm"]'), false);
  // SmolLM2 computes on the page's threads too.
  await page.waitForFunction(() => window.__tviz.cpuThreads === 'ready', null, { timeout: 60000 });
  assert.equal(await page.textContent('#backend'), 'CPU (WebAssembly, 2 threads)');
  await page.evaluate(() => window.__tvizFlush());
  // A view the model does not have says why instead of drawing.
  assert.match(await page.textContent('.not-shown[data-for="pos-table"]'), /no learned position table/);
  assert.equal(await page.isVisible('canvas[data-chart="pos-table"]'), false);
  // SmolLM2's own tokenizer: byte-level pieces, no [CLS] or [SEP].
  await typeSentence(page, 'The capital of France is');
  assert.deepEqual(await page.locator('#tokens li').count(), 5);

  // Back to MiniLM: it is cached, so it loads without asking.
  await page.selectOption('#model', 'minilm-l6');
  await page.waitForFunction(() => window.__tviz.model === 'minilm-l6' && window.__tviz.picker === 'idle');
  assert.equal(await page.isVisible('#model-offer'), false);
  assert.equal(await modelInUrl(page), 'minilm-l6');
  assert.equal(await page.locator('#layer option').count(), 6);
  assert.match(await page.textContent('#grid-canvas + figcaption'), /^All 72 heads/);
  assert.equal(await page.isVisible('#norm-section p[data-when="post-norm layer-norm"]'), true);
  assert.equal(await page.isVisible('#norm-section p[data-when="pre-norm rms-norm"]'), false);
  assert.match(await page.textContent('#model-source'), /from the browser's cache/);
  // The same threads serve MiniLM again.
  await page.waitForFunction(() => window.__tviz.cpuThreads === 'ready', null, { timeout: 60000 });
  assert.equal(await page.textContent('#backend'), 'CPU (WebAssembly, 2 threads)');
  await page.evaluate(() => window.__tvizFlush());
  assert.equal(await page.isVisible('canvas[data-chart="pos-table"]'), true);
  assert.equal(await page.isVisible('.not-shown[data-for="pos-table"]'), false);

  // Back in history returns to SmolLM2 (from the cache), Forward to MiniLM.
  await page.goBack();
  await page.waitForFunction(() => window.__tviz.model === 'smollm2-135m' && window.__tviz.picker === 'idle');
  assert.equal(await page.inputValue('#model'), 'smollm2-135m');
  await page.goForward();
  await page.waitForFunction(() => window.__tviz.model === 'minilm-l6' && window.__tviz.picker === 'idle');
  assert.equal(await page.inputValue('#model'), 'minilm-l6');
  assert.deepEqual(problems, []);
  await context.close();
});

test('declining the download keeps the model shown; the picker works from the keyboard', async () => {
  const requests = [];
  // From MiniLM, the next model down the picker is SmolLM2, which asks first.
  const { page, context, problems } = await openMiniLM(env.base, { route: recording(requests) });
  await page.focus('#model');
  await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => window.__tviz.picker === 'offer');
  assert.equal(await page.inputValue('#model'), 'smollm2-135m');
  assert.equal(await page.textContent('#model-keep'), 'Keep MiniLM-L6');
  await page.focus('#model-keep');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('model-offer').hidden);
  assert.equal(await page.inputValue('#model'), 'minilm-l6');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'model', 'the focus goes back to the picker');
  assert.equal(await modelInUrl(page), 'minilm-l6');
  assert.deepEqual(requests.filter((r) => r === GGUF), []);
  assert.deepEqual(problems, []);
  await context.close();
});

test('Cancel stops a download under way and keeps the model shown', async () => {
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const hold = async (page) => {
    // The GGUF's response waits until the test lets it go, so the download is surely under way.
    await page.route(`**/${GGUF}`, async (route) => {
      await held;
      await route.continue().catch(() => {}); // the page gave up on it
    });
  };
  const { page, context, problems } = await openPage(env.base, { route: hold });
  await page.selectOption('#model', 'smollm2-135m');
  await page.waitForFunction(() => window.__tviz.picker === 'offer');
  await page.click('#model-download');
  await page.waitForFunction(() => window.__tviz.picker === 'loading' && !document.getElementById('loading').hidden);
  assert.equal(await page.isVisible('#loading-progress'), true);
  assert.match(await page.textContent('#loading-amount'), /^0\.0 of 98\.4 MB$/);
  await page.click('#loading-cancel');
  await page.waitForFunction(() => window.__tviz.picker === 'idle' && document.getElementById('loading').hidden);
  release();
  assert.equal(await page.inputValue('#model'), DEFAULT_MODEL);
  assert.equal(await page.evaluate(() => window.__tviz.model), DEFAULT_MODEL);
  assert.equal(await page.isVisible('#error'), false, 'a cancelled download is no error');
  assert.equal(await page.isVisible('#model-source'), true);
  assert.equal(await cachedSize(page, GGUF), null, 'nothing half-downloaded is kept');
  await typeSentence(page, 'Still the same model.');
  assert.equal(await modelInUrl(page), DEFAULT_MODEL);
  assert.deepEqual(problems, []);
  await context.close();
});

test('model= in a link opens that model; a second visit reads it from the Cache API with no request', async () => {
  const link = `${env.base}?model=smollm2-135m`;
  const first = [];
  const visit1 = await openPage(link, { route: recording(first) });
  assert.deepEqual(first.filter((r) => r === GGUF), [GGUF]);
  await assertSmolLM2Shown(visit1.page);
  await cacheWritten(visit1.page);
  assert.deepEqual(visit1.problems, []);
  await visit1.page.close();

  // The same browser context: the same storage, as a student's second visit.
  const second = [];
  const visit2 = await openPage(link, { route: recording(second), context: visit1.context });
  assert.deepEqual(second.filter((r) => r === GGUF), [], 'no request for the GGUF');
  const load = await visit2.page.evaluate(() => window.__tviz.loads.find((l) => l.model === 'smollm2-135m'));
  assert.equal(load.source, 'cache');
  await assertSmolLM2Shown(visit2.page);
  assert.equal(await visit2.page.textContent('#model-source'), 'from the browser\'s cache');
  assert.deepEqual(visit2.problems, []);
  await visit1.context.close();
});

test('a visit notes the models it stored; without the note the cache is not asked and the model is downloaded', async () => {
  const visit1 = await openPage(env.base);
  await cacheWritten(visit1.page);
  const noteKey = `${CACHE_NAME}:${DEFAULT_MODEL}`;
  assert.equal(await visit1.page.evaluate((k) => localStorage.getItem(k), noteKey), '1', 'the stored model is noted');
  assert.equal(await cachedSize(visit1.page, DEFAULT_WEIGHTS), DEFAULT.files.weights.bytes);
  await visit1.page.evaluate((k) => localStorage.removeItem(k), noteKey); // as a copy stored before notes were kept
  await visit1.page.close();

  const requests = [];
  const visit2 = await openPage(env.base, { route: recording(requests), context: visit1.context });
  assert.deepEqual(requests.filter((r) => r === DEFAULT_WEIGHTS), [DEFAULT_WEIGHTS], 'downloaded, the cache not asked');
  assert.equal(await visit2.page.evaluate(() => window.__tviz.loads.at(-1).source), 'network');
  await cacheWritten(visit2.page);
  assert.equal(await visit2.page.evaluate((k) => localStorage.getItem(k), noteKey), '1', 'noted again');
  await visit2.page.close();

  // Noted: the next visit reads the cache and asks the server for nothing.
  const again = [];
  const visit3 = await openPage(env.base, { route: recording(again), context: visit1.context });
  assert.deepEqual(again.filter((r) => r === DEFAULT_WEIGHTS), []);
  assert.equal(await visit3.page.evaluate(() => window.__tviz.loads.at(-1).source), 'cache');
  assert.deepEqual([visit1.problems, visit2.problems, visit3.problems], [[], [], []]);
  await visit1.context.close();
});

test('a truncated copy in the cache is discarded and downloaded again', async () => {
  // A first visit keeps both models in the cache.
  const visit1 = await openPage(env.base);
  await visit1.page.selectOption('#model', 'smollm2-135m');
  await visit1.page.waitForFunction(() => window.__tviz.picker === 'offer');
  await visit1.page.click('#model-download');
  await loadSettled(visit1.page);
  await cacheWritten(visit1.page);
  await truncateCached(visit1.page, DEFAULT_WEIGHTS, 1_000_000);
  await truncateCached(visit1.page, GGUF, 5_000_000);
  assert.equal(await cachedSize(visit1.page, GGUF), 5_000_000);
  await visit1.page.close();

  // The default model: its label says it was downloaded again.
  const requests = [];
  const visit2 = await openPage(env.base, { route: recording(requests), context: visit1.context });
  assert.deepEqual(requests.filter((r) => r === DEFAULT_WEIGHTS), [DEFAULT_WEIGHTS]);
  await cacheWritten(visit2.page);
  assert.match(await visit2.page.textContent('#model-source'), /^downloaded again \(the cached copy was incomplete\), now cached$/);
  assert.equal(await cachedSize(visit2.page, DEFAULT_WEIGHTS), DEFAULT.files.weights.bytes);
  const reloaded = await visit2.page.evaluate(() => window.__tviz.loads.at(-1));
  assert.deepEqual(reloaded.discarded, [DEFAULT_WEIGHTS]);

  // SmolLM2, picked: the picker offers the download again (its cached copy is not whole).
  await visit2.page.selectOption('#model', 'smollm2-135m');
  await visit2.page.waitForFunction(() => window.__tviz.picker === 'offer');
  await visit2.page.click('#model-download');
  await loadSettled(visit2.page);
  await cacheWritten(visit2.page);
  assert.deepEqual(requests.filter((r) => r === GGUF), [GGUF]);
  const smol = await visit2.page.evaluate(() => window.__tviz.loads.find((l) => l.model === 'smollm2-135m'));
  assert.deepEqual([smol.source, smol.discarded], ['network', [GGUF]]);
  assert.equal(await cachedSize(visit2.page, GGUF), downloadBytes(SMOLLM2));
  await assertSmolLM2Shown(visit2.page);
  assert.deepEqual(visit1.problems, []);
  assert.deepEqual(visit2.problems, []);
  await visit1.context.close();
});

test('a damaged SmolLM2 file is reported in plain words and the page keeps MiniLM (picked, or in a link)', async () => {
  const damaged = async (page) => {
    // A GGUF header that ends in the middle of its metadata.
    await page.route(`**/${GGUF}`, (route) => route.fulfill({ status: 200, body: Buffer.concat([Buffer.from('GGUF'), Buffer.from([3, 0, 0, 0]), Buffer.alloc(40, 0xff)]) }));
  };
  const picked = await openMiniLM(env.base, { route: damaged });
  await picked.page.selectOption('#model', 'smollm2-135m');
  await picked.page.waitForFunction(() => window.__tviz.picker === 'offer');
  await picked.page.click('#model-download');
  await loadSettled(picked.page);
  await assertRefused(picked.page, /GGUF|gguf/);
  assert.match(await picked.page.textContent('#error'), /The page still shows MiniLM-L6\.$/);
  await cacheWritten(picked.page);
  assert.equal(await cachedSize(picked.page, GGUF), null, 'a file of the wrong size is not kept');
  assert.deepEqual(picked.problems, []);
  await picked.context.close();

  const linked = await openPage(`${env.base}?model=smollm2-135m`, { route: damaged });
  await assertRefused(linked.page, /GGUF|gguf/, DEFAULT_MODEL);
  // The link's model failed: the page's default is shown.
  assert.match(await linked.page.textContent('#error'), new RegExp(`${MODELS[DEFAULT_MODEL].short.replace(/[()]/g, '\\$&')} is shown instead\\.$`));
  assert.deepEqual(linked.problems, []);
  await linked.context.close();
});

test('without a Cache API the page just downloads, and says the next visit will too', async () => {
  const requests = [];
  const hideCaches = async (page) => {
    recording(requests)(page);
    await page.addInitScript(() => Object.defineProperty(window, 'caches', { value: undefined }));
  };
  const { page, context, problems } = await openPage(env.base, { route: hideCaches });
  assert.deepEqual(requests.filter((r) => r === DEFAULT_WEIGHTS), [DEFAULT_WEIGHTS]);
  await cacheWritten(page);
  assert.match(await page.textContent('#model-source'), /no Cache API/);
  assert.equal(await page.evaluate(() => window.__tviz.model), DEFAULT_MODEL);
  assert.deepEqual(problems, []);
  await context.close();
});

/** `bytes`, a safetensors file, with every byte of its tensors' data set to 0xFF: the same
 * size and header, every value NaN. */
function nanFilled(bytes) {
  const out = Buffer.from(bytes);
  const dataStart = 8 + Number(out.readBigUInt64LE(0));
  out.fill(0xff, dataStart);
  return out;
}

test('weights the engine refuses are not kept in the cache, and a refused cached copy is downloaded again', async () => {
  const PRE_LN = MODELS['lecture-pre-ln'].files.weights.path;
  const real = readFileSync(join(ROOT, 'dist', PRE_LN));
  let serveNaN = true;
  const requests = [];
  const route = async (page) => {
    recording(requests)(page);
    await page.route(`**/${PRE_LN}`, (r) => (serveNaN ? r.fulfill({ status: 200, body: nanFilled(real) }) : r.continue()));
  };
  const { page, context, problems } = await openPage(env.base, { route });
  const twin = () => page.click('#twin-switch button[data-twin="lecture-pre-ln"]');
  // The server sends NaN once: refused in plain words, and not kept.
  await twin();
  await page.waitForFunction(() => window.__tviz.loads.some((l) => l.model === 'lecture-pre-ln' && l.error));
  await loadSettled(page);
  assert.match(await page.evaluate(() => window.__tviz.modelError), /non-finite/);
  await cacheWritten(page);
  assert.equal(await cachedSize(page, PRE_LN), null, 'a refused download is not kept in the cache');
  // Repaired on the server: the next choice downloads it and shows it.
  serveNaN = false;
  await twin();
  await page.waitForFunction(() => window.__tviz.model === 'lecture-pre-ln');
  await cacheWritten(page);
  assert.equal(await cachedSize(page, PRE_LN), real.length);

  // A broken copy in the cache (written there by hand): refused, dropped, downloaded again once.
  await page.evaluate(async ([name, path, base64]) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const cache = await caches.open(name);
    await cache.put(new URL(path, document.baseURI).href, new Response(bytes));
  }, [CACHE_NAME, PRE_LN, nanFilled(real).toString('base64')]);
  await page.click('#twin-switch button[data-twin="lecture-post-ln"]');
  await page.waitForFunction(() => window.__tviz.model === 'lecture-post-ln');
  const before = requests.filter((r) => r === PRE_LN).length;
  await twin();
  await page.waitForFunction(() => window.__tviz.model === 'lecture-pre-ln');
  assert.equal(requests.filter((r) => r === PRE_LN).length, before + 1, 'downloaded once more');
  await cacheWritten(page);
  assert.equal(await cachedSize(page, PRE_LN), real.length);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a link to SmolLM2 asks before its 98 MB download; declining opens the default model with no request for it', async () => {
  const context = await env.browser.newContext();
  const page = await context.newPage();
  const requests = [];
  recording(requests)(page);
  await page.goto(`${env.base}?model=smollm2-135m&layer=29&head=4`);
  await page.waitForFunction(() => window.__tviz?.picker === 'offer');
  assert.match(await page.textContent('#model-offer-text'), /The link asks for SmolLM2-135M: 98(\.\d)? MB, download\?/);
  assert.deepEqual(requests.filter((r) => r === GGUF), [], 'no byte of the GGUF before the answer');
  await page.click('#model-keep');
  await page.evaluate(() => window.__tviz.ready);
  assert.equal(await page.evaluate(() => window.__tviz.model), DEFAULT_MODEL);
  assert.equal(await page.isHidden('#model-offer'), true);
  assert.deepEqual(requests.filter((r) => r === GGUF), [], 'declined: never downloaded');
  await context.close();

  // Accepted: the link's model, with its layer and head.
  const accepted = await openPage(`${env.base}?model=smollm2-135m&layer=29&head=4`, { route: recording(requests) });
  assert.equal(await accepted.page.evaluate(() => window.__tviz.model), 'smollm2-135m');
  assert.deepEqual([await accepted.page.inputValue('#layer'), await accepted.page.inputValue('#head')], ['29', '4']);
  assert.deepEqual(requests.filter((r) => r === GGUF), [GGUF]);
  assert.deepEqual(accepted.problems, []);
  await accepted.context.close();
});
