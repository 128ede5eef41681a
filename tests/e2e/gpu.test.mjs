// The GPU backend in the page: WebGPU through wgpu, on headless Chromium's only adapter here,
// SwiftShader (an emulation on the CPU: these tests check correctness, never speed). The
// same sentence's views computed on the GPU and on the CPU agree within the stated bounds
// (attention 1e-4, other values 1e-3 relative); a device destroyed while the page is in use
// hands the page to the CPU without a reload; without WebGPU the page says it computes on
// the CPU and shows every view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usePage, openPage, typeSentence, CHARTS, isBlank, isShownAndBlank, MINILM } from './helpers.mjs';

const env = usePage();
const SENTENCE = 'The GPU and the CPU compute this sentence alike.';
const LONG = 120000; // SwiftShader compiles each kernel on first use: a first GPU pass is slow

/** Waits until the GPU pass of `text` has been installed, then brings back what it left on
 * the device (the charts off screen read it) and draws every chart. */
async function gpuPassOf(page, text) {
  await page.waitForFunction((t) => window.__tviz.gpuPassText === t && window.__tviz.gpu?.difference, text, { timeout: LONG });
  await page.evaluate(() => window.__tvizReadAll());
  await page.waitForFunction(() => window.__tviz.gpu.difference?.unread_steps === 0 || window.__tviz.gpu.lost, null, { timeout: LONG });
}

/**
 * Waits for the GPU pass of `text`, asserts the page computed it on the GPU (no loss, no
 * fallback) and that it is the CPU's pass within the bounds, and returns `__tviz.gpu`.
 */
async function gpuPassAgreeing(page, text) {
  await gpuPassOf(page, text);
  const gpu = await page.evaluate(() => window.__tviz.gpu);
  assert.equal(gpu.lost, null);
  assert.equal(gpu.difference.error, undefined, gpu.difference.error);
  assert.ok(gpu.difference.attention < 1e-4, `attention differs by ${gpu.difference.attention}`);
  assert.ok(gpu.difference.other < 1e-3, `a value differs by ${gpu.difference.other} relative`);
  assert.ok(gpu.difference.other > 0, 'the GPU computed the pass (its rounding differs somewhere from the CPU\'s)');
  assert.equal(await page.textContent('#backend'), 'GPU (WebGPU)');
  return gpu;
}

// The tests that compare numbers do it on MiniLM's layer 5 head 3 and step 100.
const ON_MINILM = { model: MINILM };

/** The numbers two views drew: layer 5 head 3's attention and the stepper's step 100. */
const drawnValues = (page) => page.evaluate(() => ({
  attention: Array.from(window.__tvizDrawn.attention.values),
  step: Array.from(window.__tvizDrawn.step.values),
}));

function largest(a, b, relative) {
  assert.equal(a.length, b.length);
  let gap = 0;
  for (let i = 0; i < a.length; i += 1) gap = Math.max(gap, Math.abs(a[i] - b[i]) / (relative ? Math.max(1, Math.abs(a[i])) : 1));
  return gap;
}

async function cpuValues(text) {
  const { page, context, problems } = await openPage(env, `${env.base}?layer=5&head=3&step=100&backend=cpu`, ON_MINILM);
  await typeSentence(page, text);
  await page.evaluate(() => window.__tvizFlush());
  const values = await drawnValues(page);
  assert.equal(await page.evaluate(() => window.__tviz.gpuPasses), 0, 'backend=cpu never computes on the GPU');
  assert.deepEqual(problems, []);
  await context.close();
  return values;
}

test('with ?backend=gpu the views are computed on the GPU, name its adapter and agree with the CPU', async () => {
  const cpu = await cpuValues(SENTENCE);
  const { page, context, problems } = await openPage(env, `${env.base}?layer=5&head=3&step=100&backend=gpu`, ON_MINILM);
  await page.waitForFunction(() => window.__tviz.gpu?.active, null, { timeout: LONG });
  await typeSentence(page, SENTENCE);
  const gpu = await gpuPassAgreeing(page, SENTENCE);
  assert.equal(gpu.software, true, 'SwiftShader is a software adapter');
  assert.ok(gpu.difference.values > 100000, 'every step of the pass was compared');
  assert.match(await page.textContent('#gpu-status'), /^on google swiftshader \(software\); largest difference from the CPU: attention/);
  assert.match(await page.getAttribute('#gpu-status', 'title'), /swiftshader on BrowserWebGpu/);
  // The views read the GPU's numbers, and they are the CPU's within the bounds.
  const drawn = await drawnValues(page);
  assert.ok(drawn.attention.length > 100 && drawn.step.length > 100);
  assert.ok(largest(cpu.attention, drawn.attention, false) < 1e-4);
  assert.ok(largest(cpu.step, drawn.step, true) < 1e-3);
  assert.notDeepEqual(drawn.step, cpu.step, 'the GPU computed these (its rounding differs somewhere from the CPU\'s)');
  for (const chart of CHARTS) assert.equal(await isBlank(page, chart), false, `${chart} is blank`);
  // The switch runs the same sentence on the CPU: the CPU's own numbers, exactly.
  await page.selectOption('#backend-choice', 'cpu');
  await page.waitForFunction(() => /^CPU/.test(document.getElementById('backend').textContent) && /backend=cpu/.test(location.search));
  await page.evaluate(() => window.__tvizFlush());
  await page.waitForFunction((want) => window.__tvizDrawn.step.values.length === want.length
    && Array.from(window.__tvizDrawn.step.values).every((v, i) => v === want[i]), cpu.step);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a GPU pass brings back what the charts on screen draw, and the rest when a chart needs it', async () => {
  const cpu = await cpuValues(SENTENCE);
  const { page, context, problems } = await openPage(env, `${env.base}?layer=5&head=3&step=100&backend=gpu`, ON_MINILM);
  await page.waitForFunction(() => window.__tviz.gpu?.active, null, { timeout: LONG });
  await typeSentence(page, SENTENCE);
  await page.waitForFunction((t) => window.__tviz.gpuPassText === t && window.__tviz.gpu?.difference, SENTENCE, { timeout: LONG });
  const partial = await page.evaluate(() => ({ ...window.__tviz.gpuReadback, difference: window.__tviz.gpu.difference }));
  // The pass left most of its values on the device: what no chart on screen draws.
  assert.ok(partial.valuesLeft > 0, 'values were left on the device');
  assert.ok(partial.difference.unread_steps > 0 && partial.difference.values > 0, 'the difference covers the values read back');
  assert.ok(partial.difference.attention < 1e-4 && partial.difference.other < 1e-3);
  assert.match(await page.textContent('#gpu-status'), /steps still on the GPU/);
  // The head large, on screen, was drawn from the values the pass brought back, with no
  // second readback.
  assert.equal(partial.restReads, 0, 'the charts on screen needed nothing more');
  await page.waitForFunction((want) => window.__tvizDrawn.attention?.values.length === want.length, cpu.attention);
  const attention = await page.evaluate(() => Array.from(window.__tvizDrawn.attention.values));
  assert.ok(largest(cpu.attention, attention, false) < 1e-4, 'the GPU pass\'s attention, drawn');
  // The stepper's step 100 is read when it comes on screen: one readback brings the rest,
  // and the chart then shows the GPU's numbers (the CPU's within the bounds).
  await page.locator('canvas[data-chart="step"]').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.__tviz.gpuReadback.restReads >= 1, null, { timeout: LONG });
  await page.waitForFunction((want) => {
    const drawn = window.__tvizDrawn.step?.values;
    if (!drawn || drawn.length !== want.length) return false;
    return Array.from(drawn).every((v, i) => Math.abs(v - want[i]) / Math.max(1, Math.abs(want[i])) < 1e-3);
  }, cpu.step, { timeout: LONG });
  assert.notDeepEqual(await page.evaluate(() => Array.from(window.__tvizDrawn.step.values)), cpu.step, 'computed on the GPU');
  // Every value has come back, and the difference now covers the whole pass.
  await page.waitForFunction(() => window.__tviz.gpu.difference?.unread_steps === 0, null, { timeout: LONG });
  const whole = await page.evaluate(() => ({ ...window.__tviz.gpuReadback, difference: window.__tviz.gpu.difference }));
  assert.equal(whole.valuesLeft, 0);
  assert.ok(whole.difference.values > partial.difference.values);
  assert.ok(whole.difference.attention < 1e-4 && whole.difference.other < 1e-3);
  assert.doesNotMatch(await page.textContent('#gpu-status'), /still on the GPU/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('SmolLM2 runs on the GPU from its 4-bit blocks, agrees with the CPU and predicts the same word', async () => {
  const prompt = 'The capital of France is';
  // The prompt comes in the link, so the first GPU pass is the prompt's (SwiftShader takes
  // tens of seconds for SmolLM2's 30 layers).
  const { page, context, problems } = await openPage(env, `${env.base}?backend=gpu&text=${encodeURIComponent(prompt)}`, { model: 'smollm2-135m' });
  await page.waitForFunction(() => window.__tviz.model === 'smollm2-135m' && window.__tviz.gpu?.active, null, { timeout: LONG });
  await gpuPassAgreeing(page, prompt);
  await page.locator('canvas[data-chart="prediction"]').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.__tvizDrawn.prediction?.plotted);
  assert.equal(await page.evaluate(() => window.__tvizDrawn.prediction.plotted.bars[0].label), '·Paris');
  assert.deepEqual(problems, []);
  await context.close();
});

test('a GPU device lost while the page is in use hands every later pass to the CPU, without a reload', async () => {
  const { page, context, problems } = await openPage(env, `${env.base}?layer=5&head=3&step=100&backend=gpu`, ON_MINILM);
  await page.waitForFunction(() => window.__tviz.gpu?.active, null, { timeout: LONG });
  await typeSentence(page, 'A first sentence on the GPU.');
  await gpuPassOf(page, 'A first sentence on the GPU.');
  await page.evaluate(() => window.__tviz.loseGpu()); // device.destroy(), then a pass
  await page.waitForFunction(() => window.__tviz.gpu.lost !== null, null, { timeout: LONG });
  assert.match(await page.textContent('#notice'), /The GPU stopped/);
  assert.match(await page.textContent('#gpu-status'), /stopped/);
  await page.waitForFunction(() => /^CPU/.test(document.getElementById('backend').textContent));
  const cpu = await cpuValues(SENTENCE);
  await typeSentence(page, SENTENCE);
  await page.evaluate(() => window.__tvizFlush());
  assert.deepEqual(await drawnValues(page), cpu, 'after the loss the views show the CPU\'s numbers');
  for (const chart of CHARTS) assert.equal(await isBlank(page, chart), false, `${chart} is blank`);
  assert.equal(await page.isDisabled('#backend-choice option[value=gpu]'), true);
  assert.deepEqual(problems, []);
  await context.close();
});

test('without WebGPU the page computes on the CPU, says why, and shows every view', async () => {
  const { page, context, problems } = await openPage(env, `${env.base}?backend=gpu`, {
    route: (p) => p.addInitScript(() => Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined })),
  });
  await page.waitForFunction(() => /no WebGPU/.test(document.getElementById('gpu-status').textContent));
  assert.match(await page.textContent('#backend'), /^CPU \(WebAssembly/);
  await typeSentence(page, SENTENCE);
  await page.evaluate(() => window.__tvizFlush());
  // The page's default model: the charts it does not have say why instead.
  for (const chart of CHARTS) assert.equal(await isShownAndBlank(page, chart), false, `${chart} is blank`);
  assert.equal(await page.evaluate(() => window.__tviz.gpuPasses), 0);
  assert.deepEqual(problems, []);
  await context.close();
});

test('by default a software adapter is offered, not used', async () => {
  const { page, context, problems } = await openPage(env, env.base);
  await page.waitForFunction(() => /unused/.test(document.getElementById('gpu-status').textContent), null, { timeout: LONG });
  assert.match(await page.textContent('#gpu-status'), /^GPU \(software\): unused$/);
  assert.match(await page.getAttribute('#gpu-status', 'title'), /swiftshader on BrowserWebGpu.*emulates a GPU on the CPU/);
  assert.match(await page.textContent('#backend'), /^CPU/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the encoder-decoder decodes on the GPU: the same output, its cross-attention within the bounds', async () => {
  const source = 'gpu reads this';
  const { page, context, problems } = await openPage(env, `${env.base}?backend=gpu&text=${encodeURIComponent(source)}`, { model: 'lecture-reverse' });
  await page.waitForFunction(() => window.__tviz.gpu?.active, null, { timeout: LONG });
  // Its traced passes bring back what the charts on screen draw, as any model's: the
  // encoder's pass (no chart draws its steps) and the decoder's other steps stay on the device.
  await page.waitForFunction((t) => window.__tviz.gpuPassText === t && window.__tviz.gpu?.difference, source, { timeout: LONG });
  const partial = await page.evaluate(() => ({ ...window.__tviz.gpuReadback, difference: window.__tviz.gpu.difference }));
  assert.equal(partial.restReads, 0, 'the charts on screen needed nothing more');
  assert.ok(partial.valuesLeft > 0 && partial.difference.unread_steps > 0, 'values were left on the device');
  // The rest of both passes comes back in one readback when asked.
  await gpuPassAgreeing(page, source);
  assert.equal(await page.evaluate(() => window.__tviz.gpuReadback.valuesLeft), 0);
  // The decoded output and the cross-attention chart come from the GPU's passes.
  await page.waitForFunction((want) => document.getElementById('translation-section').textContent.includes(want), [...source].reverse().join(''));
  await page.locator('canvas[data-chart="cross"]').scrollIntoViewIfNeeded();
  await page.evaluate(() => window.__tvizFlush());
  assert.equal(await isBlank(page, 'cross'), false, 'the cross-attention heatmap is drawn');
  // Opened by a link, the 64-wide model's wave charts keep the default features that fit it.
  assert.equal(await page.isHidden('#error'), true, await page.textContent('#error'));
  assert.deepEqual(problems, []);
  await context.close();
});

/** Greedy-generates `n` tokens and returns the text box's text and the generation's status. */
async function generateGreedy(page, n) {
  await page.fill('#temperature', '0');
  await page.fill('#gen-tokens', String(n));
  await page.click('#generate');
  await page.waitForFunction((k) => !window.__tvizGeneration.running && window.__tvizGeneration.tokens?.length === k, n, { timeout: LONG });
  return { text: await page.inputValue('#text'), status: await page.textContent('#generation-status') };
}

test('a causal model on the GPU continues its passes through the KV cache on the device: typing and generating', { timeout: 600_000 }, async (t) => {
  const prompt = 'The cat sat';
  const longer = `${prompt} on the mat and`;
  const { page, context, problems } = await openPage(env, `${env.base}?backend=gpu&text=${encodeURIComponent(prompt)}`, { model: 'lecture-post-ln' });
  await page.waitForFunction(() => window.__tviz.gpu?.active, null, { timeout: LONG });
  await gpuPassAgreeing(page, prompt);
  const before = (await page.evaluate(() => window.__tviz.gpuPasses));
  // Words typed after the prompt: the pass computes only the new tokens on the GPU, the
  // prompt's keys and values taken from the device's cache and its rows from the last trace.
  await page.fill('#text', longer);
  await page.waitForFunction((t) => window.__tviz.gpuPassText === t, longer, { timeout: LONG });
  const timing = await page.textContent('#timing');
  const [, reused, total] = timing.match(/reused (\d+) of (\d+) tokens from the KV cache/) ?? [];
  assert.ok(Number(reused) > 0 && Number(reused) < Number(total), `the GPU pass reused the prompt's tokens: ${timing}`);
  t.diagnostic(`typed on the GPU: ${timing}`);
  assert.ok(await page.evaluate((n) => window.__tviz.gpuPasses > n, before));
  // The continued trace is the CPU's pass on the whole text, within the bounds.
  await gpuPassAgreeing(page, longer);
  // Generation runs on the GPU too, a pass a token through the same cache, and greedy
  // decoding writes what the CPU's writes.
  const passes = await page.evaluate(() => window.__tviz.gpuPasses);
  const onGpu = await generateGreedy(page, 4);
  assert.equal(await page.evaluate(() => window.__tviz.gpuPasses), passes + 4, 'every token was a GPU pass');
  assert.equal(await page.textContent('#backend'), 'GPU (WebGPU)');
  assert.match(onGpu.status, /KV cache: \d+ tokens/);
  await page.waitForFunction(() => window.__tviz.gpu.difference && !window.__tviz.gpu.difference.error, null, { timeout: LONG });
  const cpu = await openPage(env, `${env.base}?backend=cpu&text=${encodeURIComponent(longer)}`, { model: 'lecture-post-ln' });
  await cpu.page.waitForFunction((t) => window.__tviz.renders > 0 && document.querySelector('#text').value === t, longer);
  const onCpu = await generateGreedy(cpu.page, 4);
  assert.equal(onGpu.text, onCpu.text, 'greedy decoding on the GPU writes the CPU\'s text');
  assert.notEqual(onGpu.text, longer);
  t.diagnostic(`generated on the GPU and on the CPU: ${JSON.stringify(onGpu.text)}; ${onGpu.status}`);
  assert.equal(onGpu.status.match(/KV cache: \d+ tokens/)[0], onCpu.status.match(/KV cache: \d+ tokens/)[0], 'both caches hold every token');
  // Typing during a generation on the GPU stops it; the typed text stays and gets its pass.
  const typed = 'The dog';
  await page.fill('#gen-tokens', '40');
  await page.click('#generate');
  await page.waitForFunction(() => window.__tvizGeneration.tokens?.length >= 1, null, { timeout: LONG });
  await page.fill('#text', typed);
  await page.waitForFunction((t) => !window.__tvizGeneration.running && window.__tviz.gpuPassText === t, typed, { timeout: LONG });
  assert.equal(await page.inputValue('#text'), typed, 'the generation did not write over the typed text');
  assert.ok(await page.evaluate(() => window.__tvizGeneration.tokens.length < 40), 'the generation stopped');
  assert.deepEqual([...problems, ...cpu.problems], []);
  await context.close();
  await cpu.context.close();
});
