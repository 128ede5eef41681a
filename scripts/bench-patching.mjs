// Browser benchmark of patching sentence A into sentence B (the compare box's patching
// grids) in the release page (run scripts/build-page.sh first). For each model it types two
// sentences of the same length that differ in one name (an indirect-object pair), waits for
// the sweep to finish and reads the time the page spent on it (`window.__tvizPatchSweep`: the
// two runs, the shared first tokens' KV cache and every patch, without the pauses between
// slices). Each round changes the first word of both sentences, so every sweep is a new one.
// Beside it, the native CLI's `transformer-viz patch` on the same pair (whole command, one
// thread of matrix products as the page's CPU pass has per core), as the peer.
// Prints medians with their range; ROUNDS=5 by default (SmolLM2: 3).
//   node scripts/bench-patching.mjs [dist]
import { execFileSync } from 'node:child_process';
import { serve } from './static-server.mjs';
import { launchChromium, gotoAccepting } from './browser.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const dist = process.argv[2] ?? `${ROOT}dist`;
const BIN = process.env.TVIZ_BIN ?? `${process.env.CARGO_TARGET_DIR ?? `${ROOT}target`}/release/transformer-viz`;

// Sentences that differ in one name (names the model reads in as many tokens as each other);
// the first word changes every round. SmolLM2 reads them in 16 tokens.
const FIRST = ['When', 'After', 'While', 'Then', 'Once'];
const PAIR = ([a, b], first, name) => `${first} ${a} and ${b} went to the old store, ${name} gave a cold drink to`;
// Each run's answer is its own most likely next token (the lecture decoders and SmolLM2 read
// each name as one token and answer with the other). MODELS=a,b runs only those.
const ALL_MODELS = [
  { name: 'lecture-post-ln', names: ['Tom', 'Sam'], rounds: Number(process.env.ROUNDS ?? 5) },
  { name: 'lecture-pre-ln', names: ['Tom', 'Sam'], rounds: Number(process.env.ROUNDS ?? 5) },
  { name: 'smollm2-135m', names: ['Mary', 'John'], rounds: Number(process.env.ROUNDS ?? 3) },
];
const MODELS = process.env.MODELS ? ALL_MODELS.filter((m) => process.env.MODELS.split(',').includes(m.name)) : ALL_MODELS;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;

const server = await serve(dist, 0);
const url = `http://127.0.0.1:${server.address().port}/`;
const browser = await launchChromium();
try {
  for (const { name, names, answers, rounds } of MODELS) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await gotoAccepting(page, `${url}?model=${name}`);
    await page.waitForFunction((m) => window.__tviz.model === m && window.__tviz.firstViewAt !== undefined, name, { timeout: 300_000 });
    await page.click('#compare summary');
    await page.locator('#patch-block').scrollIntoViewIfNeeded();
    if (answers) {
      await page.fill('#patch-answer', answers[0]);
      await page.fill('#patch-wrong', answers[1]);
    }
    const page_ms = [];
    let tokens = 0;
    let patches = 0;
    let shared = 0;
    for (let round = 0; round < rounds; round += 1) {
      const first = FIRST[round % FIRST.length];
      const renders = await page.evaluate(() => window.__tviz.renders);
      await page.fill('#text', PAIR(names, first, names[1]));
      await page.waitForFunction((n) => window.__tviz.renders > n, renders);
      const before = await page.evaluate(() => window.__tvizPatchSweep.last?.id ?? -1);
      await page.fill('#compare-text', PAIR(names, first, names[0]));
      await page.waitForFunction((id) => {
        const p = window.__tvizPatchSweep.last;
        return p && p.id !== id && p.finished;
      }, before, { timeout: 600_000 });
      const p = await page.evaluate(() => window.__tvizPatchSweep.last);
      const why = await page.evaluate(() => window.__tvizDrawn['patch-heads']?.note ?? '');
      if (!p.total) throw new Error(`${name}: no patching: ${why}`);
      tokens = Number((await page.textContent('#token-count')).split(' ')[0]);
      ({ total: patches, shared } = p);
      page_ms.push(p.milliseconds);
    }
    await context.close();
    // The peer: the native command on the same pair.
    const native_ms = [];
    for (let round = 0; round < rounds; round += 1) {
      const first = FIRST[round % FIRST.length];
      const started = performance.now();
      const answer = answers ? ['--answer', ` ${answers[0]}`, '--wrong', ` ${answers[1]}`] : [];
      execFileSync(BIN, ['patch', '--model', name, '--text', PAIR(names, first, names[1]), '--corrupt', PAIR(names, first, names[0]), ...answer], { cwd: ROOT, env: { ...process.env, RAYON_NUM_THREADS: '1' } });
      native_ms.push(performance.now() - started);
    }
    console.log(`${name}: ${tokens} tokens, ${patches} patches (${shared} shared first tokens): page ${median(page_ms).toFixed(0)} ms (${range(page_ms)}), native CLI ${median(native_ms).toFixed(0)} ms (${range(native_ms)}), ${rounds} rounds`);
  }
} finally {
  await browser.close();
  server.close();
}
