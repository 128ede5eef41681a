// SmolLM2 on the page: the prediction chart and its decoding controls (drawn stages, the link),
// generation through the KV cache (greedy twice gives the same text, a seed repeats, Stop
// stops, the status line says what the cache gave), and the status line after typing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usePage, openPage as open, typeSentence, drawn, MINILM } from './helpers.mjs';

const env = usePage();
const openPage = (url, options) => open(env, url, options);
const PROMPT = 'The capital of France is';

/** What the prediction chart plotted, once `ready(plotted)` holds (it runs in the page). */
async function prediction(page, ready) {
  const plotted = (d, test) => d.plotted && new Function('p', `return (${test})(p)`)(d.plotted);
  return (await drawn(page, 'prediction', plotted, ready.toString())).plotted;
}

async function openSmol(query = '') {
  const opened = await openPage(`${env.base}?model=smollm2-135m${query}`);
  await opened.page.waitForFunction(() => window.__tviz.model === 'smollm2-135m');
  await typeSentence(opened.page, PROMPT);
  return opened;
}

/** Generates `n` tokens with the current settings and returns the text box's text. */
async function generate(page, n) {
  await page.fill('#gen-tokens', String(n));
  await page.click('#generate');
  await page.waitForFunction((k) => !window.__tvizGeneration.running && window.__tvizGeneration.tokens?.length === k, n, { timeout: 120_000 });
  return page.inputValue('#text');
}

test('the prediction chart draws the decoding stages and keeps them in the link', async () => {
  const { page, context, problems } = await openSmol();
  const own = await prediction(page, (d) => d.settings.temperature === 1);
  assert.equal(own.bars[0].label, '·Paris');
  assert.ok(own.bars.every((b) => b.removed_by === null), 'nothing is cut at the defaults');
  await page.evaluate(() => document.getElementById('prediction-canvas').setAttribute('data-report-texts', ''));
  await page.fill('#temperature', '0');
  const greedyDrawn = await drawn(page, 'prediction', (d) => d.texts && d.plotted?.settings?.temperature === 0);
  const greedy = greedyDrawn.plotted;
  assert.equal(greedy.kept, 1, 'greedy keeps one token');
  assert.equal(greedy.bars[0].renormalised, 1);
  // Greedy names itself as the rule that left the other tokens out (top-k and top-p are off).
  const texts = greedyDrawn.texts.map((t) => t.text);
  assert.ok(greedy.bars.slice(1).every((b) => b.removed_by === 'greedy'));
  assert.equal(texts.filter((t) => t === '✗ greedy').length, greedy.bars.length - 1, texts.join(' | '));
  assert.ok(!texts.some((t) => /✗ top-[kp]|removed by top-[kp]/.test(t)), `a filter that is off is named: ${texts.join(' | ')}`);
  assert.ok(texts.some((t) => /greedy decoding takes the most likely token/.test(t)), texts.join(' | '));
  await page.fill('#temperature', '1');
  await page.fill('#top-k', '3');
  const k3 = await prediction(page, (d) => d.settings.top_k === 3 && d.settings.temperature === 1);
  assert.deepEqual(k3.bars.map((b) => b.removed_by), k3.bars.map((_, i) => (i >= 3 ? 'top-k' : null)));
  const sum = k3.bars.slice(0, 3).reduce((s, b) => s + b.renormalised, 0);
  assert.ok(Math.abs(sum - 1) < 1e-5, `the three kept tokens share all the probability: ${sum}`);
  await page.waitForFunction(() => new URLSearchParams(location.search).get('topk') === '3');
  // Reopened from the link: the same settings.
  const link = await page.evaluate(() => location.href);
  const again = await openPage(link);
  await again.page.waitForFunction(() => window.__tviz.model === 'smollm2-135m');
  assert.equal(await again.page.inputValue('#top-k'), '3');
  const reopened = await prediction(again.page, (d) => d.settings.top_k === 3);
  assert.equal(reopened.kept, 3);
  // A hostile value is refused beside the controls; the chart keeps the last good one.
  await page.fill('#top-k', '-4');
  await page.waitForFunction(() => !document.querySelector('#sampling-message').hidden);
  assert.deepEqual([...problems, ...again.problems], []);
  await context.close();
  await again.context.close();
});

test('generation: greedy repeats, a seed repeats, the cache is reported, Stop stops', { timeout: 300_000 }, async () => {
  const { page, context, problems } = await openSmol('&temp=0');
  const first = await generate(page, 5);
  assert.ok(first.startsWith(`${PROMPT} Paris`), first);
  assert.match(await page.textContent('#generation-status'), /KV cache: 10 tokens/);
  assert.match(await page.textContent('#generation-status'), /tokens\/s/);
  assert.match(await page.textContent('#timing'), /reused 9 of 10 tokens from the KV cache, computed 1/);
  await typeSentence(page, PROMPT);
  assert.match(await page.textContent('#timing'), /for 5 tokens/);
  assert.equal(await generate(page, 5), first, 'greedy decoding gives the same text again');

  // Sampled, with a seed: the same seed gives the same text.
  await typeSentence(page, 'Once upon a');
  await page.fill('#temperature', '1.2');
  await page.fill('#seed', '7');
  const sampled = await generate(page, 6);
  await typeSentence(page, 'Once upon a');
  assert.equal(await generate(page, 6), sampled);

  // Stop: a long generation ends early.
  await typeSentence(page, 'Once upon a');
  await page.fill('#gen-tokens', '200');
  await page.click('#generate');
  await page.waitForFunction(() => window.__tvizGeneration.tokens?.length >= 2);
  await page.click('#stop');
  await page.waitForFunction(() => !window.__tvizGeneration.running);
  const made = await page.evaluate(() => window.__tvizGeneration.tokens.length);
  assert.ok(made < 200, `stopped after ${made} tokens`);
  assert.match(await page.textContent('#generation-status'), /Stopped/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('MiniLM cannot generate and says why', async () => {
  const { page, context, problems } = await openPage(env.base, { model: MINILM });
  assert.equal(await page.isVisible('#generate'), false, 'the decoding controls are for decoders');
  assert.match(await page.textContent('#prediction'), /no next-token prediction/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('SmolLM2 on two threads gives the numbers of one thread: a pass, a cached pass, generation', { timeout: 400_000 }, async () => {
  const read = async (query) => {
    const { page, context, problems } = await openPage(`${env.base}?model=smollm2-135m&layer=29&head=4&temp=1.2&seed=11${query}`);
    await page.waitForFunction(() => window.__tviz.model === 'smollm2-135m');
    await page.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads), null, { timeout: 120_000 });
    const threads = await page.evaluate(() => window.__tviz.cpuThreads);
    const backend = await page.textContent('#backend');
    const views = async () => {
      await page.evaluate(() => window.__tvizFlush());
      return page.evaluate(() => ({
        attention: Array.from(window.__tvizDrawn.attention.values),
        prediction: JSON.stringify(window.__tvizDrawn.prediction.plotted),
      }));
    };
    await typeSentence(page, PROMPT); // from scratch
    const pass = await views();
    await typeSentence(page, `${PROMPT} a city`); // continued through the KV cache
    const timing = await page.textContent('#timing');
    const cached = await views();
    const text = await generate(page, 5);
    const generated = await views();
    assert.deepEqual(problems, []);
    await context.close();
    return { threads, backend, timing, pass, cached, text, generated };
  };
  const shared = await read('&threads=2');
  const alone = await read('&threads=1');
  assert.equal(shared.threads, 'ready');
  assert.equal(shared.backend, 'CPU (WebAssembly, 2 threads)');
  assert.equal(alone.backend, 'CPU (WebAssembly)');
  assert.match(shared.timing, /reused 5 of 7 tokens from the KV cache/);
  assert.ok(shared.pass.attention.length === 25 && shared.cached.attention.length === 49, 'layer 29 head 4: T x T');
  assert.deepEqual(shared.pass, alone.pass, 'a pass differs between one and two threads');
  assert.deepEqual(shared.cached, alone.cached, 'a cached pass differs between one and two threads');
  assert.equal(shared.text, alone.text, 'the same seed generates the same text with one or two threads');
  assert.deepEqual(shared.generated, alone.generated, 'the views after generation differ between one and two threads');
});

test('switching model while generating stops the generation, and the next model generates', { timeout: 300_000 }, async () => {
  const { page, context, problems } = await openPage(env.base); // the lecture decoder, whose twin is a click away
  // Greedy: sampled at temperature 1 the pre-LN twin may end the text after two tokens.
  await page.fill('#temperature', '0');
  for (const pick of [
    () => page.click('#twin-switch button[data-twin="lecture-pre-ln"]'),
    () => page.selectOption('#model', 'lecture-post-ln'),
  ]) {
    // A code said three times: both twins, greedy, write on for dozens of tokens. On the
    // default sentence the post-LN twin writes " 9." and ends the text, a generation too short
    // to catch. Typed again each round: the last round left its own tokens (as many as were
    // written before the switch), after which a twin may end the text at once.
    await typeSentence(page, 'Tom said the code: 7 3 9 1 5 7 3 9 1 5 7 3 9 1 5');
    const from = await page.evaluate(() => window.__tviz.model);
    await page.fill('#gen-tokens', '200');
    await page.click('#generate');
    await page.waitForFunction(() => !window.__tvizGeneration.running || window.__tvizGeneration.tokens.length >= 2);
    assert.ok(await page.evaluate(() => window.__tvizGeneration.running), `${from} stopped after ${await page.evaluate(() => JSON.stringify(window.__tvizGeneration.tokens))}: ${await page.textContent('#generation-status')}`);
    await pick();
    // Stopped at the choice, not once the next model has loaded: meanwhile it would write on to
    // the end of the context.
    assert.ok(await page.evaluate(() => window.__tvizGeneration.stop || !window.__tvizGeneration.running), `the generation goes on after the switch from ${from} was chosen`);
    await page.waitForFunction((m) => window.__tviz.model !== m && !window.__tvizGeneration.running, from);
    assert.ok(await page.isHidden('#generate-message') || (await page.textContent('#generate-message')) === '', `after the switch from ${from}: ${await page.textContent('#generate-message')}`);
    assert.equal(await page.isHidden('#error'), true, `the page reports an error after the switch from ${from}`);
    assert.equal(await page.isEnabled('#generate'), true, `Generate stays disabled after the switch from ${from}`);
    // The new model generates.
    await page.fill('#gen-tokens', '3');
    await page.click('#generate');
    // (It may end the text sooner: greedy, the pre-LN twin ends the post-LN's run of ones with
    // "." and the end token.)
    await page.waitForFunction(() => !window.__tvizGeneration.running && window.__tvizGeneration.tokens?.length >= 1);
    const { tokens } = await page.evaluate(() => window.__tvizGeneration);
    assert.ok(tokens.length === 3 || tokens.at(-1) === '<|endoftext|>', `after the switch from ${from}: ${JSON.stringify(tokens)}`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});
