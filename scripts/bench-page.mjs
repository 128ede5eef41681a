// Browser benchmark of the release page (run scripts/build-page.sh first, or use
// scripts/bench-page.sh which does). For the default model (the lecture decoder) and MiniLM,
// in headless Debian Chromium it measures:
//   - time from navigation to the first complete view (model loaded, every chart drawn);
//   - over 20 keystrokes, with the cores' threads, with one (?threads=1) and four (?threads=4),
//     the time from each input event to the charts on screen drawn, and
//     to every chart drawn (the page draws off-screen charts one per task after the
//     on-screen ones), at 8, 32 and 128 tokens: median and p95, and the same for the traced
//     forward pass alone (inside the first figure);
//   - for MiniLM, how the pass scales with the threads when nothing else (drawing, the
//     benchmark's own messages) shares the cores with it: three pages open at once (one thread,
//     the cores', four), each running batches of passes on the same tokens back to back
//     with nothing drawn, the pages taking turns (so that the machine's changing speed falls on
//     all three alike); each thread count's pass against one thread's, round by round.
// OFF=h1.2,f0 (parts switched off, as the link writes them) measures each model as trained and
// then with those parts off.
// Prints a table and writes tests/artifacts/bench-page.json. MODELS=lecture-post-ln (names, by
// commas) measures only those; KEYSTROKES=60 types more keys a size (20 by default). With
// BASELINE_DIST=dir (another build, e.g. an older commit's dist/; BASELINE_SERVER=its
// scripts/static-server.mjs), both builds are measured in the same run, alternating, so that
// the machine's changing speed affects both alike.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium, gotoAccepting } from './browser.mjs';
import { stats } from './stats.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const KEYSTROKES = Number(process.env.KEYSTROKES ?? 20); // KEYSTROKES=60 for a steadier p95
// Words for the sentences typed: most are one token for MiniLM's WordPiece and for the lecture
// decoder's BPE, but not all, so the sentence is grown word by word in the page until it has
// the token count wanted (the page's own chips count them).
const WORDS = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day since the first year when we went to see what they had done'.split(' ');

// The models measured: the page's default (the lecture decoder) and MiniLM.
const MODELS = [
  { name: 'lecture-post-ln', query: '' },
  // An encoder: its pass on the same tokens again is a whole pass (a causal model's would
  // come from its KV cache), so only it has passes back to back measured.
  { name: 'minilm-l6', query: 'model=minilm-l6', backToBack: true },
];

// Passes back to back: rounds in which each page runs a batch, after an untimed batch each.
const BACK_TO_BACK_ROUNDS = 6;
const BACK_TO_BACK_BATCH = 10;

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

const browser = await launchChromium();

/** `count` passes on the page's current tokens, one after another in one task of the page
 *  (nothing drawn between them): each pass's traced forward pass in milliseconds. */
function passesBackToBack(page, count) {
  return page.evaluate(async (n) => {
    const { session } = await import('/js/session.js');
    const text = document.querySelector('#text').value;
    const times = [];
    for (let i = 0; i < n; i += 1) {
      session.viz.recompute_next(); // the same tokens: computed again all the same
      times.push(session.viz.set_text(text).milliseconds);
    }
    return times;
  }, count);
}

/** The median of `values`. */
const median = (values) => stats(values).median;

/** Passes back to back at `tokens` tokens on one thread, the cores' threads and four, the
 *  three pages open at once and taking turns. */
async function threadsSideBySide(url, model, tokens) {
  const plans = [['one thread (?threads=1)', 'threads=1'], ['the cores\' threads', ''], ['four threads (?threads=4)', 'threads=4']];
  // A context each: pages of one context may share a renderer process and its main thread.
  const contexts = [];
  try {
    const pages = [];
    let text = null;
    for (const [name, extra] of plans) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
      contexts.push(context);
      const page = await context.newPage();
      await gotoAccepting(page, url + '?' + [model.query, extra].filter(Boolean).join('&'));
      await page.waitForFunction(() => window.__tviz?.firstSettledAt !== undefined || window.__tviz?.failed, null, { timeout: 60000 });
      await page.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads), null, { timeout: 60000 });
      text ??= await sentence(page, tokens);
      await page.fill('#text', text);
      await page.waitForFunction((t) => document.querySelectorAll('#tokens li').length === t && window.__tvizSettled(), tokens, { timeout: 60000 });
      await passesBackToBack(page, BACK_TO_BACK_BATCH); // untimed: the browser optimises the pass's code meanwhile
      pages.push({ name, page, backend: await page.evaluate(() => window.__tviz.backend), times: [], roundMedians: [] });
    }
    for (let round = 0; round < BACK_TO_BACK_ROUNDS; round += 1) {
      // Each round in another order, so that no page always follows the same one.
      for (let k = 0; k < pages.length; k += 1) {
        const p = pages[(k + round) % pages.length];
        const times = await passesBackToBack(p.page, BACK_TO_BACK_BATCH);
        p.times.push(...times);
        p.roundMedians.push(median(times));
      }
    }
    const one = pages[0];
    return pages.map((p) => ({
      threads: p.name,
      backend: p.backend,
      pass: stats(p.times),
      // Round by round, this page's median against one thread's: the machine's speed changes
      // between rounds, much less within one.
      againstOneThread: stats(p.roundMedians.map((m, r) => m / one.roundMedians[r])),
    }));
  } finally {
    for (const context of contexts) await context.close();
  }
}

async function typing(page, tokens) {
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
  return { onScreen: stats(latencies), allCharts: stats(everything), forwardPass: stats(passes) };
}

async function measure({ dist, serveWith }, model) {
  const server = await serveWith(dist, 0);
  const url = `http://127.0.0.1:${server.address().port}/`;
  const results = { dist, model: model.name, keystrokes: KEYSTROKES, firstView: [], firstAllCharts: [], typing: {}, backToBack: {} };
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
      await gotoAccepting(page, url + (query ? `?${query}` : ''));
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
        for (const tokens of counts) results.typing[backend][tokens] = await typing(page, tokens);
      }
      await context.close();
    }
    if (model.backToBack) {
      for (const tokens of [32, 128]) results.backToBack[tokens] = await threadsSideBySide(url, model, tokens);
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
      console.log(`  ${tokens} tokens, ${s.onScreen.count} keystrokes: input to on-screen views drawn median ${ms(s.onScreen.median)}, p95 ${ms(s.onScreen.p95)}; input to every chart drawn median ${ms(s.allCharts.median)}, p95 ${ms(s.allCharts.p95)}; of which the traced forward pass median ${ms(s.forwardPass.median)}, p95 ${ms(s.forwardPass.p95)}`);
    }
  }
  for (const [tokens, pages] of Object.entries(results.backToBack)) {
    console.log(`passes back to back at ${tokens} tokens, nothing drawn (${BACK_TO_BACK_ROUNDS} rounds of ${BACK_TO_BACK_BATCH}, the pages taking turns):`);
    for (const p of pages) {
      const ratio = p.againstOneThread;
      console.log(`  ${p.threads}, ${p.backend}: median ${ms(p.pass.median)} (p10 ${ms(p.pass.p10)}, p90 ${ms(p.pass.p90)}); against one thread, round by round: median ${ratio.median.toFixed(2)} (${ratio.min.toFixed(2)}-${ratio.max.toFixed(2)})`);
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
      // OFF=h1.2 (the link's code): each model as trained, then with those parts switched off.
      const variants = process.env.OFF
        ? [model, { ...model, name: `${model.name} with off=${process.env.OFF}`, query: [model.query, `off=${process.env.OFF}`].filter(Boolean).join('&') }]
        : [model];
      for (const variant of variants) {
        for (const dist of builds) all.push(await measure(dist, variant));
      }
    }
  }
} finally {
  await browser.close();
}
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });
writeFileSync(join(ROOT, 'tests/artifacts/bench-page.json'), JSON.stringify(all, null, 2));
for (const results of all) report(results);
