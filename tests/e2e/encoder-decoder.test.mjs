// The lecture's encoder-decoder in the page: chosen in the picker it takes its own example,
// decodes a held-out source correctly (greedy, step by step), draws cross-attention that
// follows the anti-diagonal, refuses characters it cannot spell with a message, and a link
// reopens the same view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { usePage, openPage, typeSentence, drawn, goToStep, ARTIFACTS } from './helpers.mjs';

const env = usePage();

/** The trainer's held-out test (src/train/reversal.rs `is_held_out`): FNV-1a, one in eight. */
function isHeldOut(text) {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(text)) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return text.length >= 4 && h % 8n === 0n;
}

/** Held-out sources of 6 to 16 letters: strings no training run has seen. */
function heldOutSources(n) {
  const out = [];
  let x = 17;
  while (out.length < n) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const len = 6 + (x % 11);
    let s = '';
    for (let i = 0; i < len; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      s += String.fromCharCode(97 + ((x >> 8) % 26));
    }
    if (isHeldOut(s)) out.push(s);
  }
  return out;
}

/** The cross-attention chart once it shows `rows` target and `cols` source tokens. */
function crossDrawn(page, rows, cols) {
  return drawn(page, 'cross', (d, [r, c]) => d.values?.length === r * c && d.row_labels.length === r && d.col_labels.length === c, [rows, cols]);
}

/** Mean weight on the anti-diagonal: row r reads source column n - r (column 0: start token). */
function antiDiagonal(values, n) {
  const cols = n + 1;
  let sum = 0;
  for (let r = 0; r < n; r++) sum += values[r * cols + (n - r)];
  return sum / n;
}

test('the encoder-decoder decodes held-out sources step by step and its cross-attention follows the anti-diagonal', async () => {
  const { page, context, problems } = await openPage(env, env.base); // the page's default model
  await page.waitForFunction(() => window.__tviz.model === 'lecture-post-ln');
  assert.equal(await page.isVisible('#translation-section'), false, 'a decoder-only model has no encoder-decoder section');
  await page.selectOption('#model', 'lecture-reverse');
  await page.waitForFunction(() => window.__tviz.model === 'lecture-reverse');
  await page.waitForFunction(() => document.querySelector('#translation-output')?.textContent === 'sdaeh noitnetta');
  assert.equal(await page.inputValue('#text'), 'attention heads', 'the sentence it cannot spell was replaced by its example');
  assert.match(await page.textContent('#notice'), /only lowercase letters and spaces/);
  assert.equal(await page.isVisible('#translation-section'), true);
  // 15 characters: 15 letters then the end token, one decoding step each.
  assert.equal(await page.locator('#decode-steps li').count(), 16);
  assert.match(await page.textContent('#decode-steps li:last-child'), /end/);
  assert.match(await page.textContent('#token-count'), /16 \/ 24 source tokens/);

  for (const source of heldOutSources(3)) {
    await typeSentence(page, source);
    const want = [...source].reverse().join('');
    await page.waitForFunction((w) => document.querySelector('#translation-output').textContent === w, want);
  }
  // The last held-out source's cross-attention, every head of the last decoder layer.
  const source = heldOutSources(3)[2];
  const n = source.length;
  await page.selectOption('#cross-layer', '1');
  let best = 0;
  for (let head = 0; head < 4; head++) {
    await page.selectOption('#cross-head', String(head));
    await page.waitForFunction((h) => window.__tvizDrawn.cross && new URLSearchParams(location.search).get('head') === String(h), head);
    const drawn = await crossDrawn(page, n + 1, n + 1);
    assert.deepEqual(drawn.col_labels.slice(1).join(''), source, 'source tokens across');
    best = Math.max(best, antiDiagonal(drawn.values, n));
  }
  assert.ok(best > 0.5, `the best head of decoder layer 1 puts ${best.toFixed(2)} of its weight on the anti-diagonal`);
  await page.locator('#translation-section').screenshot({ path: join(ARTIFACTS, 'encoder-decoder.png') });

  // The stepper walks the decoder's pass: the encoder's output, then in every decoder layer
  // the cross-attention steps, whose keys are read from the encoder's output.
  const walk = await page.evaluate(() => {
    const slider = document.querySelector('#step-slider');
    const out = [];
    for (let i = 0; i <= Number(slider.max); i++) {
      slider.value = String(i);
      slider.dispatchEvent(new Event('input', { bubbles: true })); // handled at once (stepper.js)
      out.push([document.querySelector('#step-title').textContent, document.querySelector('#step-shapes').textContent, document.querySelector('#diagram li.current')?.textContent ?? null]);
    }
    return out;
  });
  const titles = walk.map(([title]) => title);
  assert.ok(titles.includes('Encoder output'), titles.join(' | '));
  for (const layer of [0, 1]) {
    for (const name of ['Cross-attention queries', 'Cross-attention keys', 'Cross-attention softmax', 'Residual add (cross-attention)']) {
      assert.ok(titles.includes(`${name} (layer ${layer})`), `${name} (layer ${layer}) is missing from ${titles.join(' | ')}`);
    }
  }
  // The cross-attention scores' columns are the source's tokens (the encoder output's rows),
  // its rows the decoder's: a student reads where each written token looks in the source.
  const stepLabels = async (title) => {
    await goToStep(page, titles.indexOf(title));
    const d = await drawn(page, 'step', (x, t) => document.querySelector('#step-title').textContent === t && x.row_labels, title);
    return { rows: d.row_labels, cols: d.col_labels };
  };
  const sourceTokens = (await stepLabels('Encoder output')).rows;
  assert.equal(sourceTokens.length, n + 1, `the encoder output's rows: ${sourceTokens}`);
  const scores = await stepLabels('Cross-attention scores (layer 0)');
  assert.deepEqual(scores.cols, sourceTokens, 'the cross-attention scores\' columns are not the source tokens');
  assert.notDeepEqual(scores.rows, sourceTokens, 'the rows should be the decoder\'s tokens');
  // The block diagram has the cross-attention sublayer, and lights its parts as they are stepped through.
  const lit = (title) => walk.find(([t]) => t === title)?.[2];
  assert.equal(lit('Cross-attention scores (layer 0)'), 'cross scores');
  assert.equal(lit('Cross-attention softmax (layer 1)'), 'cross softmax');
  assert.equal(lit('Encoder output'), 'encoder output');
  const keys = walk.find(([title]) => title === 'Cross-attention keys (layer 0)')[1];
  assert.match(keys, new RegExp(`in: Encoder output \\[${n + 1} source tokens × 64 features\\].*→\\s+out: Cross-attention keys \\(layer 0\\) \\[`), keys);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the encoder-decoder refuses characters it cannot spell, and a link reopens its view', async () => {
  const url = `${env.base}?model=lecture-reverse&layer=1&head=2&text=${encodeURIComponent('hello world')}`;
  const { page, context, problems } = await openPage(env, url);
  await page.waitForFunction(() => window.__tviz.model === 'lecture-reverse');
  await page.waitForFunction(() => document.querySelector('#translation-output').textContent === 'dlrow olleh');
  assert.equal(await page.inputValue('#cross-layer'), '1');
  assert.equal(await page.inputValue('#cross-head'), '2');
  await typeSentence(page, 'Hello, World!');
  const error = await page.textContent('#text-error');
  assert.match(error, /no token for .*H.*: it can only spell a b c/, error);
  assert.equal(await page.isVisible('#text-error'), true);
  assert.equal(await page.textContent('#translation-output'), 'dlrow olleh', 'the last output stays, marked stale');
  await typeSentence(page, 'abc');
  await page.waitForFunction(() => document.querySelector('#translation-output').textContent === 'cba');
  assert.equal(await page.isVisible('#text-error'), false);
  assert.equal(await page.isVisible('#translation-beyond'), false, 'a source of a length it was trained on gets no warning');
  // Past the 20 characters it was trained on: the page says so beside the output.
  await typeSentence(page, 'the quick brown fox jumps');
  await page.waitForFunction(() => !document.getElementById('translation-beyond').hidden);
  assert.match(await page.textContent('#translation-beyond'), /25 characters.*1 to 20/);
  await typeSentence(page, 'the quick brown fox');
  await page.waitForFunction(() => document.getElementById('translation-beyond').hidden);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the encoder-decoder\'s three attentions are named apart: the encoder\'s unmasked, the decoder\'s masked, the cross-attention', async () => {
  const { page, context, problems } = await openPage(env, `${env.base}?model=lecture-reverse&text=${encodeURIComponent('the cat sat')}`);
  await page.waitForFunction(() => window.__tviz.model === 'lecture-reverse');
  const decoder = await drawn(page, 'attention', (d) => d.values?.length);
  assert.match(await page.textContent('#attention-caption'), /decoder's masked self-attention/);
  assert.match(decoder.note ?? '', /masked/);
  await page.selectOption('#attention-stack', 'encoder');
  const encoder = await drawn(page, 'attention', (d, rows) => d.row_labels?.join('') !== rows, decoder.row_labels.join(''));
  const n = encoder.row_labels.length;
  assert.equal(n, 'the cat sat'.length + 1, `the encoder's rows: ${encoder.row_labels}`);
  assert.deepEqual(encoder.col_labels, encoder.row_labels);
  const above = encoder.values.filter((_, i) => i % n > Math.floor(i / n));
  assert.ok(above.some((w) => w > 0.01), 'the encoder attends to later source tokens: nothing is masked');
  assert.doesNotMatch(encoder.note ?? '', /masked/);
  assert.match(await page.textContent('#attention-caption'), /encoder's self-attention.*nothing is masked/);
  await page.waitForFunction(() => new URLSearchParams(location.search).get('stack') === 'encoder');
  const again = await openPage(env, await page.evaluate(() => location.href));
  await again.page.waitForFunction(() => window.__tviz.model === 'lecture-reverse');
  assert.equal(await again.page.inputValue('#attention-stack'), 'encoder');
  assert.deepEqual([...problems, ...again.problems], []);
  await Promise.all([context.close(), again.context.close()]);
});

test('a grid of every cross-attention head: a click opens that head, and the attention grid follows the stack shown', async () => {
  const { page, context, problems } = await openPage(env, `${env.base}?model=lecture-reverse&text=${encodeURIComponent('the cat sat')}`);
  await page.waitForFunction(() => window.__tviz.model === 'lecture-reverse');
  const grid = (await drawn(page, 'cross-grid', (d) => d.grid)).grid;
  assert.equal(grid.of, 'cross');
  const config = await page.evaluate(() => [document.querySelectorAll('#cross-layer option').length, document.querySelectorAll('#cross-head option').length]);
  assert.deepEqual([grid.layers, grid.heads], config);
  // The thumbnails are the cross-attention's, not the decoder's self-attention's.
  const self = (await drawn(page, 'grid', (d) => d.grid)).grid;
  assert.equal(self.of, 'self_attention');
  // A click on the last layer's last head opens it in the cross-attention chart.
  await page.locator('canvas[data-chart="cross-grid"]').scrollIntoViewIfNeeded();
  const box = await page.locator('canvas[data-chart="cross-grid"]').boundingBox();
  const drawnGrid = await page.evaluate(() => window.__tvizDrawn['cross-grid']);
  const toCss = box.width / drawnGrid.width;
  const [layer, head] = [grid.layers - 1, grid.heads - 1];
  await page.mouse.click(box.x + (grid.left + (head + 0.5) * grid.cell_width) * toCss, box.y + (grid.top + (layer + 0.5) * grid.cell_height) * toCss);
  await page.waitForFunction(([l, h]) => document.getElementById('cross-layer').value === String(l) && document.getElementById('cross-head').value === String(h), [layer, head]);
  // The attention section's grid shows the encoder when the heatmap does.
  await page.selectOption('#attention-stack', 'encoder');
  assert.equal((await drawn(page, 'grid', (d) => d.grid?.of === 'encoder')).grid.of, 'encoder');
  assert.deepEqual(problems, []);
  await context.close();
});
