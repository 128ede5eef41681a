// Browser benchmark of the release page (run scripts/build-page.sh first, or use
// scripts/bench-page.sh which does). For the default model (the lecture decoder) and MiniLM,
// in headless Debian Chromium it measures:
//   - time from navigation to the first complete view (model loaded, every chart drawn);
//   - over 20 keystrokes, with the cores' threads, with one (?threads=1) and four (?threads=4),
//     the time from each input event to the charts on screen drawn, and
//     to every chart drawn (the page draws off-screen charts one per task after the
//     on-screen ones), at 8, 32 and 128 tokens: median and p95, and the same for the traced
//     forward pass alone (inside the first figure);
//   - for MiniLM, after each size's keystrokes, 40 passes on the same tokens run back to back
//     by the page itself with nothing drawn in between: how the pass scales with the threads
//     when nothing else (drawing, the benchmark's own messages) shares the cores with it.
// Prints a table and writes tests/artifacts/bench-page.json. MODELS=lecture-post-ln (names, by
// commas) measures only those; KEYSTROKES=60 types more keys a size (20 by default). With
// BASELINE_DIST=dir (another build, e.g. an older commit's dist/; BASELINE_SERVER=its
// scripts/static-server.mjs), both builds are measured in the same run, alternating, so that
// the machine's changing speed affects both alike.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium } from '../tests/e2e/browser.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const KEYSTROKES = Number(process.env.KEYSTROKES ?? 20); // KEYSTROKES=60 for a steadier p95
// Words for the sentences typed: most are one token for MiniLM's WordPiece; the lecture
// decoder's 512-token BPE cuts many into pieces, so the sentence is grown word by word in the
// page until it has the token count wanted (the page's own chips count them).
const WORDS = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day since the first year when we went to see what they had done'.split(' ');

// The models measured: the page's default (the lecture decoder) and MiniLM.
const MODELS = [
  { name: 'lecture-post-ln', query: '' },
  // An encoder: its pass on the same tokens again is a whole pass (a causal model's would
  // come from its KV cache), so only it has passes back to back measured.
  { name: 'minilm-l6', query: 'model=minilm-l6', backToBack: true },
];

const BACK_TO_BACK = 40;
const BACK_TO_BACK_UNTIMED = 10;

/** The page's token count for `text`, once its pass has been shown. */
async function chipsFor(page, text) {
  const before = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', text);
  await page.waitForFunction((n) => window.__tviz.renders > n, before);
  return page.evaluate(() => document.querySelectorAll('#tokens li').length);
}

/** A sentence of exactly `tokens` tokens for the page's model: whole words while they fit,
 *  then " a" (one token for both tokenizers) until the count is reached. */
async function sentence(page, tokens) {
  let text = '';
  let count = 0;
  for (const word of WORDS.concat(WORDS, WORDS, WORDS)) {
    const longer = text ? `${text} ${word}` : word;
    const n = await chipsFor(page, longer);
    if (n > tokens) break;
    [text, count] = [longer, n];
    if (n === tokens) return text;
  }
  while (count < tokens) {
    text += ' a';
    count = await chipsFor(page, text);
  }
  if (count !== tokens) throw new Error(`no sentence of ${tokens} tokens: "${text}" has ${count}`);
  return text;
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return { median: at(0.5), p10: at(0.1), p90: at(0.9), p95: at(0.95), min: sorted[0], max: sorted[sorted.length - 1] };
}

const browser = await launchChromium();

/** `count` passes on the page's current tokens, one after another in one task of the page
 *  (nothing drawn between them): each pass's traced forward pass in milliseconds. The first
 *  `BACK_TO_BACK_UNTIMED` are not timed: meanwhile the browser finishes painting the last
 *  keystroke's charts (in software here, on the same two cores). */
function passesBackToBack(page, count) {
  return page.evaluate(async ([n, untimed]) => {
    const { session } = await import('/js/session.js');
    const text = document.querySelector('#text').value;
    const times = [];
    for (let i = 0; i < untimed + n; i += 1) {
      session.viz.recompute_next(); // the same tokens: computed again all the same
      const { milliseconds } = session.viz.set_text(text);
      if (i >= untimed) times.push(milliseconds);
    }
    return times;
  }, [count, BACK_TO_BACK_UNTIMED]);
}

async function typing(page, tokens, backToBack) {
  const base = await sentence(page, tokens);
  await page.fill('#text', base);
  await page.waitForFunction((t) => document.querySelectorAll('#tokens li').length === t, tokens, { timeout: 60000 })
    .catch(async (err) => { throw new Error(`${tokens} tokens wanted, the page shows: ${await page.textContent('#token-count')} (${err.message})`); });
  await page.waitForFunction(() => window.__tvizSettled());
  await page.evaluate(() => { window.__tviz.latencies = []; window.__tviz.settledLatencies = []; window.__tviz.passes = []; });
  await page.focus('#text');
  for (let i = 0; i < KEYSTROKES; i += 1) {
    const before = await page.evaluate(() => window.__tviz.settledLatencies.length);
    // Retype the last letter of the sentence: the token count stays the same.
    await page.keyboard.press(i % 2 === 0 ? 'Backspace' : base.at(-1));
    // Wait until every chart of this keystroke's pass is drawn, before the next key.
    await page.waitForFunction((n) => window.__tviz.settledLatencies.length > n, before);
  }
  const [latencies, everything, passes] = await page.evaluate(() => [window.__tviz.latencies, window.__tviz.settledLatencies, window.__tviz.passes]);
  const result = { onScreen: { ...stats(latencies), samples: latencies.length }, allCharts: stats(everything), forwardPass: stats(passes) };
  if (backToBack) result.backToBack = stats(await passesBackToBack(page, BACK_TO_BACK));
  return result;
}

async function measure({ dist, serveWith }, model) {
  const server = await serveWith(dist, 0);
  const url = `http://127.0.0.1:${server.address().port}/`;
  const results = { dist, model: model.name, keystrokes: KEYSTROKES, firstView: [], firstAllCharts: [], typing: {} };
  try {
    // Three loads of the default page (with as many threads as the cores where the page is
    // cross-origin isolated, as served here), typing at 8/32/128 tokens in the first; then one
    // load computing alone (?threads=1) and one with four threads (?threads=4, more than this
    // machine's cores: the page's choice on a 4-core laptop), typing at 32 and 128 tokens.
    const q = (extra) => [model.query, extra].filter(Boolean).join('&');
    const loads = [[0, q('')], [1, q('')], [2, q('')], [3, q('threads=1')], [4, q('threads=4')]];
    for (const [run, query] of loads) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
      const page = await context.newPage();
      await page.goto(url + (query ? `?${query}` : ''));
      await page.waitForFunction(() => window.__tviz?.firstSettledAt !== undefined || window.__tviz?.failed, null, { timeout: 60000 });
      if (run < 3) {
        results.firstView.push(await page.evaluate(() => window.__tviz.firstViewAt));
        results.firstAllCharts.push(await page.evaluate(() => window.__tviz.firstSettledAt));
      }
      await page.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads) && window.__tviz.helper !== 'starting', null, { timeout: 60000 });
      // Keyed by the backend the status line names, and the link's threads=.
      const backend = await page.evaluate(() => window.__tviz.backend) + (run >= 3 ? ` (?${query.split('&').pop()})` : '');
      if (run === 0 || run >= 3) {
        const counts = run === 0 ? [8, 32, 128] : [32, 128];
        results.typing[backend] = {};
        for (const tokens of counts) results.typing[backend][tokens] = await typing(page, tokens, model.backToBack);
      }
      await context.close();
    }
  } finally {
    server.close();
  }
  results.firstViewStats = stats(results.firstView);
  results.firstAllChartsStats = stats(results.firstAllCharts);
  return results;
}

function report(results) {
  // A size whose keystrokes change no token (text past the context) times no pass: '–'.
  const ms = (v) => (v === undefined ? '–' : `${v.toFixed(1)} ms`);
  console.log(`${results.dist}: ${results.model}`);
  console.log(`navigation to first complete view (3 loads): on-screen charts median ${ms(results.firstViewStats.median)}, max ${ms(results.firstViewStats.max)}; every chart median ${ms(results.firstAllChartsStats.median)}, max ${ms(results.firstAllChartsStats.max)}`);
  for (const [backend, byTokens] of Object.entries(results.typing)) {
    console.log(`${backend}:`);
    for (const [tokens, s] of Object.entries(byTokens)) {
      console.log(`  ${tokens} tokens, ${s.onScreen.samples} keystrokes: input to on-screen views drawn median ${ms(s.onScreen.median)}, p95 ${ms(s.onScreen.p95)}; input to every chart drawn median ${ms(s.allCharts.median)}, p95 ${ms(s.allCharts.p95)}; of which the traced forward pass median ${ms(s.forwardPass.median)}, p95 ${ms(s.forwardPass.p95)}`);
      if (s.backToBack) console.log(`  ${tokens} tokens, ${BACK_TO_BACK} passes back to back (nothing drawn): median ${ms(s.backToBack.median)} (p10 ${ms(s.backToBack.p10)}, p90 ${ms(s.backToBack.p90)})`);
    }
  }
  // The pass on n threads against one thread's, at each size measured on both.
  const one = Object.entries(results.typing).find(([backend]) => backend.endsWith('(?threads=1)'))?.[1];
  for (const [backend, byTokens] of Object.entries(results.typing)) {
    if (!one || byTokens === one) continue;
    for (const [tokens, s] of Object.entries(byTokens)) {
      const base = one[tokens];
      if (!base || !s.backToBack || !base.backToBack) continue;
      const ratio = (a, b) => (a / b).toFixed(2);
      console.log(`${backend}, ${tokens} tokens, against one thread: back to back ${ratio(s.backToBack.median, base.backToBack.median)} of its pass, while typing ${ratio(s.forwardPass.median, base.forwardPass.median)}`);
    }
  }
}

// A baseline is served by its own commit's server (BASELINE_SERVER, a static-server.mjs): an
// older page may not meet today's Content-Security-Policy header.
const builds = [{ dist: join(ROOT, 'dist'), serveWith: serve }];
if (process.env.BASELINE_DIST) {
  const { serve: serveBaseline } = process.env.BASELINE_SERVER ? await import(process.env.BASELINE_SERVER) : { serve };
  builds.push({ dist: process.env.BASELINE_DIST, serveWith: serveBaseline });
}
const rounds = Number(process.env.ROUNDS ?? 1);
const all = [];
try {
  for (let round = 0; round < rounds; round += 1) {
    for (const model of MODELS.filter((m) => !process.env.MODELS || process.env.MODELS.split(',').includes(m.name))) {
      for (const dist of builds) all.push(await measure(dist, model));
    }
  }
} finally {
  await browser.close();
}
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });
writeFileSync(join(ROOT, 'tests/artifacts/bench-page.json'), JSON.stringify(all, null, 2));
for (const results of all) report(results);
