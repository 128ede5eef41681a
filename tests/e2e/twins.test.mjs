// End-to-end tests of the lecture decoder beside its twin: the layer-norm and residual sections
// draw the model shown and its twin (the norm on the other side) on the same sentence, side by
// side on a wide screen, and say which is which; a model with no twin shows neither.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usePage, openPage as open, typeSentence, drawn, MINILM } from './helpers.mjs';

const env = usePage();

/** The tokens a residual chart's legend follows (its titles after the three headings). */
function legend(d) {
  return d.plotted.titles.filter((t) => /\(\d+\)$/.test(t));
}

test('the residual stream and the layer norm are drawn for the model and its twin, side by side', async () => {
  const { page, context, problems } = await open(env, env.base, { viewport: { width: 1920, height: 1080 } });
  const labels = () => page.$$eval('#residual-section .twin-label', (ps) => ps.map((p) => (p.hidden || p.closest('[hidden]') ? null : p.textContent)));
  assert.deepEqual(await labels(), ['This model, post-LN', 'Its twin, pre-LN, on the same sentence']);
  const mine = await drawn(page, 'residual');
  const twin = await drawn(page, 'residual-twin');
  assert.match(mine.plotted.titles.join(' '), /post-LN: a norm follows every addition/);
  assert.match(twin.plotted.titles.join(' '), /pre-LN/);
  assert.deepEqual(legend(twin), legend(mine), 'the twin follows the same tokens');
  const [a, b] = await Promise.all(['residual', 'residual-twin'].map((c) => page.locator(`canvas[data-chart="${c}"]`).boundingBox()));
  assert.equal(Math.round(a.y), Math.round(b.y), 'side by side at 1920 px');
  assert.ok(b.x > a.x + a.width, 'the twin is to the right');

  // A new sentence reaches the twin too.
  await typeSentence(page, 'Mary gave the book to John.');
  const newer = await drawn(page, 'residual-twin', (d, old) => JSON.stringify(d.plotted.titles) !== old, JSON.stringify(twin.plotted.titles));
  assert.deepEqual(legend(newer), legend(await drawn(page, 'residual')));
  assert.ok(legend(newer).some((t) => /Mary|\.|John/.test(t)), legend(newer).join(' | '));

  // The twin's norm is the one at the same place: after attention here, before it there.
  await page.selectOption('#norm', { label: 'layer 1, after attention' });
  const norm = await drawn(page, 'norm', (d) => /layer 1, after attention/.test(d.plotted.titles.join(' ')));
  const twinNorm = await drawn(page, 'norm-twin', (d) => /layer 1, before attention/.test(d.plotted.titles.join(' ')));
  assert.ok(norm && twinNorm);

  // The switch to the pre-LN twin swaps the two.
  await page.click('#twin-switch button[data-twin="lecture-pre-ln"]');
  await page.waitForFunction(() => window.__tviz.model === 'lecture-pre-ln');
  await page.waitForFunction(() => document.querySelector('#residual-section .twin-label').textContent === 'This model, pre-LN');
  assert.deepEqual(await labels(), ['This model, pre-LN', 'Its twin, post-LN, on the same sentence']);
  const swapped = await drawn(page, 'residual-twin', (d) => /post-LN: a norm follows every addition/.test(d.plotted.titles.join(' ')));
  assert.ok(swapped);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a model with no twin shows no twin chart', async () => {
  const { page, context, problems } = await open(env, env.base, { model: MINILM });
  await drawn(page, 'residual');
  assert.equal(await page.locator('canvas[data-chart="residual-twin"]').isVisible(), false);
  assert.equal(await page.locator('canvas[data-chart="norm-twin"]').isVisible(), false);
  assert.equal(await page.locator('#residual-section .twin-label').first().isVisible(), false);
  assert.deepEqual(problems, []);
  await context.close();
});

// Presenter mode while the twin's files are on their way: the slide says the twin is loading
// (a chart the model does not have is left off; this one is coming), and once it arrives the
// slides are cut again with the chart whole on screen.
test('presenter mode shows the twin loading, then cuts its slide again with the chart', async () => {
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const route = (page) => page.route(/\/models\/lecture-pre-ln\//, async (r) => { await held; await r.continue(); });
  const { page, context, problems } = await open(env, env.base, { viewport: { width: 1280, height: 720 }, route });
  await page.click('#presenter');
  await page.evaluate(() => document.querySelector('nav.toc a[href="#norm-section"]').click());
  await page.waitForFunction(() => document.getElementById('norm-section').classList.contains('presenting'));
  // The slide with the twin's figure: step through the section's slides to it.
  const loadingShown = () => page.evaluate(() => [...document.querySelectorAll('#norm-section p.not-shown.loading')].some((p) => p.getClientRects().length));
  for (let n = 0; n < 8 && !(await loadingShown()); n += 1) {
    const old = await page.textContent('#presenter-place');
    if (!/part (\d+) of (?!\1)/.test(old)) break;
    await page.keyboard.press('PageDown');
    await page.waitForFunction((o) => document.getElementById('presenter-place').textContent !== o, old);
  }
  assert.ok(await loadingShown(), 'a slide of the norm section says the twin is loading');
  assert.match(await page.textContent('#norm-section p.not-shown.loading'), /Loading the twin/);
  release();
  await page.waitForFunction(() => {
    const c = document.querySelector('canvas[data-chart="norm-twin"]');
    const r = c.getBoundingClientRect();
    return c.getClientRects().length && r.top >= 0 && r.bottom <= innerHeight + 1 && !document.querySelector('#norm-section p.not-shown.loading:not([hidden])');
  });
  await drawn(page, 'norm-twin', (d) => /^Layer norm, layer \d, before (attention|feed-forward)/.test(d.plotted.titles[0]));
  assert.equal(await page.evaluate(() => document.documentElement.scrollHeight > innerHeight + 1), false, 'the slide fits the screen with the chart');
  assert.deepEqual(problems, []);
  await context.close();
});
