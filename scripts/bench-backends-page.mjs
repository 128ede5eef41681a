// The page's forward pass on each backend, in headless Debian Chromium (run
// scripts/build-page.sh first; scripts/bench-page.sh runs this too). For MiniLM at 32 and 256
// tokens and the lecture decoder at 32 and 128, the traced pass the page reports
// (summary.milliseconds) on the CPU (?backend=cpu, one thread, so the two backends are alike
// but for where the arithmetic runs) and on WebGPU (?backend=gpu), alternating, PASSES passes (default 5)
// each; median and range. Here WebGPU's only adapter is SwiftShader, an emulation on the CPU:
// its figures say nothing about a real GPU's. Writes tests/artifacts/bench-backends-page.json.
// MODELS=lecture-post-ln (names, by commas) measures only those; DIST=dir measures another
// build (e.g. an older commit's dist/), to run beside this one's.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium } from '../tests/e2e/browser.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const PASSES = Number(process.env.PASSES ?? 5);
// One token each for both tokenizers (as scripts/bench-page.mjs).
const WORDS = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day since the first year when we went to see what they had done'.split(' ');
const CASES = [
  { model: 'minilm-l6', specials: 2, sizes: [32, 256] },
  { model: 'lecture-post-ln', specials: 1, sizes: [32, 128] },
];

const text = (tokens, specials, round) => {
  const words = Array.from({ length: tokens - specials }, (_, i) => WORDS[(i + round) % WORDS.length]);
  return words.join(' ');
};

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted.at(-1) };
}

const server = await serve(process.env.DIST || join(ROOT, 'dist'), 0);
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium();

async function open(model, backend) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await page.goto(`${base}?model=${model}&backend=${backend}&threads=1`);
  await page.evaluate(() => window.__tviz.ready);
  if (backend === 'gpu') await page.waitForFunction(() => window.__tviz.gpu?.active, null, { timeout: 120000 });
  return page;
}

/** The page's own figure for one pass of `sentence`. */
async function pass(page, backend, sentence) {
  if (backend === 'gpu') {
    await page.fill('#text', sentence);
    await page.waitForFunction((t) => window.__tviz.gpuPassText === t, sentence, { timeout: 600000 });
  } else {
    const before = await page.evaluate(() => window.__tviz.renders);
    await page.fill('#text', sentence);
    await page.waitForFunction((n) => window.__tviz.renders > n, before);
  }
  return page.evaluate(() => Number(/^(\d+) ms/.exec(document.getElementById('timing').textContent)?.[1]));
}

const results = [];
for (const { model, specials, sizes } of CASES.filter((c) => !process.env.MODELS || process.env.MODELS.split(',').includes(c.model))) {
  const pages = { cpu: await open(model, 'cpu'), gpu: await open(model, 'gpu') };
  const adapter = await pages.gpu.evaluate(() => window.__tviz.gpu.adapter);
  for (const tokens of sizes) {
    const times = { cpu: [], gpu: [] };
    for (const backend of ['cpu', 'gpu']) await pass(pages[backend], backend, text(tokens, specials, 99)); // warm: kernels compiled, weights uploaded
    for (let round = 0; round < PASSES; round += 1) {
      for (const backend of ['cpu', 'gpu']) times[backend].push(await pass(pages[backend], backend, text(tokens, specials, round)));
    }
    const row = { model, tokens, adapter, cpu: stats(times.cpu), gpu: stats(times.gpu), times };
    results.push(row);
    console.log(`${model} ${tokens} tokens: CPU (one thread) ${row.cpu.median} ms (${row.cpu.min}-${row.cpu.max}), WebGPU on ${adapter} ${row.gpu.median} ms (${row.gpu.min}-${row.gpu.max})`);
  }
  await pages.cpu.close();
  await pages.gpu.close();
}
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });
writeFileSync(join(ROOT, 'tests/artifacts/bench-backends-page.json'), JSON.stringify(results, null, 2));
await browser.close();
server.close();
