// Switching parts of the model off: the picker and the attention section's button switch a
// part off, the bar under the sentence lists it (one click puts it back), the table shows the
// next token as trained and without it, the link keeps it and Back restores it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usePage, openPage as open, typeSentence, writtenUrl, drawn } from './helpers.mjs';

const env = usePage();
const openPage = (url, options) => open(env, url, options);

/** The comparison table's rows: [token, as trained %, switched off %]. */
const tableRows = (page) => page.$$eval('#off-table tbody tr', (rows) => rows.map((r) => [...r.children].map((td) => td.textContent)));
const chips = (page) => page.$$eval('#off-list button', (b) => b.map((x) => x.textContent));

test('a part switched off changes the prediction, shows in the bar and the link, and comes back', async () => {
  const { page, context, problems } = await openPage(env.base);
  await typeSentence(page, 'The cat sat on the mat. The cat sat on the');
  assert.equal(await page.isVisible('#off-bar'), false, 'nothing is off at first');
  await page.locator('#switch-section').scrollIntoViewIfNeeded();
  const options = await page.$$eval('#off-part option', (o) => o.map((x) => x.textContent));
  assert.ok(options.includes('layer 0 feed-forward'), options.join(', '));
  assert.ok(options.includes('layer 2 head 3') && options.includes('causal mask'), 'every head and the mask are listed');
  assert.equal(await page.isVisible('#off-attention-canvas'), false, 'no difference chart while nothing is off');

  // Layer 0's feed-forward off, with zeros.
  await page.selectOption('#off-part', { label: 'layer 0 feed-forward' });
  await page.click('#off-add');
  await page.waitForFunction(() => document.querySelectorAll('#off-table tbody tr').length > 0);
  assert.deepEqual(await chips(page), ['layer 0 feed-forward ×']);
  assert.equal(await page.isVisible('#off-bar'), true);
  assert.match(await page.textContent('#off-caption'), /as trained and with layer 0 feed-forward switched off/);
  const rows = await tableRows(page);
  assert.ok(rows.length >= 8, `the top tokens of both: ${rows.length}`);
  const moved = rows.filter(([, a, b]) => a !== b);
  assert.ok(moved.length > 0, `switching the layer off changes some probability: ${JSON.stringify(rows)}`);
  assert.match(await writtenUrl(page), /[?&]off=f0(&|#|$)/);
  // The chosen head's attention changed (layer 0's feed-forward feeds every later layer).
  await page.selectOption('#layer', '2');
  const change = await drawn(page, 'off-attention', (d) => d.geometry && d.values.length > 0);
  assert.equal(await page.isVisible('#off-attention-canvas'), true, 'the difference chart is shown once a part is off');
  assert.ok(change.values.some((v) => Math.abs(v) > 1e-4), 'switching the layer off moves a later head\'s weights');
  assert.ok(change.labels.cols.length > 0);

  // The attention section's button switches its head off too.
  await page.selectOption('#layer', '1');
  await page.selectOption('#head', '2');
  await page.click('#off-this-head');
  await page.waitForFunction(() => document.querySelectorAll('#off-list button').length === 2);
  assert.deepEqual(await chips(page), ['layer 0 feed-forward ×', 'layer 1 head 2 ×']);
  assert.equal(await page.isDisabled('#off-this-head'), true, 'that head is off already');
  assert.match(await writtenUrl(page), /[?&]off=f0%2Ch1\.2(&|#|$)/);

  // One click on its chip puts the layer back; Back switches it off again.
  await page.click('#off-list button:has-text("layer 0 feed-forward")');
  await page.waitForFunction(() => document.querySelectorAll('#off-list button').length === 1);
  assert.match(await writtenUrl(page), /[?&]off=h1\.2(&|#|$)/);
  await page.goBack();
  await page.waitForFunction(() => document.querySelectorAll('#off-list button').length === 2);
  assert.deepEqual(await chips(page), ['layer 0 feed-forward ×', 'layer 1 head 2 ×']);

  // All back on: the bar goes, the table says nothing is off.
  await page.click('#off-clear');
  await page.waitForFunction(() => document.querySelector('#off-bar').hidden);
  assert.equal(await page.isVisible('#off-table'), false);
  assert.match(await page.textContent('#off-empty'), /Nothing is switched off/);
  assert.equal(await page.isVisible('#off-attention-canvas'), false, 'the difference chart goes with the last part');
  assert.doesNotMatch(await writtenUrl(page), /[?&]off=/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a link switches parts off; a part the model lacks is refused beside the picker', async () => {
  const { page, context, problems } = await openPage(`${env.base}?off=h0.1m,mask`);
  await page.waitForFunction(() => document.querySelectorAll('#off-list button').length === 2);
  assert.deepEqual(await chips(page), ['layer 0 head 1 (its mean) ×', 'causal mask ×']);
  assert.match(await page.textContent('#off-note'), /never saw in training/, 'lifting the mask is said to be untrained');

  const { page: other, context: second } = await openPage(`${env.base}?off=h9.0`);
  await other.waitForFunction(() => !document.querySelector('#off-message').hidden);
  assert.match(await other.textContent('#off-message'), /has no layer 9 head 0: it stays on/);
  assert.equal(await other.isVisible('#off-bar'), false, 'nothing is off');
  assert.deepEqual(problems, []);
  await context.close();
  await second.close();
});

test('every model: MiniLM switches heads off with no prediction to compare, the encoder-decoder its cross-attention heads', async () => {
  const { page, context, problems } = await openPage(`${env.base}?model=minilm-l6&off=h0.1&layer=2`);
  await page.waitForFunction(() => window.__tviz.model === 'minilm-l6' && document.querySelectorAll('#off-list button').length === 1);
  assert.deepEqual(await chips(page), ['layer 0 head 1 ×']);
  await page.locator('#switch-section').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /no next-token prediction to compare/.test(document.querySelector('#off-empty').textContent));
  assert.equal(await page.isVisible('#off-table'), false);
  // Attention reads both ways in an encoder: a later layer's head changes with head 0.1 off.
  const change = await drawn(page, 'off-attention', (d) => d.geometry && d.values.length > 0);
  assert.ok(change.values.some((v) => Math.abs(v) > 1e-4), 'a head of layer 2 looks elsewhere without layer 0 head 1');
  await page.locator('#writes').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /no next-token prediction/.test(document.querySelector('#writes-note').textContent));
  assert.equal(await page.isVisible('#writes'), false);

  // The encoder-decoder: without its cross-attention the decoder cannot read the source.
  const { page: rev, context: second } = await openPage(`${env.base}?model=lecture-reverse`);
  await rev.waitForFunction(() => window.__tviz.model === 'lecture-reverse');
  await typeSentence(rev, 'attention heads');
  await rev.waitForFunction(() => document.querySelector('#translation-output')?.textContent === 'sdaeh noitnetta');
  const options = await rev.$$eval('#off-part option', (o) => o.map((x) => x.textContent));
  assert.ok(options.includes('layer 1 cross-attention head 3'), options.join(', '));
  const cross = [0, 1].flatMap((l) => [0, 1, 2, 3].map((h) => `x${l}.${h}`)).join(',');
  await rev.goto(`${env.base}?model=lecture-reverse&off=${cross}`);
  await rev.waitForFunction(() => window.__tviz.model === 'lecture-reverse' && document.querySelectorAll('#off-list button').length === 8);
  await typeSentence(rev, 'attention heads');
  await rev.waitForFunction(() => {
    const out = document.querySelector('#translation-output')?.textContent;
    return out && out !== 'sdaeh noitnetta';
  });
  assert.ok((await chips(rev)).includes('layer 1 cross-attention head 3 ×'));
  assert.deepEqual(problems, []);
  await context.close();
  await second.close();
});

test('each part votes on the answer: shares that add up for pre-LN, switched-off falls for post-LN', async () => {
  const { page, context, problems } = await openPage(`${env.base}?model=lecture-pre-ln`);
  await page.waitForFunction(() => window.__tviz.model === 'lecture-pre-ln');
  await typeSentence(page, 'The cat sat on the mat. The cat sat on the');
  const pre = (await drawn(page, 'votes', (d) => d.plotted?.kind === 'votes' && d.plotted.bars.length > 0)).plotted;
  assert.equal(pre.exact, true);
  const labels = pre.bars.map((b) => b.label);
  assert.equal(labels[0], 'token embedding');
  for (const l of ['position', 'L0 H0', 'L2 H3', 'L2 FFN']) assert.ok(labels.includes(l), `${l} in ${labels}`);
  const sum = pre.bars.reduce((s, b) => s + b.logit, 0);
  assert.ok(Math.abs(sum + pre.bias_term - pre.logit) < 1e-3 * Math.max(1, Math.abs(pre.logit)), `${sum} + ${pre.bias_term} against ${pre.logit}`);
  assert.match(pre.caption, /add up to/);

  const { page: post, context: second } = await openPage(`${env.base}?model=lecture-post-ln`);
  await post.waitForFunction(() => window.__tviz.model === 'lecture-post-ln');
  const votes = (await drawn(post, 'votes', (d) => d.plotted?.kind === 'votes' && d.plotted.bars.length > 0)).plotted;
  assert.equal(votes.exact, false);
  assert.match(votes.caption, /switched off/);
  assert.ok(!votes.bars.some((b) => b.label === 'token embedding'), 'the embedding cannot be switched off');
  assert.deepEqual(problems, []);
  await context.close();
  await second.close();
});

test('what one part writes: the head chosen above, then a clicked bar, each with the tokens it pushes up and down', async () => {
  const { page, context, problems } = await openPage(`${env.base}?model=lecture-pre-ln&layer=1&head=2`);
  await page.waitForFunction(() => window.__tviz.model === 'lecture-pre-ln');
  await typeSentence(page, 'The cat sat on the mat. The cat sat on the');
  await page.locator('#writes').scrollIntoViewIfNeeded();
  const lists = async (caption) => {
    await page.waitForFunction((c) => document.querySelector('#writes-up-caption').textContent === `${c} pushes up`
      && document.querySelectorAll('#writes-up tbody tr').length === 8
      && document.querySelectorAll('#writes-down tbody tr').length === 8, caption);
    return page.evaluate(() => Object.fromEntries(['up', 'down'].map((w) => [w, [...document.querySelectorAll(`#writes-${w} tbody tr`)]
      .map((tr) => ({ token: tr.children[0].textContent, logit: Number(tr.children[1].textContent.replace('−', '-')) }))])));
  };
  // The head the attention section shows.
  const head = await lists('layer 1 head 2');
  assert.ok(head.up.every((r, i) => i === 0 || r.logit <= head.up[i - 1].logit), `pushes up, strongest first: ${JSON.stringify(head.up)}`);
  assert.ok(head.down.every((r, i) => i === 0 || r.logit >= head.down[i - 1].logit), `pushes down, strongest first: ${JSON.stringify(head.down)}`);
  assert.ok(head.up[0].logit > head.down[0].logit);
  assert.ok(head.up.every((r) => r.token.length > 0));
  assert.match(await page.textContent('#writes-note'), /final norm/);
  // A click on the last feed-forward layer's bar of the votes chart lists what it writes.
  const votes = (await drawn(page, 'votes', (d) => d.plotted?.kind === 'votes' && d.plotted.bars.length > 0));
  const bar = votes.plotted.bars.find((b) => b.label === 'L2 FFN');
  assert.deepEqual(bar.part, { part: 'ffn', layer: 2 });
  // The bar's row in the middle of the window (the chart may be taller than the window).
  const middle = (bar.top + bar.bottom) / 2;
  await page.evaluate(([y, h]) => {
    const r = document.querySelector('#votes-canvas').getBoundingClientRect();
    window.scrollBy(0, r.top + (y * r.height) / h - innerHeight / 2);
  }, [middle, votes.height]);
  const box = await page.locator('#votes-canvas').boundingBox();
  await page.mouse.click(box.x + box.width / 2, box.y + (middle * box.height) / votes.height);
  const ffn = await lists('layer 2 feed-forward');
  assert.notDeepEqual(ffn.up.map((r) => r.token), head.up.map((r) => r.token));
  assert.equal(await page.inputValue('#writes-part').then((v) => page.evaluate((i) => document.querySelector('#writes-part').options[i].textContent, Number(v))), 'layer 2 feed-forward');
  // The post-LN twin: the effect of switching the part off, said as such.
  await page.goto(`${env.base}?model=lecture-post-ln&layer=0&head=3`);
  await page.waitForFunction(() => window.__tviz.model === 'lecture-post-ln');
  await page.locator('#writes').scrollIntoViewIfNeeded();
  await lists('layer 0 head 3');
  assert.match(await page.textContent('#writes-note'), /switched off/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('patching sentence A into B: the grids are drawn, the changed token restores all, a click opens a head', { timeout: 120_000 }, async () => {
  const { page, context, problems } = await openPage(env.base);
  await page.click('#compare summary');
  // Two sentences one token apart in this model's vocabulary (the page's counts say which).
  const text = (w) => `The ${w} sat on the mat, and then it sat on the`;
  let pair = null;
  for (const [a, b] of [['cat', 'dog'], ['cat', 'hat'], ['red', 'big'], ['man', 'boy'], ['1', '7']]) {
    await typeSentence(page, text(a));
    const runs = await page.evaluate(() => window.__tviz.compareRuns ?? 0);
    await page.fill('#compare-text', text(b));
    await page.waitForFunction((n) => (window.__tviz.compareRuns ?? 0) > n, runs);
    const statusB = await page.textContent('#compare-status');
    const tokensA = Number((await page.textContent('#token-count')).split(' ')[0]);
    const tokensB = Number(/Sentence B: (\d+) tokens/.exec(statusB)?.[1]);
    if (tokensA === tokensB) { pair = [a, b]; break; }
  }
  assert.ok(pair, 'some pair of words is one token each');
  // Two answers every byte-level vocabulary has as one token.
  await page.fill('#patch-answer', 'the');
  await page.fill('#patch-wrong', 'a');
  await page.dispatchEvent('#patch-wrong', 'change');
  const heads = await drawn(page, 'patch-heads', (d) => d.geometry && d.values.length === 12);
  assert.deepEqual(heads.row_labels, ['layer 0', 'layer 1', 'layer 2']);
  const stream = await drawn(page, 'patch-stream', (d) => d.geometry && d.row_labels.length === 3);
  const cols = stream.col_labels.length;
  const changed = stream.col_labels.findIndex((l) => l.includes('/'));
  assert.ok(changed > 0, `the token that differs is labelled with both: ${stream.col_labels}`);
  assert.ok(Math.abs(stream.values[changed] - 1) < 1e-3, `A's token put into B before the first layer restores all: ${stream.values[changed]}`);
  for (let c = 0; c < changed; c += 1) assert.ok(Math.abs(stream.values[c]) < 1e-3, `token ${c} is the same in both: ${stream.values[c]}`);
  assert.equal(stream.values.length, 3 * cols);

  // A click on the head grid's cell of layer 2, head 1 opens that head.
  await page.locator('canvas[data-chart="patch-heads"]').scrollIntoViewIfNeeded();
  const box = await page.locator('canvas[data-chart="patch-heads"]').boundingBox();
  const g = heads.geometry;
  const scale = box.width / heads.width;
  await page.mouse.click(box.x + (g.left + g.width * (1.5 / 4)) * scale, box.y + (g.top + g.height * (2.5 / 3)) * scale);
  await page.waitForFunction(() => document.querySelector('#layer').value === '2' && document.querySelector('#head').value === '1');
  assert.deepEqual(problems, []);
  await context.close();
});

test('patching SmolLM2 runs in slices: a progress bar, Stop and Continue, the shared first tokens computed once, then the grids', { timeout: 600_000 }, async (t) => {
  const { page, context, problems } = await openPage(`${env.base}?model=smollm2-135m`);
  await page.waitForFunction(() => window.__tviz.model === 'smollm2-135m', null, { timeout: 120_000 });
  await page.click('#compare summary');
  // The two sentences differ in their last token, after the same first tokens (each patched run
  // computes only the tokens from there on: here one, so the sweep's 300 patches are quick).
  await typeSentence(page, 'When Mary and John went to the old store to buy a cold drink, they gave it to John');
  const runs = await page.evaluate(() => window.__tviz.compareRuns ?? 0);
  await page.fill('#compare-text', 'When Mary and John went to the old store to buy a cold drink, they gave it to Mary');
  await page.waitForFunction((n) => (window.__tviz.compareRuns ?? 0) > n, runs);
  await page.locator('#patch-block').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /^Patching: \d+ of \d+ patches/.test(document.querySelector('#patch-status').textContent), null, { timeout: 120_000 });
  const status = await page.textContent('#patch-status');
  const [, total] = /of (\d+) patches/.exec(status).map(Number);
  const shared = Number(/the first (\d+) tokens are the same in both/.exec(status)?.[1]);
  const tokens = Number((await page.textContent('#token-count')).split(' ')[0]);
  assert.ok(shared >= 12 && shared < tokens, `${shared} shared tokens of ${tokens}`);
  // Every head of its 30 layers of 9, and the stream from the first token that differs on.
  assert.equal(total, 30 * 9 + 30 * (tokens - shared));
  assert.equal(await page.getAttribute('#patch-progress', 'max'), String(total));

  // Stop: no more patches are made, and the chart says how far it came.
  await page.click('#patch-stop');
  await page.waitForFunction(() => !window.__tvizPatchSweep.running);
  const stopped = await page.evaluate(() => window.__tvizPatchSweep.last);
  t.diagnostic(`stopped at ${stopped.done} of ${total} patches`);
  assert.ok(!stopped.finished && stopped.done < total, `stopped at ${stopped.done} of ${total}`);
  assert.match(await page.textContent('#patch-status'), new RegExp(`^Stopped after ${stopped.done} of ${total} patches`));
  assert.equal(await page.textContent('#patch-stop'), 'Continue');
  assert.equal(await page.evaluate(() => window.__tvizPatchSweep.last.done), stopped.done);

  // Continue: the sweep finishes and both grids are drawn from it.
  await page.click('#patch-stop');
  await page.waitForFunction(() => /^\d+ patches in /.test(document.querySelector('#patch-status').textContent), null, { timeout: 480_000 });
  const heads = await drawn(page, 'patch-heads', (d) => d.geometry && d.values.length === 270);
  assert.equal(heads.row_labels.length, 30);
  const stream = await drawn(page, 'patch-stream', (d) => d.geometry && d.row_labels.length === 30);
  const cols = stream.col_labels.length;
  // Before the first token that differs the stream is the same in both runs: nothing moves.
  for (let c = 0; c < shared; c += 1) assert.equal(stream.values[c], 0, `token ${c}`);
  const changed = stream.col_labels.findIndex((l) => l.includes('/'));
  assert.equal(changed, shared, `the first token that differs is labelled with both: ${stream.col_labels}`);
  assert.ok(Math.abs(stream.values[changed] - 1) < 1e-2, `A's token put into B before the first layer restores all: ${stream.values[changed]}`);
  assert.equal(stream.values.length, 30 * cols);
  assert.deepEqual(problems, []);
  await context.close();
});
