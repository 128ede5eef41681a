// Side by side in one headless Chromium: this project's page (MiniLM-L6, traced, CPU
// WebAssembly, one thread and the default two) and ONNX Runtime Web 1.30 running the same
// weights as an f32 ONNX graph (untraced; one and two threads), at 32 and 128 tokens,
// alternating rounds so that the machine's changing speed falls on both alike. Run by
// scripts/onnx-side-by-side/run.sh (which installs, exports and builds what this needs).
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { serve } from '../static-server.mjs';
import { launchChromium } from '../browser.mjs';

const ROOT = new URL('../..', import.meta.url).pathname;
const SITE = join(ROOT, '.tools/onnx/site'); // site/ + ort/ + minilm-l6.onnx (run.sh)
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SIZES = [32, 128];
const RUNS = 10;
// Passes not measured at each size, for both libraries alike (WARMUP=10: after the browser has
// compiled the hot WebAssembly functions' optimised code, which takes a few passes: until then
// a pass on two threads shares the two cores with the compiler, and takes two to three times as
// long).
const WARMUP = Number(process.env.WARMUP ?? 3);
const WORDS = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day since the first year when we went to see what they had done'.split(' ');

const browser = await launchChromium();
const ours = await serve(process.env.DIST ?? join(ROOT, 'dist'), 0); // DIST=<a built page>: an earlier build, for a peer in the same run
const theirs = await serve(SITE, 0);
const at = (server) => `http://127.0.0.1:${server.address().port}/`;

async function onnx(threads) {
  const page = await browser.newPage();
  await page.goto(`${at(theirs)}?threads=${threads}&tokens=${SIZES.join(',')}&runs=${RUNS}&warmup=${WARMUP}`);
  await page.waitForFunction(() => window.results, null, { timeout: 300000 });
  const r = await page.evaluate(() => window.results);
  await page.close();
  if (r.error) throw new Error(`ONNX Runtime Web: ${r.error}`);
  if (threads > 1 && !r.crossOriginIsolated) throw new Error('not cross-origin isolated: ONNX Runtime Web would use one thread');
  return Object.fromEntries(SIZES.map((t) => [t, r.out[t].times]));
}

async function page(threads) {
  const p = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await p.goto(`${at(ours)}?model=minilm-l6&backend=cpu&threads=${threads}`);
  await p.evaluate(() => window.__tviz.ready);
  await p.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads) && window.__tviz.helper !== 'starting', null, { timeout: 60000 });
  const got = await p.evaluate(() => window.__tviz.threads);
  if (got !== threads) throw new Error(`the page computes with ${got} threads, not ${threads}`);
  const out = {};
  for (const tokens of SIZES) {
    out[tokens] = [];
    for (let i = 0; i < RUNS + WARMUP; i += 1) {
      const text = Array.from({ length: tokens - 2 }, (_, j) => WORDS[(j + i) % WORDS.length]).join(' ');
      const before = await p.evaluate(() => window.__tviz.renders);
      await p.fill('#text', text);
      await p.waitForFunction((n) => window.__tviz.renders > n, before);
      // Every chart drawn before the next pass (as scripts/bench-page.mjs waits): a pass that
      // started while the last one's charts were still drawing would share the cores with them.
      await p.waitForFunction(() => window.__tvizSettled());
      // With SETTLE_FRAMES=1, two animation frames more: the browser has painted those charts
      // too, so its raster threads do not share the two cores with the next pass (ONNX Runtime's
      // page draws nothing).
      if (process.env.SETTLE_FRAMES) await p.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
      const ms = await p.evaluate(() => window.__tviz.passes.at(-1) ?? Number(/^(\d+) ms/.exec(document.getElementById('timing').textContent)?.[1]));
      if (i >= WARMUP) out[tokens].push(ms);
    }
  }
  await p.close();
  return out;
}

const all = { onnx1: {}, onnx2: {}, page1: {}, page2: {} };
for (const t of SIZES) for (const k of Object.keys(all)) all[k][t] = [];
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [key, run] of [['page1', () => page(1)], ['onnx1', () => onnx(1)], ['page2', () => page(2)], ['onnx2', () => onnx(2)]]) {
    const r = await run();
    for (const t of SIZES) all[key][t].push(...r[t]);
  }
}
await browser.close();
ours.close();
theirs.close();
const stat = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return `${s[Math.floor(s.length / 2)].toFixed(1)} ms (${s[Math.floor(s.length * 0.1)].toFixed(1)}-${s[Math.ceil(s.length * 0.9) - 1].toFixed(1)})`;
};
const names = { page1: 'this page, traced, 1 thread', onnx1: 'ONNX Runtime Web, untraced, 1 thread', page2: 'this page, traced, 2 threads', onnx2: 'ONNX Runtime Web, untraced, 2 threads' };
for (const [key, byT] of Object.entries(all)) console.log(`${names[key]}: ${SIZES.map((t) => `${t} tokens ${stat(byT[t])}`).join('; ')}`);
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });
writeFileSync(join(ROOT, 'tests/artifacts/onnx-side-by-side.json'), JSON.stringify(all, null, 2));
