// Each chart's drawing time over keystrokes, in headless Chromium on the release page (run
// scripts/build-page.sh first): for one model, a sentence typed into the page, then keystrokes at
// its end (Backspace, then its last letter again); before each key the page's record of drawing
// times (`window.__tvizDrawMilliseconds`, charts.js) is emptied, so each key counts only the
// charts it drew; six keys before are not timed. Prints, per build, the median time from the
// key to every chart drawn (p95), the median of the drawing times' sum, and each chart's median.
//   MODEL=smollm2-135m (default lecture-post-ln)  KEYSTROKES=40 (default)  ROUNDS=1 (default)
//   BASELINE_DIST=dir: another build measured in the same run, the two taking turns.
//   node scripts/bench-charts.mjs [dist]
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium, gotoAccepting } from './browser.mjs';
import { stats } from './stats.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const MODEL = process.env.MODEL ?? 'lecture-post-ln';
const KEYSTROKES = Number(process.env.KEYSTROKES ?? 40);
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const WARM_UP = 6; // an even count: the sentence is whole again when the timed keys begin
const SENTENCE = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day';

const builds = [process.argv[2] ?? join(ROOT, 'dist'), process.env.BASELINE_DIST].filter(Boolean);
const servers = await Promise.all(builds.map((dist) => serve(dist, 0)));
const browser = await launchChromium();

/** One build's keystrokes: each key's time to every chart drawn, and each chart's drawing. */
async function measure(server) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  try {
    const page = await context.newPage();
    const query = MODEL === 'lecture-post-ln' ? '' : `?model=${MODEL}`;
    await gotoAccepting(page, `http://127.0.0.1:${server.address().port}/${query}`);
    await page.waitForFunction(() => window.__tviz?.firstSettledAt !== undefined || window.__tviz?.failed, null, { timeout: 300_000 });
    await page.fill('#text', SENTENCE);
    await page.waitForFunction(() => window.__tvizSettled());
    const tokens = await page.evaluate(() => document.querySelectorAll('#tokens li').length);
    await page.focus('#text');
    // Untimed keys first: the first few after a page's set-up take longer (docs/benchmarks.md,
    // "Warm-up").
    for (let i = 0; i < WARM_UP; i += 1) {
      const before = await page.evaluate(() => window.__tviz.settledLatencies.length);
      await page.keyboard.press(i % 2 === 0 ? 'Backspace' : SENTENCE.at(-1));
      await page.waitForFunction((n) => window.__tviz.settledLatencies.length > n, before);
    }
    const latencies = [];
    const charts = {};
    const sums = [];
    for (let i = 0; i < KEYSTROKES; i += 1) {
      const before = await page.evaluate(() => {
        for (const name of Object.keys(window.__tvizDrawMilliseconds)) delete window.__tvizDrawMilliseconds[name];
        return window.__tviz.settledLatencies.length;
      });
      await page.keyboard.press(i % 2 === 0 ? 'Backspace' : SENTENCE.at(-1));
      await page.waitForFunction((n) => window.__tviz.settledLatencies.length > n, before);
      const [latency, drawn] = await page.evaluate(() => [window.__tviz.settledLatencies.at(-1), { ...window.__tvizDrawMilliseconds }]);
      latencies.push(latency);
      sums.push(Object.values(drawn).reduce((a, b) => a + b, 0));
      for (const [name, ms] of Object.entries(drawn)) (charts[name] ??= []).push(ms);
    }
    return { tokens, latencies, sums, charts };
  } finally {
    await context.close();
  }
}

try {
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const [i, dist] of builds.entries()) {
      const { tokens, latencies, sums, charts } = await measure(servers[i]);
      const every = stats(latencies);
      console.log(`${dist}, round ${round}: ${MODEL}, ${tokens} tokens, ${KEYSTROKES} keystrokes: every chart drawn median ${every.median.toFixed(1)} ms (p95 ${every.p95.toFixed(1)}); drawing ${stats(sums).median.toFixed(1)} ms`);
      const byCost = Object.entries(charts).map(([name, ms]) => [name, stats(ms).median, ms.length]).sort((a, b) => b[1] - a[1]);
      console.log('  ' + byCost.map(([name, ms, n]) => `${name} ${ms.toFixed(2)}${n < KEYSTROKES ? ` (${n} keys)` : ''}`).join(', '));
    }
  }
} finally {
  await browser.close();
  for (const server of servers) server.close();
}
