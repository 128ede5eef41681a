// SmolLM2's own views: the logit lens finds " Paris" at the last layers, the rotary charts draw
// the head's real queries and follow the pair box and the link; MiniLM says why it has neither.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usePage, openPage as open, typeSentence, drawn, MINILM, seededRandom } from './helpers.mjs';

const env = usePage();
const openPage = (url, options) => open(env, url, options);

test('SmolLM2: the logit lens and the rotary views', async () => {
  const { page, context, problems } = await openPage(`${env.base}?model=smollm2-135m&pair=3`);
  await page.waitForFunction(() => window.__tviz.model === 'smollm2-135m');
  await typeSentence(page, 'The capital of France is');
  const lens = await drawn(page, 'lens', (d) => d.plotted?.lens?.final_token?.text === ' Paris');
  const { depths, cells, final_prob_by_depth: byDepth, positions } = lens.plotted.lens;
  assert.equal(depths.length, 31, 'the embedding and 30 layers');
  assert.equal(positions.length, 5, 'all five tokens (fewer than eight)');
  assert.equal(cells[30][4].text, ' Paris', 'the last layer predicts Paris at the last token');
  assert.ok(byDepth[30] > 0.7 && byDepth[10] < 0.05, `Paris appears late: ${byDepth.map((p) => p.toFixed(2))}`);

  // Rotary: the pair from the link, then another typed in the box.
  assert.equal(await page.inputValue('#rotary-pair'), '3');
  const pair = await drawn(page, 'rotary-pair', (d) => d.plotted?.pair === 3);
  assert.equal(pair.plotted.rotated.length, 5);
  await page.fill('#rotary-pair', '0');
  const pair0 = await drawn(page, 'rotary-pair', (d) => d.plotted?.pair === 0);
  assert.deepEqual(pair0.plotted.features, [0, 1]);
  await page.waitForFunction(() => !new URLSearchParams(location.search).has('pair'), null, { timeout: 5000 });
  const freq = await drawn(page, 'rotary-freq', (d) => d.plotted?.frequencies);
  assert.equal(freq.plotted.frequencies.length, 32, 'head_dim 64: 32 pairs');
  const distance = await drawn(page, 'rotary-distance', (d) => d.plotted?.scores);
  const n = distance.plotted.positions;
  const s = distance.plotted.scores;
  assert.ok(Math.abs(s[2 * n + 1] - s[12 * n + 11]) < 1e-3, 'the score depends on m - n only');
  // Out of range: a message beside the box, the chart unchanged.
  await page.fill('#rotary-pair', '32');
  await page.waitForFunction(() => !document.querySelector('#rotary-pair-message').hidden);
  assert.match(await page.textContent('#rotary-pair-message'), /0 to 31/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('MiniLM has no logit lens and no rotary charts, and says why', async () => {
  const { page, context, problems } = await openPage(env.base, { model: MINILM });
  await page.locator('#lens-heading').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('#lens-section .not-shown:not([hidden])'));
  assert.match(await page.textContent('#lens-section .not-shown'), /no language-model head/);
  assert.equal(await page.isVisible('#rotary-block'), false, 'the rotary block is only for rotary models');
  assert.deepEqual(problems, []);
  await context.close();
});

test('the head grid: a repeated random sequence lights up induction heads; a click opens one', { timeout: 180_000 }, async (t) => {
  // The page shuffles its words with Math.random; here a seeded one, so the sequence is the same
  // on every run. SmolLM2's best induction head scores about 0.88 on most orders, but a few
  // orders in a hundred leave it near 0.3 (measured natively over 60 seeded orders: median
  // 0.89, one at 0.30), and a test of a random order would fail on those.
  const { page, context, problems } = await openPage(`${env.base}?model=smollm2-135m`, { route: seededRandom });
  await page.waitForFunction(() => window.__tviz.model === 'smollm2-135m');
  const before = await page.evaluate(() => window.__tviz.renders);
  await page.click('#example-repeat');
  await page.waitForFunction((n) => window.__tviz.renders > n, before);
  const words = (await page.inputValue('#text')).split(' ');
  assert.equal(words.length, 40);
  assert.deepEqual(words.slice(20), words.slice(0, 20), 'twenty words, then the same twenty');
  assert.equal(await page.inputValue('#grid-pattern'), 'induction');
  const grid = await drawn(page, 'head-grid', (d) => d.values?.length === 270 && d.values.some((v) => v > 0));
  assert.equal(grid.geometry.rows, 30);
  assert.equal(grid.geometry.cols, 9);
  const best = grid.values.reduce((b, v, i) => (v > grid.values[b] ? i : b), 0);
  assert.ok(grid.values[best] > 0.5, `an induction head scores ${grid.values[best]}`);
  const [layer, head] = [Math.floor(best / 9), best % 9];
  t.diagnostic(`the strongest induction head, layer ${layer} head ${head}, scores ${grid.values[best].toFixed(3)}`);
  // Click the middle of that cell: the attention section opens the head.
  const box = await page.locator('canvas[data-chart="head-grid"]').boundingBox();
  const g = grid.geometry;
  const x = box.x + ((g.left + (head + 0.5) * (g.width / g.cols)) * box.width) / grid.width;
  const y = box.y + ((g.top + (layer + 0.5) * (g.height / g.rows)) * box.height) / grid.height;
  await page.mouse.click(x, y);
  await page.waitForFunction(([l, h]) => {
    const q = new URLSearchParams(location.search);
    return q.get('layer') === String(l) && q.get('head') === String(h);
  }, [layer, head]);
  assert.equal(await page.inputValue('#layer'), String(layer));
  // A sentence that repeats nothing: the induction grid says why instead of failing.
  await page.click('#example-sentence');
  await drawn(page, 'head-grid', (d) => d.values?.every((v) => v === 0));
  assert.deepEqual(problems, []);
  await context.close();
});

// An induction head needs the whole first copy in view. With its context of 256 tokens the default model takes the whole twenty words twice, and an
// induction head scores above one half on them (a seeded order; natively every order tried
// scored 0.65-0.80).
test('the repeated random sequence fits the default model\'s context whole and lights up an induction head', async () => {
  const { page, context, problems } = await open(env, env.base, { route: seededRandom });
  const before = await page.evaluate(() => window.__tviz.renders);
  await page.click('#example-repeat');
  await page.waitForFunction((n) => window.__tviz.renders > n, before);
  const words = (await page.inputValue('#text')).split(' ');
  const half = words.length / 2;
  assert.equal(half, 20, `${words.length} words`);
  assert.deepEqual(words.slice(half), words.slice(0, half), 'the words, then the same words');
  assert.equal(await page.isVisible('#truncated'), false, 'no token is cut off');
  const [count, limit] = (await page.textContent('#token-count')).match(/^(\d+) \/ (\d+)/).slice(1).map(Number);
  assert.ok(count <= limit, `${count} of ${limit} tokens`);
  assert.equal(await page.inputValue('#grid-pattern'), 'induction');
  const grid = await drawn(page, 'head-grid', (d) => d.values?.length > 0);
  assert.ok(grid.values.every((v) => Number.isFinite(v)));
  assert.equal(grid.values.length, 12, 'three layers of four heads');
  assert.ok(Math.max(...grid.values) > 0.5, `the best induction head scores ${Math.max(...grid.values)}`);
  assert.deepEqual(problems, []);
  await context.close();
});

test('duplicate-token heads: a repeated name is scored in the head finder and the head grid', async () => {
  const { page, context, problems } = await openPage(env.base);
  await typeSentence(page, 'Mary went to the shop and then Mary went home.');
  await page.selectOption('#finder-kind', 'duplicate');
  const entries = await page.locator('#finder-pattern li').allTextContents();
  assert.ok(entries.length > 0, 'the finder ranks heads by the duplicate-token score');
  assert.match(entries[0], /^layer \d+, head \d+: [01]\.\d\d$/);
  const previous = await drawn(page, 'head-grid', (d) => d.values?.length);
  await page.selectOption('#grid-pattern', 'duplicate');
  const grid = await drawn(page, 'head-grid', (d, old) => JSON.stringify(d.values) !== old, JSON.stringify(previous.values));
  const heads = await page.evaluate(() => document.querySelectorAll('#head option').length);
  assert.equal(grid.values.length, heads * await page.evaluate(() => document.querySelectorAll('#layer option').length));
  // The grid's cell of the finder's best head holds the finder's score.
  const [, layer, head, score] = entries[0].match(/^layer (\d+), head (\d+): (\S+)$/);
  assert.equal(grid.values[Number(layer) * heads + Number(head)].toFixed(2), score);
  // A text that repeats nothing: the option is off and the grid says why.
  await typeSentence(page, 'Hi.');
  assert.equal(await page.isDisabled('#finder-kind option[value=duplicate]'), true);
  assert.deepEqual(problems, []);
  await context.close();
});

// The head grid's other two examples: a sentence whose pronouns each have one name they can
// stand for (coloured by the antecedent score) and the indirect-object sentence, whose second
// "John" looks back at the first (coloured by the duplicate-token score). On MiniLM, whose
// heads these tests know: the grid's title names the score, and the finder offers both.
test('the pronoun and the names examples colour the head grid by antecedent and duplicate token', async () => {
  // The grid reports the texts it painted (its title among them).
  const reporting = await env.browser.newContext({ viewport: { width: 1280, height: 720 } });
  await reporting.addInitScript(() => document.addEventListener('DOMContentLoaded', () => {
    document.querySelector('canvas[data-chart="head-grid"]').setAttribute('data-report-texts', '');
  }));
  const { page, context, problems } = await open(env, env.base, { model: MINILM, context: reporting });
  for (const [button, pattern, word] of [['#example-pronouns', 'antecedent', 'laughed'], ['#example-names', 'duplicate', 'drink']]) {
    const before = await page.evaluate(() => window.__tviz.renders);
    await page.click(button);
    await page.waitForFunction((n) => window.__tviz.renders > n, before);
    assert.ok((await page.inputValue('#text')).includes(word));
    assert.equal(await page.inputValue('#grid-pattern'), pattern);
    const grid = await drawn(page, 'head-grid', (d, p) => d.texts?.some((t) => t.text.includes(p)), `${pattern === 'antecedent' ? 'antecedent' : 'duplicate-token'} score`);
    assert.equal(grid.values.length, 72);
    assert.ok(grid.values.some((v) => v > 0.3), `some head scores ${Math.max(...grid.values)}`);
    assert.equal(await page.locator(`#finder-kind option[value=${pattern}]`).isDisabled(), false);
  }
  // A sentence with no pronoun the finder knows: the grid says so instead of drawing zeros.
  await page.click('#example-sentence');
  await page.selectOption('#grid-pattern', 'antecedent');
  await typeSentenceOrFill(page, 'the weather was bad so it rained');
  await drawn(page, 'head-grid', (d) => d.texts?.some((t) => t.text.startsWith('No pronoun in this text')));
  assert.equal(await page.locator('#finder-kind option[value=antecedent]').isDisabled(), true);
  assert.deepEqual(problems, []);
  await context.close();
});

/** Replaces the text (one input event) and waits for the pass it starts. */
async function typeSentenceOrFill(page, text) {
  const before = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', text);
  await page.waitForFunction((n) => window.__tviz.renders > n, before);
}
