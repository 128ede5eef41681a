// End-to-end tests of the layer-norm, residual-stream and positional-encoding sections: they
// show what the lecture notes teach. Release page, Debian's headless Chromium, playwright-core:
//   node --test tests/e2e/sections.test.mjs
// Screenshots of the three sections go to tests/artifacts/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { usePage, openPage as open, drawn, ARTIFACTS, writtenUrl, MINILM } from './helpers.mjs';


// Names of the trace's steps, which a student should never read in a chart.
const INTERNAL_NAME = /layer\d|attn_norm|ffn_norm|embed\.norm|final_norm|\bL\d+ (attn|ffn)\b/;

const env = usePage();
// MiniLM: these tests know its 13 layer norms, its 6 post-LN layers, its width (384) and its
// learned position table. The screenshots are of the page's default model.
const openPage = (url = env.base, viewport = { width: 1280, height: 720 }, model = MINILM) => open(env, url, { viewport, model });

/** What Rust reported for `chart` once it has been drawn with its `key` (scrolled into view first). */
const drawnOf = (page, chart, key = 'plotted') => drawn(page, chart, (d, k) => d[k], key);

function blank(page, chart) {
  return page.evaluate((c) => document.querySelector(`canvas[data-chart="${c}"]`).toDataURL().length < 3000, chart);
}

test('every layer norm shows its input, the normalised vector with mean 0 and std 1, and the output', async () => {
  const { page, context, problems } = await openPage();
  const tokens = await page.locator('#tokens li').count();
  const options = await page.locator('#norm option').allTextContents();
  assert.equal(options.length, 13, 'MiniLM has 13 layer norms');
  for (let i = 0; i < options.length; i += 1) {
    await page.selectOption('#norm', String(i));
    await page.waitForFunction((place) => window.__tvizDrawn.norm?.plotted?.place === place, options[i]);
    const { plotted } = await page.evaluate(() => window.__tvizDrawn.norm);
    assert.equal(plotted.kind, 'norm_stages');
    assert.equal(plotted.norm_kind, 'layer');
    assert.deepEqual(plotted.stages.map((s) => s.stage), ['input', 'normalised', 'output']);
    for (const s of plotted.stages) {
      assert.equal(s.mean.length, tokens, `${options[i]}: ${s.stage} has one mean per token`);
      assert.equal(s.std.length, tokens);
    }
    const [input, middle, output] = plotted.stages;
    middle.mean.forEach((m, t) => assert.ok(Math.abs(m) < 1e-3, `${options[i]}, token ${t}: normalised mean ${m}`));
    middle.std.forEach((s, t) => assert.ok(Math.abs(s - 1) < 1e-2, `${options[i]}, token ${t}: normalised std ${s}`));
    // The other two stages are real data, not the normalised one again.
    assert.ok(input.std.some((s) => Math.abs(s - 1) > 0.05), `${options[i]}: the input already has std 1`);
    assert.ok(output.std.some((s) => Math.abs(s - 1) > 0.05), `${options[i]}: gamma and beta changed nothing`);
    for (const title of plotted.titles) assert.doesNotMatch(title, INTERNAL_NAME, `${options[i]}: "${title}"`);
    assert.ok(plotted.titles[0].includes(options[i]), `the title names the norm as the page does: ${plotted.titles[0]}`);
    const params = await drawnOf(page, 'norm-params');
    await page.waitForFunction((place) => window.__tvizDrawn['norm-params']?.plotted?.place === place, options[i]);
    for (const title of (await page.evaluate(() => window.__tvizDrawn['norm-params'].plotted.titles))) {
      assert.doesNotMatch(title, INTERNAL_NAME);
    }
    assert.ok(params);
  }
  // The exported picture has no internal names either.
  const [svg] = await Promise.all([page.waitForEvent('download'), page.locator('.export[data-for="norm"]').getByText('Export SVG').click()]);
  const text = readFileSync(await svg.path(), 'utf8');
  const texts = [...text.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
  assert.ok(texts.some((t) => t.includes('normalised')), 'the SVG names the stages');
  for (const t of texts) assert.doesNotMatch(t, INTERNAL_NAME);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the residual stream names its tokens in distinct colours, marks the norms, and follows picked tokens', async () => {
  const { page, context, problems } = await openPage();
  const sentence = 'One two three four five six seven eight nine ten eleven twelve.';
  const before = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', sentence);
  await page.waitForFunction((n) => window.__tviz.renders > n, before);
  const chips = await page.locator('#tokens li span').allTextContents();
  await page.waitForFunction((n) => window.__tvizDrawn.residual?.plotted?.points && document.querySelectorAll('#residual-tokens input').length === n, chips.length);
  let { plotted } = await drawnOf(page, 'residual');
  assert.equal(plotted.kind, 'residual');
  assert.ok(plotted.tokens.length >= 2, 'a few tokens are followed by default');
  for (const t of plotted.tokens) assert.equal(t.text, chips[t.index], 'each line is named by its token');
  assert.equal(new Set(plotted.tokens.map((t) => t.colour)).size, plotted.tokens.length, 'colours repeat');
  // The stream's points: the embedding, then per layer +attn, norm, +FFN, norm (post-LN).
  const kinds = plotted.points.map((p) => p.kind);
  assert.equal(kinds[0], 'embedding');
  assert.equal(kinds.filter((k) => k === 'norm').length, 13, 'the embedding norm and two norms a layer are marked');
  assert.equal(kinds.filter((k) => k === 'add').length, 12, 'attention and FFN additions of 6 layers');
  for (let i = 1; i < kinds.length; i += 1) {
    if (kinds[i] === 'add') assert.equal(kinds[i - 1], 'norm', 'post-LN: every addition follows a norm');
  }
  assert.equal(plotted.lengths.length, plotted.tokens.length);
  assert.equal(plotted.lengths[0].length, plotted.points.length);
  for (const title of plotted.titles) assert.doesNotMatch(title, INTERNAL_NAME, title);
  assert.ok(plotted.titles.some((t) => /norm/i.test(t) && /post-LN/.test(t)), 'a caption says what post-LN does');
  // The picker shows the followed tokens ticked, in their colours.
  const ticked = await page.$$eval('#residual-tokens input:checked', (els) => els.map((e) => Number(e.value)));
  assert.deepEqual(ticked.sort((a, b) => a - b), plotted.tokens.map((t) => t.index).sort((a, b) => a - b));

  // Tick tokens until eight are followed: each gets its own colour, the rest are disabled.
  for (let i = 0; i < chips.length; i += 1) {
    const box = page.locator(`#residual-tokens input[value="${i}"]`);
    if (await box.isChecked() || await box.isDisabled()) continue;
    const count = plotted.tokens.length;
    await box.check();
    await page.waitForFunction((n) => window.__tvizDrawn.residual.plotted.tokens.length === n, count + 1);
    ({ plotted } = await page.evaluate(() => window.__tvizDrawn.residual));
    assert.ok(plotted.tokens.some((t) => t.index === i), `token ${i} is followed after ticking it`);
    if (plotted.tokens.length === 8) break;
  }
  assert.equal(plotted.tokens.length, 8);
  assert.equal(new Set(plotted.tokens.map((t) => t.colour)).size, 8, 'eight followed tokens, eight colours');
  assert.ok(await page.locator('#residual-tokens input:not(:checked)').first().isDisabled(), 'a ninth cannot be ticked');
  assert.match(await page.textContent('#residual-picker-note'), /8/);
  const url = new URL(await writtenUrl(page));
  assert.deepEqual(url.searchParams.get('follow').split(',').map(Number).sort((a, b) => a - b), plotted.tokens.map((t) => t.index).sort((a, b) => a - b));

  // A shared link follows the same tokens.
  const reopened = await openPage(page.url());
  const again = await drawnOf(reopened.page, 'residual');
  assert.deepEqual(again.plotted.tokens, plotted.tokens);
  assert.deepEqual([...problems, ...reopened.problems], []);
  await reopened.context.close();
  await context.close();
});

test('the sinusoidal table is drawn as waves and as a heatmap with the notes\' values', async () => {
  const { page, context, problems } = await openPage();
  const d = 384;
  const pe = (p, dim) => {
    const angle = p / 10000 ** ((dim - (dim % 2)) / d);
    return dim % 2 === 0 ? Math.sin(angle) : Math.cos(angle);
  };
  const waves = await drawnOf(page, 'pos-sin-waves');
  assert.ok(!(await blank(page, 'pos-sin-waves')), 'the sinusoidal waves are blank');
  assert.equal(waves.plotted.kind, 'waves');
  assert.deepEqual(waves.plotted.series.map((s) => s.dim), [0, 1, 40, 80, 120]);
  for (const s of waves.plotted.series) {
    for (const p of [0, 1, 2, 7, 31, waves.plotted.positions - 1]) {
      assert.ok(Math.abs(s.values[p] - pe(p, s.dim)) < 1e-6, `PE(${p}, ${s.dim}) = ${s.values[p]}, formula ${pe(p, s.dim)}`);
    }
  }
  const table = await drawnOf(page, 'pos-sin-table', 'geometry');
  assert.ok(!(await blank(page, 'pos-sin-table')), 'the sinusoidal heatmap is blank');
  assert.equal(table.geometry.cols, d);
  for (const [p, dim] of [[0, 0], [0, 1], [5, 2], [17, 101], [40, 300], [63, 383]]) {
    const v = table.values[p * d + dim];
    assert.ok(Math.abs(v - pe(p, dim)) < 1e-6, `heatmap PE(${p}, ${dim}) = ${v}, formula ${pe(p, dim)}`);
  }
  const learned = await drawnOf(page, 'pos-waves');
  assert.deepEqual(learned.plotted.series.map((s) => s.dim), [0, 1, 40, 80, 120], 'the box applies to the learned waves too');
  assert.deepEqual(problems, []);
  await context.close();
});

test('the features box refuses what it cannot plot beside the box and keeps showing what is plotted', async () => {
  const { page, context, problems } = await openPage();
  await drawnOf(page, 'pos-sin-waves');
  const dimsOf = (chart) => page.evaluate((c) => window.__tvizDrawn[c].plotted.series.map((s) => s.dim), chart);
  const urlDims = async () => new URL(await writtenUrl(page)).searchParams.get('dims');

  await page.fill('#dims', '2, 3, 200');
  await page.press('#dims', 'Enter');
  await page.waitForFunction(() => window.__tvizDrawn['pos-sin-waves'].plotted.series.map((s) => s.dim).join() === '2,3,200');
  assert.deepEqual(await dimsOf('pos-waves'), [2, 3, 200]);
  assert.equal(await urlDims(), '2,3,200');
  assert.equal(await page.inputValue('#dims'), '2, 3, 200');

  const refusals = [['0, 999999', /999999/], ['1, 2, 3, 4, 5, 6, 7, 8, 9', /At most 8/], ['seven', /"seven"/], ['', /at least one/]];
  for (const [bad, why] of refusals) {
    await page.fill('#dims', bad);
    await page.press('#dims', 'Enter');
    await page.waitForFunction((re) => !document.getElementById('dims-message').hidden
      && new RegExp(re).test(document.getElementById('dims-message').textContent), why.source);
    assert.match(await page.textContent('#dims-message'), /2, 3, 200/, 'the message says what is still plotted');
    assert.equal(await page.inputValue('#dims'), '2, 3, 200', `after "${bad}" the box shows what is plotted`);
    assert.equal(await urlDims(), '2,3,200', `after "${bad}" the URL keeps the plotted features`);
    assert.deepEqual(await dimsOf('pos-sin-waves'), [2, 3, 200]);
    assert.ok(await page.locator('#error').isHidden(), 'the message is beside the box, not in the top error box');
  }
  await page.fill('#dims', '5');
  await page.press('#dims', 'Enter');
  await page.waitForFunction(() => document.getElementById('dims-message').hidden);
  assert.deepEqual(await dimsOf('pos-sin-waves'), [5], 'a good value clears the message');

  // A link with a feature the model does not have: the message, and the default features.
  const reopened = await openPage(`${env.base}?dims=0,999999`);
  await reopened.page.waitForFunction(() => !document.getElementById('dims-message').hidden);
  assert.match(await reopened.page.textContent('#dims-message'), /999999/);
  await drawnOf(reopened.page, 'pos-sin-waves');
  const shown = await reopened.page.inputValue('#dims');
  const drawn = await reopened.page.evaluate(() => window.__tvizDrawn['pos-sin-waves'].plotted.series.map((s) => s.dim).join(', '));
  assert.equal(shown, drawn, 'the box shows what is plotted');
  assert.equal(new URL(await writtenUrl(reopened.page)).searchParams.get('dims'), drawn.replaceAll(' ', ''));
  assert.deepEqual([...problems, ...reopened.problems], []);
  await reopened.context.close();
  await context.close();
});

test('screenshots of the three sections at projector and phone sizes', async () => {
  for (const [name, viewport] of [['1280x720', { width: 1280, height: 720 }], ['390x844', { width: 390, height: 844 }]]) {
    const { page, context, problems } = await openPage(env.base, viewport, null);
    await page.waitForFunction(() => window.__tvizSettled());
    // The sticky table of contents would be pasted over every tall section's picture.
    await page.addStyleTag({ content: '.toc { position: static; }' });
    for (const section of ['position', 'norm', 'residual']) {
      const locator = page.locator(`#${section}-section`);
      await locator.scrollIntoViewIfNeeded();
      // Every chart shown (a chart the model does not have says why; a block for another kind
      // of model is hidden).
      for (const canvas of await locator.locator('canvas').filter({ visible: true }).all()) {
        const chart = await canvas.getAttribute('data-chart');
        assert.ok(!(await blank(page, chart)), `${name}: ${chart} is blank`);
      }
      await locator.screenshot({ path: join(ARTIFACTS, `section-${section}-${name}.png`) });
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `${name}: the page scrolls sideways by ${overflow}px`);
    assert.deepEqual(problems, []);
    await context.close();
  }
});
