// Browser benchmark of SmolLM2-135M on the release page (run scripts/build-page.sh first, or
// scripts/bench-page.sh, which runs this after the MiniLM benchmark). In headless Debian
// Chromium, computing alone (?threads=1) and with the cores' threads (the page as served), it
// measures:
//   - time to the first prediction for a prompt of 16, 64 and 256 tokens: from the input event
//     of a text whose first token changed (nothing in the KV cache can be reused) to the
//     prediction chart and the other charts on screen drawn, and the traced pass inside it;
//   - keystroke to prediction when one word is appended to a 32-token text (the incremental
//     path: 32 tokens reused from the cache, one computed);
//   - generation: 32 tokens, greedy, from a 16-token prompt: tokens/s as the page shows it
//     (every view on screen redrawn after each token) and the pass per token alone.
// ROUNDS=n alternates the two settings n times. Prints a table and writes
// tests/artifacts/bench-smollm2.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium, gotoAccepting } from './browser.mjs';
import { stats } from './stats.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const REPEATS = 7;
const WORDS = 'the cat sat on a mat and then it slept by the warm fire while rain fell on the roof of our old house near the quiet river bank in the town where we lived for many long years together'.split(' ');
const FIRST = ['The', 'A', 'One', 'This', 'That', 'My', 'Our', 'Her'];

/** A text of exactly `tokens` SmolLM2 tokens starting with `first` (checked on the page). */
function textOf(first, words) {
  return [first, ...WORDS.concat(WORDS, WORDS, WORDS, WORDS, WORDS, WORDS, WORDS, WORDS, WORDS, WORDS, WORDS).slice(0, words)].join(' ');
}

async function tokenCount(page) {
  return page.evaluate(() => document.querySelectorAll('#tokens li').length);
}

/** Sets the text and waits for its views; returns the page's input-to-drawn and pass times. */
async function setText(page, text) {
  const before = await page.evaluate(() => window.__tviz.latencies.length);
  await page.fill('#text', text);
  await page.waitForFunction((n) => window.__tviz.latencies.length > n, before, { timeout: 120_000 });
  await page.waitForFunction(() => window.__tvizSettled());
  return page.evaluate(() => ({ drawn: window.__tviz.latencies.at(-1), pass: window.__tviz.passes.at(-1), timing: document.getElementById('timing').textContent }));
}

async function firstPrediction(page, tokens) {
  // One word is one token for these words; each text starts with another word.
  const drawn = [];
  const passes = [];
  for (let i = 0; i < REPEATS; i += 1) {
    const text = textOf(FIRST[(i + 1) % FIRST.length], tokens - 1); // never the page's first word
    const r = await setText(page, text);
    const count = await tokenCount(page);
    if (count !== tokens) throw new Error(`${tokens} tokens wanted, the text gave ${count}`);
    if (/reused [1-9]/.test(r.timing)) throw new Error(`a first prediction reused the cache: ${r.timing}`);
    drawn.push(r.drawn);
    passes.push(r.pass);
  }
  return { drawn: stats(drawn), pass: stats(passes) };
}

async function appendedWord(page) {
  const base = textOf('The', 31);
  await setText(page, base);
  if (await tokenCount(page) !== 32) throw new Error('the base text is not 32 tokens');
  const drawn = [];
  const passes = [];
  let timing = '';
  for (let i = 0; i < REPEATS * 2; i += 1) {
    const r = await setText(page, `${base} ${i % 2 ? 'dog' : 'cat'}`);
    timing = r.timing;
    if (!/reused 32 of 33 tokens/.test(r.timing)) throw new Error(`the appended word did not reuse the cache: ${r.timing}`);
    drawn.push(r.drawn);
    passes.push(r.pass);
  }
  return { drawn: stats(drawn), pass: stats(passes), timing };
}

async function generation(page, tokens) {
  await setText(page, textOf('The', 15));
  await page.fill('#temperature', '0');
  await page.fill('#gen-tokens', String(tokens));
  await page.click('#generate');
  await page.waitForFunction((k) => !window.__tvizGeneration.running && window.__tvizGeneration.tokens?.length === k, tokens, { timeout: 300_000 });
  const g = await page.evaluate(() => ({ tokensPerSecond: window.__tvizGeneration.tokensPerSecond, passes: window.__tvizGeneration.passMilliseconds }));
  return { tokensPerSecond: g.tokensPerSecond, pass: stats(g.passes), passTokensPerSecond: 1000 / stats(g.passes).median };
}

async function measure(browser, url, query) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  const page = await context.newPage();
  await gotoAccepting(page, `${url}?model=smollm2-135m${query}`);
  await page.waitForFunction(() => window.__tviz?.model === 'smollm2-135m' && window.__tviz.firstSettledAt !== undefined, null, { timeout: 300_000 });
  await page.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads) && window.__tviz.helper !== 'starting', null, { timeout: 120_000 });
  const backend = await page.evaluate(() => window.__tviz.backend);
  // The prediction chart on screen: it is drawn with the other on-screen charts after a pass.
  await page.locator('canvas[data-chart="prediction"]').scrollIntoViewIfNeeded();
  const result = { backend, first: {} };
  for (const tokens of [16, 64, 256]) result.first[tokens] = await firstPrediction(page, tokens);
  result.appended = await appendedWord(page);
  result.generation = await generation(page, 32);
  await context.close();
  return result;
}

const dist = join(ROOT, 'dist');
const server = await serve(dist, 0);
const url = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium();
const all = [];
try {
  const rounds = Number(process.env.ROUNDS ?? 1);
  for (let round = 0; round < rounds; round += 1) {
    for (const query of ['&threads=1', '']) all.push(await measure(browser, url, query));
  }
} finally {
  await browser.close();
  server.close();
}
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });
writeFileSync(join(ROOT, 'tests/artifacts/bench-smollm2.json'), JSON.stringify(all, null, 2));
const ms = (s) => `median ${s.median.toFixed(0)} ms (${s.min.toFixed(0)}-${s.max.toFixed(0)})`;
for (const r of all) {
  console.log(`SmolLM2-135M, ${r.backend}:`);
  for (const [tokens, s] of Object.entries(r.first)) {
    console.log(`  first prediction, ${tokens} tokens: to the views on screen ${ms(s.drawn)}; the traced pass ${ms(s.pass)}`);
  }
  console.log(`  one word appended to 32 tokens: to the views on screen ${ms(r.appended.drawn)}; the pass ${ms(r.appended.pass)}`);
  console.log(`  generation, 32 tokens greedy: ${r.generation.tokensPerSecond.toFixed(1)} tokens/s on the page (views redrawn each token); the pass alone ${ms(r.generation.pass)} per token (${r.generation.passTokensPerSecond.toFixed(1)} tokens/s)`);
}
