// The page's forward pass on each backend, in headless Debian Chromium (run
// scripts/build-page.sh first; scripts/bench-page.sh runs this too). For MiniLM at 32 and 256
// tokens and the lecture decoder at 32 and 128, the traced pass the page reports
// (summary.milliseconds) on the CPU (?backend=cpu, one thread, so the two backends are alike
// but for where the arithmetic runs) and on WebGPU (?backend=gpu), alternating, PASSES passes (default 5)
// each; median and range. Here WebGPU's only adapter is SwiftShader, an emulation on the CPU:
// its figures say nothing about a real GPU's. For the causal lecture decoder each round also
// ends the text four words earlier on another word (one token through the KV cache: the CPU's
// and the GPU's own caches; short of the end, so that no word is cut by the context), the pass
// a student editing waits for; the tokens it computed are printed. Writes tests/artifacts/bench-backends-page.json.
// MODELS=lecture-post-ln (names, by commas) measures only those; DIST=dir measures another
// build (e.g. an older commit's dist/), to run beside this one's.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium, gotoAccepting } from './browser.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const PASSES = Number(process.env.PASSES ?? 5);
// One token each for both tokenizers (as scripts/bench-page.mjs).
const WORDS = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day since the first year when we went to see what they had done'.split(' ');
const CASES = [
  { model: 'minilm-l6', specials: 2, sizes: [32, 256] },
  { model: 'lecture-post-ln', specials: 1, sizes: [32, 128], causal: true },
];

const text = (tokens, specials, round) => {
  const words = Array.from({ length: tokens - specials }, (_, i) => WORDS[(i + round) % WORDS.length]);
  return words.join(' ');
};
// The same text with another last word (one token for both tokenizers).
const lastWordChanged = (sentence) => sentence.replace(/\S+$/, (w) => (w === 'the' ? 'of' : 'the'));

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted.at(-1) };
}

const server = await serve(process.env.DIST || join(ROOT, 'dist'), 0);
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium();

async function open(model, backend) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await gotoAccepting(page, `${base}?model=${model}&backend=${backend}&threads=1`);
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
for (const { model, specials, sizes, causal } of CASES.filter((c) => !process.env.MODELS || process.env.MODELS.split(',').includes(c.model))) {
  const pages = { cpu: await open(model, 'cpu'), gpu: await open(model, 'gpu') };
  const adapter = await pages.gpu.evaluate(() => window.__tviz.gpu.adapter);
  for (const tokens of sizes) {
    const times = { cpu: [], gpu: [], cpuCached: [], gpuCached: [] };
    const computed = []; // tokens each cached pass computed
    for (const backend of ['cpu', 'gpu']) await pass(pages[backend], backend, text(tokens, specials, 99)); // warm: kernels compiled, weights uploaded
    for (let round = 0; round < PASSES; round += 1) {
      for (const backend of ['cpu', 'gpu']) {
        const sentence = text(tokens, specials, round); // a new first word: from the first token
        times[backend].push(await pass(pages[backend], backend, sentence));
        if (causal) {
          const edited = lastWordChanged(text(tokens - 4, specials, round));
          times[`${backend}Cached`].push(await pass(pages[backend], backend, edited));
          computed.push(await pages[backend].evaluate(() => document.getElementById('timing').textContent.match(/computed (\d+)/)?.[1]));
        }
      }
    }
    const row = { model, tokens, adapter, cpu: stats(times.cpu), gpu: stats(times.gpu), times };
    const range = (s) => `${s.median} ms (${s.min}-${s.max})`;
    let line = `${model} ${tokens} tokens: CPU (one thread) ${range(row.cpu)}, WebGPU on ${adapter} ${range(row.gpu)}`;
    if (causal) {
      Object.assign(row, { cpuCached: stats(times.cpuCached), gpuCached: stats(times.gpuCached) });
      line += `; ${tokens - 4} tokens, the last word changed (through the KV cache, computing ${[...new Set(computed)].join(' or ')} tokens): CPU ${range(row.cpuCached)}, WebGPU ${range(row.gpuCached)}`;
    }
    results.push(row);
    console.log(line);
  }
  await pages.cpu.close();
  await pages.gpu.close();
}
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });
writeFileSync(join(ROOT, 'tests/artifacts/bench-backends-page.json'), JSON.stringify(results, null, 2));
await browser.close();
server.close();
