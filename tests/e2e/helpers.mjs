// What every end-to-end test file shares: the release page served from dist/, one headless
// Chromium, and `openPage`, which fails a test on any console error, uncaught exception,
// Content-Security-Policy violation or request outside the page's origin.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from '../../scripts/static-server.mjs';
import { launchChromium } from '../../scripts/browser.mjs';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const ARTIFACTS = join(ROOT, 'tests/artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

/** Every chart canvas of the page, by its `data-chart` name. */
export const CHARTS = [
  'attention', 'grid', 'pos-table', 'pos-sin-table', 'pos-waves', 'pos-sin-waves', 'pos-sim', 'pos-sin',
  'norm', 'norm-params', 'residual', 'step',
];

/** Starts the server and the browser before this file's tests and stops them after. */
export function usePage() {
  const env = { base: null, browser: null, server: null };
  before(async () => {
    env.server = await serve(process.env.TVIZ_DIST ?? join(ROOT, 'dist'), 0); // TVIZ_DIST: another build
    env.base = `http://127.0.0.1:${env.server.address().port}/`;
    env.browser = await launchChromium();
  });
  after(async () => {
    await env.browser?.close();
    env.server?.close();
  });
  return env;
}

/** The model most tests written before the lecture decoder was the default ask for, by name
 * (`openPage(env, url, { model: MINILM })`): their assertions are MiniLM's (12 heads, 6
 * layers, [CLS] and [SEP], a context of 512 tokens). */
export const MINILM = 'minilm-l6';

/** The encoder's example sentence, the page's default before the lecture decoder read in words
 * (its default is now a sentence a decoder can show). A test that asks for a model by the
 * `model` option opens on it unless its URL has a text: those tests name its tokens ("it" ->
 * "animal", its 16 MiniLM tokens). */
export const ENCODER_EXAMPLE = "The animal didn't cross the street because it was too tired.";

/** A `route` for `openPage`: the page's Math.random replaced by a seeded xorshift, so what the
 * page draws at random (the repeat example's order) is the same on every run. */
export const seededRandom = (page) => page.addInitScript(() => {
  let s = 0x2545f491;
  Math.random = () => {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
});

/**
 * `url` asking for `model` when it names none (null: as it is, the page's own default), on
 * `ENCODER_EXAMPLE` when it has no text of its own. The query is edited as text, so a hostile
 * raw query stays as the test wrote it.
 */
export function withModel(url, model) {
  if (!model || /[?&]model=/.test(url.split('#')[0])) return url;
  const [head, ...fragment] = url.split('#');
  const tail = fragment.length ? `#${fragment.join('#')}` : '';
  const text = /[?&]text=/.test(head) || /(^|&)t=/.test(fragment.join('#')) ? '' : `&text=${encodeURIComponent(ENCODER_EXAMPLE)}`;
  return head.includes('?') ? head.replace('?', `?model=${model}${text}&`) + tail : `${head}?model=${model}${text}${tail}`;
}

/**
 * Opens `url` (default: the page) in a new browser context (or in `context`, a second visit
 * that shares the first one's storage) and waits until the model is loaded and the first pass
 * drawn. `model`: the model to ask for when the url names none (default: none, so the page's
 * default model, the lecture decoder). `acceptDownload`: answer "Download" when the link's
 * model is large and not cached (the page asks first). `problems` collects what must never
 * happen; each test ends with `assert.deepEqual(problems, [])`.
 */
export async function openPage(env, url = env.base, { viewport = { width: 1280, height: 720 }, deviceScaleFactor = 1, route = null, context: reuse = null, model = null, acceptDownload = true } = {}) {
  url = withModel(url, model);
  const context = reuse ?? await env.browser.newContext({ viewport, deviceScaleFactor, acceptDownloads: true });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); });
  page.on('pageerror', (err) => problems.push(String(err)));
  page.on('request', (req) => {
    if (!req.url().startsWith(env.base) && !req.url().startsWith('data:') && !req.url().startsWith('blob:')) problems.push(`request outside the page's origin: ${req.url()}`);
  });
  // Every Content-Security-Policy violation, recorded by the page from before its first script.
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(`${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  if (route) await route(page);
  const response = await page.goto(url);
  assert.equal(response.status(), 200, `opening ${url.slice(0, 80)} gave HTTP ${response.status()}`);
  await page.waitForFunction(() => window.__tviz?.ready !== undefined);
  if (acceptDownload) {
    // A link to a large model not yet in this browser's cache asks before downloading it: the
    // test wants that model, so it says yes (tests of the question itself pass false).
    await page.waitForFunction(() => window.__tviz.picker === 'offer' || window.__tviz.firstViewAt !== undefined || window.__tviz.failed);
    if (await page.evaluate(() => window.__tviz.picker === 'offer' && window.__tviz.model === null)) await page.click('#model-download');
  }
  await page.evaluate(() => window.__tviz.ready);
  assert.deepEqual(await page.evaluate(() => window.__cspViolations), [], 'the page broke its own Content-Security-Policy');
  const failed = await page.evaluate(() => window.__tviz.failed ?? null);
  assert.equal(failed, null, `the page failed to load: ${failed}`);
  return { page, context, problems };
}

/**
 * The address bar once the page has written every change made so far into it (the page
 * compresses the text asynchronously and updates the current entry when changes pause).
 */
export async function writtenUrl(page) {
  await page.waitForFunction(() => window.__tvizUrlWritten());
  return page.url();
}

/** Replaces the sentence and waits until the page has handled it (a pass or an error). */
export async function typeSentence(page, text) {
  const before = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', text);
  await page.waitForFunction((n) => window.__tviz.renders > n, before);
}

/** Moves the stepper to step `index`, as its slider does. */
export async function goToStep(page, index) {
  await page.evaluate((i) => {
    const slider = document.querySelector('#step-slider');
    slider.value = String(i);
    slider.dispatchEvent(new Event('input', { bubbles: true })); // handled at once (stepper.js)
  }, index);
}

/** Whether a canvas was never drawn on (it encodes to a tiny PNG). */
export async function isBlank(page, chart) {
  return page.evaluate((name) => document.querySelector(`canvas[data-chart="${name}"]`).toDataURL().length < 3000, chart);
}

/** Whether chart `chart` is shown (not replaced by a sentence saying why) and was never drawn on. */
export async function isShownAndBlank(page, chart) {
  return page.evaluate((name) => {
    const canvas = document.querySelector(`canvas[data-chart="${name}"]`);
    return !canvas.hidden && canvas.toDataURL().length < 3000;
  }, chart);
}

/**
 * What Rust reported when it drew `chart` (`window.__tvizDrawn[chart]`), once `ready(drawn,
 * arg)` holds; the chart is scrolled into view first, as a student would, so that it is drawn.
 * `ready` runs in the page: it may use only its two arguments (`arg` is sent with it).
 */
export async function drawn(page, chart, ready = (d) => d, arg = null) {
  await page.locator(`canvas[data-chart="${chart}"]`).scrollIntoViewIfNeeded();
  // One function holding `ready`, built here in Node: the test tool sends a function to the
  // page once and calls it on every poll. Code built inside the page (`new Function`, `eval`)
  // would break the page's Content-Security-Policy (no 'unsafe-eval') once the poll runs from
  // the page's own frames, so a test that had to wait failed.
  const predicate = new Function('[c, a]', `const d = window.__tvizDrawn[c]; return Boolean(d && (${ready.toString()})(d, a));`);
  await page.waitForFunction(predicate, [chart, arg]);
  return page.evaluate((c) => window.__tvizDrawn[c], chart);
}
