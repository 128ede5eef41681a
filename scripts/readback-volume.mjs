// How much of a GPU pass the page brings back with it (the charts on screen at the top of a
// 1280 x 720 window, every attention weight, tokens, logits, norms) and how much it leaves
// on the device until a chart asks, for MiniLM at 32 and 256 tokens, the lecture decoder at
// 32 and 128 and the encoder-decoder on a 19-character source, on headless Chromium's WebGPU
// adapter (SwiftShader here: the volumes, not the times, are what this measures). Run scripts/build-page.sh first; DIST=dir for another build.
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium } from './browser.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const WORDS = 'the people of our great nation have made many new laws for all men and who work in this country with their own hands every day since the first year when we went to see what they had done'.split(' ');
const CASES = [
  { model: 'minilm-l6', specials: 2, sizes: [32, 256] },
  { model: 'lecture-post-ln', specials: 1, sizes: [32, 128] },
  // The encoder-decoder reverses a source of at most 22 characters: one source, its length.
  { model: 'lecture-reverse', sentences: ['the rest comes back'] },
];
const text = (tokens, specials) => Array.from({ length: tokens - specials }, (_, i) => WORDS[i % WORDS.length]).join(' ');

const server = await serve(process.env.DIST || join(ROOT, 'dist'), 0);
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium();
for (const { model, specials, sizes = [], sentences = sizes.map((tokens) => text(tokens, specials)) } of CASES) {
  const label = (sentence) => (sizes.length ? `${sizes[sentences.indexOf(sentence)]} tokens` : `source "${sentence}"`);
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  await page.goto(`${base}?model=${model}&backend=gpu&threads=1`);
  await page.evaluate(() => window.__tviz.ready);
  await page.waitForFunction(() => window.__tviz.gpu?.active, null, { timeout: 120000 });
  for (const sentence of sentences) {
    await page.fill('#text', sentence);
    await page.waitForFunction((t) => window.__tviz.gpuPassText === t && window.__tviz.gpu.difference, sentence, { timeout: 600000 });
    const r = await page.evaluate(() => ({ ...window.__tviz.gpuReadback, difference: window.__tviz.gpu.difference }));
    const left = r.valuesLeft;
    const read = r.difference.values; // the values that came back (and those computed from them) are compared
    await page.evaluate(() => window.__tvizReadAll());
    await page.waitForFunction(() => window.__tviz.gpu.difference?.unread_steps === 0, null, { timeout: 600000 });
    const all = await page.evaluate(() => window.__tviz.gpu.difference.values);
    console.log(`${model} ${label(sentence)}: ${r.stepsRead} steps asked for (and the tokens, logits, norms); ${read} of the trace's ${all} values came back with the pass, ${left} (${(left * 4 / 1e6).toFixed(2)} MB) stayed on the device, ${r.difference.unread_steps} steps`);
  }
  await page.close();
}
await browser.close();
server.close();
