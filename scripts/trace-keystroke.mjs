// Where a keystroke's time goes in the browser, beyond the page's own drawing: records a
// Chromium trace while typing 20 keystrokes at 32 tokens into the release page (dist/, or the
// folder given), then prints the busiest trace events per keystroke by thread (layout, paint,
// the frame, canvas finishing, tasks), and last the style and layout the page's own code made
// the browser do on the spot (inside a JavaScript call: a font set after the DOM changed, a
// size read). Usage: node scripts/trace-keystroke.mjs [dist]
// The trace itself is written to tests/artifacts/keystroke-trace.json (open it in Chromium's
// DevTools, Performance panel, to see each event's place).
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium } from './browser.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const KEYSTROKES = 20;
const WORDS = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day since the first year when we went to see what they had done'.split(' ');
const sentence = WORDS.slice(0, 31).join(' '); // 31 words + <|endoftext|>: 32 tokens
const out = join(ROOT, 'tests/artifacts/keystroke-trace.json');
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });

const server = await serve(process.argv[2] ?? join(ROOT, 'dist'), 0);
const browser = await launchChromium();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForFunction(() => window.__tviz?.firstSettledAt !== undefined, null, { timeout: 60000 });
  await page.fill('#text', sentence);
  await page.waitForFunction(() => document.querySelectorAll('#tokens li').length === 32);
  await page.waitForFunction(() => window.__tvizSettled());
  await page.focus('#text');
  await browser.startTracing(page, { path: out, categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink', 'cc'] });
  await page.evaluate(() => { window.__tviz.settledLatencies = []; });
  for (let i = 0; i < KEYSTROKES; i += 1) {
    const before = await page.evaluate(() => window.__tviz.settledLatencies.length);
    await page.keyboard.press(i % 2 === 0 ? 'Backspace' : sentence.at(-1));
    await page.waitForFunction((n) => window.__tviz.settledLatencies.length > n, before);
  }
  await browser.stopTracing();
} finally {
  await browser.close();
  server.close();
}

// Complete events ('X') summed by thread and name; nested events count in their parents too.
const trace = JSON.parse(readFileSync(out, 'utf8'));
const events = trace.traceEvents ?? trace;
const threads = {};
for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') threads[`${e.pid}:${e.tid}`] = e.args.name;
const total = {};
for (const e of events) {
  if (e.ph !== 'X' || !e.dur) continue;
  const key = `${threads[`${e.pid}:${e.tid}`] ?? '?'} | ${e.name}`;
  total[key] = (total[key] ?? 0) + e.dur;
}
console.log(`ms a keystroke (${KEYSTROKES} keystrokes at 32 tokens), busiest trace events:`);
for (const [key, us] of Object.entries(total).sort((a, b) => b[1] - a[1]).slice(0, 30)) {
  console.log(`${(us / 1000 / KEYSTROKES).toFixed(2).padStart(8)}  ${key}`);
}
// Style and layout inside a JavaScript call, on the same thread: forced by the page's code.
const calls = events.filter((e) => e.ph === 'X' && e.name === 'FunctionCall');
const forced = events.filter((e) => e.ph === 'X' && (e.name === 'UpdateLayoutTree' || e.name === 'Layout')
  && calls.some((c) => c.tid === e.tid && c.pid === e.pid && c.ts <= e.ts && c.ts + c.dur >= e.ts + e.dur));
const forcedMs = forced.reduce((sum, e) => sum + e.dur, 0) / 1000;
console.log(`forced style and layout in the page's code: ${(forced.length / KEYSTROKES).toFixed(2)} a keystroke, ${(forcedMs / KEYSTROKES).toFixed(2)} ms (traced)`);
