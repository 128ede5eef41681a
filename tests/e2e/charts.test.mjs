// End-to-end tests of the charts themselves, in Debian's headless Chromium: every token
// named on the heatmaps, honest colour scales, sharp drawing on HiDPI screens, and exports
// made for slides. Screenshots of the attention heatmap go to tests/artifacts/.
//   node --test tests/e2e/charts.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { usePage, openPage as open, drawn as drawnOf, ARTIFACTS, CHARTS, MINILM } from './helpers.mjs';


const SIXTEEN = ['[CLS]', 'the', 'animal', 'didn', "'", 't', 'cross', 'the', 'street', 'because', 'it', 'was', 'too', 'tired', '.', '[SEP]'];
// 71 tokens with [CLS] and [SEP].
const LONG = 'The committee, after weeks of long and often heated debate about the budget, finally agreed that the new library would open in the spring, although several members still worried that the costs of heating, staffing and repairs had not been fully counted, and the mayor, who had promised lower taxes during her campaign, refused to comment on it at all.';

const env = usePage();

// The shared openPage on MiniLM (these tests name its tokens, [CLS] and [SEP], its learned
// position table and its steps), with the screen's pixel density as an option, once every
// chart is drawn.
async function openPage(query = '', viewport = { width: 1280, height: 720 }, deviceScaleFactor = 1) {
  const opened = await open(env, `${env.base}${query}`, { viewport, deviceScaleFactor, model: MINILM });
  await opened.page.waitForFunction(() => window.__tvizSettled());
  return opened;
}

async function typeSentence(page, text) {
  const before = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', text);
  await page.waitForFunction((n) => window.__tviz.renders > n, before);
  await page.evaluate(() => window.__tvizFlush());
}

// Scrolls a chart to the middle of the window, clear of the sticky navigation bar.
async function centre(page, selector) {
  await page.evaluate((sel) => document.querySelector(sel).scrollIntoView({ block: 'center' }), selector);
  await page.evaluate(() => window.__tvizFlush());
}

function overlaps(a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

/** Every label inside the chart, and no two labels sharing a pixel. */
function assertLabelsApart(drawn, what) {
  const boxes = [...drawn.labels.rows, ...drawn.labels.cols];
  for (const b of boxes) {
    assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.width <= drawn.width && b.y + b.height <= drawn.height, `${what}: label "${b.text}" leaves the chart: ${JSON.stringify(b)}`);
  }
  for (let i = 0; i < boxes.length; i += 1) {
    for (let j = i + 1; j < boxes.length; j += 1) {
      assert.ok(!overlaps(boxes[i], boxes[j]), `${what}: labels "${boxes[i].text}" and "${boxes[j].text}" overlap`);
    }
  }
}

function assertEveryToken(drawn, what) {
  assert.deepEqual(drawn.labels.rows.map((b) => b.index), [...SIXTEEN.keys()], `${what}: rows without a label`);
  assert.deepEqual(drawn.labels.cols.map((b) => b.index), [...SIXTEEN.keys()], `${what}: columns without a label`);
  assert.deepEqual(drawn.labels.rows.map((b) => b.text), SIXTEEN);
  assert.deepEqual(drawn.labels.cols.map((b) => b.text), SIXTEEN);
  assert.ok(drawn.labels.row_font_px >= 8 && drawn.labels.col_font_px >= 8, `${what}: text under 8 px`);
}

test('at 16 tokens every row and column of the heatmaps carries its token, and no labels overlap', async () => {
  for (const viewport of [{ width: 1280, height: 720 }, { width: 390, height: 844 }]) {
    const { page, context, problems } = await openPage('?step=11', viewport); // step 12: softmax of layer 0, per head
    const what = `${viewport.width}px`;
    const attention = await drawnOf(page, 'attention');
    assertEveryToken(attention, `attention at ${what}`);
    assertLabelsApart(attention, `attention at ${what}`);
    assert.equal(attention.note, null, 'nothing is thinned or clipped at 16 tokens');
    const step = await drawnOf(page, 'step');
    assertEveryToken(step, `stepper at ${what}`);
    assertLabelsApart(step, `stepper at ${what}`);
    assert.deepEqual(problems, []);
    await context.close();
  }
});

test('a long sentence labels every n-th token, says so, and hovering a label highlights its column', async () => {
  const { page, context, problems } = await openPage();
  await typeSentence(page, LONG);
  const drawn = await drawnOf(page, 'attention');
  assert.equal(drawn.geometry.rows, 71);
  const { row_step: rowStep, col_step: colStep } = drawn.labels;
  assert.ok(rowStep >= 2 && colStep >= 2, 'more than 40 tokens are thinned');
  assert.ok(drawn.labels.rows.length >= 18 && drawn.labels.rows.length <= 40, `${drawn.labels.rows.length} row labels`);
  assert.ok(drawn.labels.cols.length >= 18, `only ${drawn.labels.cols.length} of 71 columns are named`);
  assert.match(drawn.note, /Every (2nd|3rd|\d+th) token is labelled \(71 tokens\)/);
  assertLabelsApart(drawn, 'attention, 71 tokens');
  // The position heatmaps label every n-th position.
  const similarity = await drawnOf(page, 'pos-sim');
  assert.ok(similarity.labels.row_step > 1 && similarity.labels.rows.length > 5);
  assertLabelsApart(similarity, 'position similarity');

  await centre(page, '#attention-canvas');
  const box = await page.locator('#attention-canvas').boundingBox();
  const label = drawn.labels.cols[3];
  const k = box.width / drawn.width;
  await page.mouse.move(box.x + (label.x + label.width / 2) * k, box.y + (label.y + label.height / 2) * k);
  await page.waitForFunction((i) => document.querySelector('#attention-canvas').dataset.highlight === `col ${i}`, label.index);
  assert.match(await page.textContent('#tooltip'), new RegExp(`^key ${label.index}: "`));
  await page.mouse.move(box.x + 2, box.y + 2);
  await page.waitForFunction(() => document.querySelector('#attention-canvas').dataset.highlight === undefined);
  assert.deepEqual(problems, []);
  await context.close();
});

test('clipped colour scales say so, hover shows the true value, and token ids are text', async () => {
  const { page, context, problems } = await openPage('?step=19'); // layer 0, FFN project back
  for (const name of ['pos-table', 'step']) {
    const drawn = await drawnOf(page, name);
    const c = drawn.clipped;
    assert.ok(c, `${name}: the colour scale clips but Drawn does not say so`);
    assert.ok(c.min < c.low || c.max > c.high);
    assert.equal(c.min, Math.min(...drawn.values), `${name}: values must be the true ones`);
    assert.equal(c.max, Math.max(...drawn.values));
    assert.match(drawn.note, /Colours clipped/);
  }
  // Hover the most extreme cell of the FFN step: the tooltip gives its true value.
  const step = await drawnOf(page, 'step');
  const g = step.geometry;
  const at = step.values.reduce((best, v, i) => (Math.abs(v) > Math.abs(step.values[best]) ? i : best), 0);
  assert.ok(Math.abs(step.values[at]) > Math.max(Math.abs(step.clipped.low), step.clipped.high), 'the extreme value lies beyond the bar');
  const [row, col] = [Math.floor(at / g.cols), at % g.cols];
  await centre(page, '#step-canvas');
  const box = await page.locator('#step-canvas').boundingBox();
  const k = box.width / step.width;
  await page.mouse.move(box.x + (g.left + ((col + 0.5) * g.width) / g.cols) * k, box.y + (g.top + ((row + 0.5) * g.height) / g.rows) * k);
  const tip = page.locator('#tooltip');
  await page.waitForFunction((v) => document.getElementById('tooltip').textContent.includes(v), step.values[at].toFixed(4));
  assert.match(await tip.textContent(), /beyond the colour bar/);

  // Step 1, the token ids: written in boxes, not a colour scale.
  await page.click('#step-title');
  await page.fill('#step-slider', '0');
  await page.waitForFunction(() => window.__tvizDrawn.step && !window.__tvizDrawn.step.geometry);
  const ids = await drawnOf(page, 'step');
  assert.equal(ids.clipped, null);
  assert.equal(ids.values.length, 0, 'the token ids are not a heatmap');
  assert.deepEqual(problems, []);
  await context.close();
});

test('on a 2x screen every chart is drawn at twice its CSS size, and hover and grid clicks still hit the right cell', async () => {
  const { page, context, problems } = await openPage('', { width: 1280, height: 720 }, 2);
  for (const name of CHARTS) {
    await page.locator(`canvas[data-chart="${name}"]`).scrollIntoViewIfNeeded();
    await page.evaluate(() => window.__tvizFlush());
    const size = await page.evaluate((n) => {
      const canvas = document.querySelector(`canvas[data-chart="${n}"]`);
      const rect = canvas.getBoundingClientRect();
      return { width: canvas.width, height: canvas.height, cssWidth: rect.width, cssHeight: rect.height };
    }, name);
    assert.ok(Math.abs(size.width - size.cssWidth * 2) <= 1, `${name}: ${size.width} backing pixels for ${size.cssWidth} CSS pixels`);
    assert.ok(Math.abs(size.height - size.cssHeight * 2) <= 1.5, `${name}: ${size.height} backing pixels for ${size.cssHeight} CSS pixels`);
  }
  const drawn = await drawnOf(page, 'attention');
  assert.equal(drawn.scale, 2);
  assertEveryToken(drawn, 'attention at 2x');
  const g = drawn.geometry;
  await centre(page, '#attention-canvas');
  const box = await page.locator('#attention-canvas').boundingBox();
  const k = box.width / drawn.width;
  for (const [row, col] of [[2, 8], [13, 1], [15, 15]]) {
    await page.mouse.move(box.x + (g.left + ((col + 0.5) * g.width) / g.cols) * k, box.y + (g.top + ((row + 0.5) * g.height) / g.rows) * k);
    const expected = `"${SIXTEEN[row]}" → "${SIXTEEN[col]}": ${drawn.values[row * g.cols + col].toFixed(4)}`;
    await page.waitForFunction((t) => document.getElementById('tooltip').textContent === t, expected);
  }
  await centre(page, '#grid-canvas');
  const grid = await drawnOf(page, 'grid');
  const gridBox = await page.locator('#grid-canvas').boundingBox();
  const gk = gridBox.width / grid.width;
  await page.mouse.click(gridBox.x + (grid.grid.left + 7.5 * grid.grid.cell_width) * gk, gridBox.y + (grid.grid.top + 2.5 * grid.grid.cell_height) * gk);
  assert.equal(await page.inputValue('#layer'), '2');
  assert.equal(await page.inputValue('#head'), '7');
  assert.deepEqual(problems, []);
  await context.close();
});

test('exports: PNG at twice the chart with its settings in the name, small SVG of the position table', async () => {
  const { page, context, problems } = await openPage('?layer=3&head=1');
  const box = page.locator('.export[data-for="attention"]');
  const cssWidth = await page.evaluate(() => document.getElementById('attention-canvas').getBoundingClientRect().width);
  const [first] = await Promise.all([page.waitForEvent('download'), box.getByText('Export PNG').click()]);
  const bytes = readFileSync(await first.path());
  assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  const width = bytes.readUInt32BE(16);
  assert.ok(width >= 2 * cssWidth - 1, `the PNG is ${width} px wide for a ${cssWidth} px chart`);
  assert.equal(first.suggestedFilename(), 'transformer-viz_attention_L3-H1_the-animal-didnt.png');
  await first.saveAs(join(ARTIFACTS, first.suggestedFilename()));
  await page.selectOption('#head', '2');
  const [second] = await Promise.all([page.waitForEvent('download'), box.getByText('Export PNG').click()]);
  assert.notEqual(second.suggestedFilename(), first.suggestedFilename(), 'two heads export to the same file name');
  assert.match(second.suggestedFilename(), /L3-H2/);

  const started = Date.now();
  const [svg] = await Promise.all([page.waitForEvent('download'), page.locator('.export[data-for="pos-table"]').getByText('Export SVG').click()]);
  const path = await svg.path();
  const size = statSync(path).size;
  const text = readFileSync(path, 'utf8');
  assert.ok(size < 400 * 1024, `the position table's SVG is ${Math.round(size / 1024)} KB`);
  assert.match(text, /^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.match(text, /<image [^>]*href="data:image\/png;base64,/);
  assert.match(text, />\s*position p\s*</, 'the axis name stays text');
  assert.match(text, />\s*feature i\s*</);
  assert.ok(!text.includes('tviz-cells'), 'a placeholder for the cells was left in the SVG');
  const parses = await page.evaluate((t) => !new DOMParser().parseFromString(t, 'image/svg+xml').querySelector('parsererror'), text);
  assert.ok(parses, 'the SVG does not parse');
  const [gridSvg] = await Promise.all([page.waitForEvent('download'), page.locator('.export[data-for="grid"]').getByText('Export SVG').click()]);
  assert.ok(statSync(await gridSvg.path()).size < 400 * 1024, 'the grid SVG is too large');
  console.log(`position table SVG ${Math.round(size / 1024)} KB (${Date.now() - started} ms)`);
  assert.deepEqual(problems, []);
  await context.close();
});

test('screenshots of the attention heatmap at classroom sizes', async () => {
  const sizes = [
    ['1280x720', { width: 1280, height: 720 }, 1],
    ['1920x1080', { width: 1920, height: 1080 }, 1],
    ['390x844', { width: 390, height: 844 }, 1],
    ['1280x720@2x', { width: 1280, height: 720 }, 2],
  ];
  for (const [name, viewport, scale] of sizes) {
    const { page, context, problems } = await openPage('', viewport, scale);
    const figure = page.locator('#attention-canvas');
    await centre(page, '#attention-canvas');
    const drawn = await drawnOf(page, 'attention');
    assertEveryToken(drawn, name);
    assertLabelsApart(drawn, name);
    await figure.screenshot({ path: join(ARTIFACTS, `attention-${name}.png`) });
    await centre(page, '#step-canvas');
    await page.locator('#step-canvas').screenshot({ path: join(ARTIFACTS, `step-${name}.png`) });
    if (name === '1280x720') {
      // A long sentence, a clipped colour scale and the position table, as a student sees them.
      await page.goto(`${env.base}?model=${MINILM}&step=19`);
      await page.evaluate(() => window.__tviz.ready);
      await typeSentence(page, LONG);
      for (const [chart, file] of [['attention', 'attention-71-tokens'], ['step', 'step-ffn-down'], ['pos-table', 'position-table']]) {
        await page.evaluate((c) => document.querySelector(`canvas[data-chart="${c}"]`).scrollIntoView({ block: 'center' }), chart);
        await page.evaluate(() => window.__tvizFlush());
        await page.locator(`canvas[data-chart="${chart}"]`).screenshot({ path: join(ARTIFACTS, `${file}-${name}.png`) });
      }
    }
    assert.deepEqual(problems, []);
    await context.close();
  }
});

test('every chart has one PNG and one SVG export button, and no id is used twice', async () => {
  const { page, context, problems } = await openPage();
  await page.evaluate(() => document.getElementById('compare').open = true); // the comparison's charts too
  const exports = await page.evaluate(() => [...document.querySelectorAll('.export')].map((e) => [e.dataset.for, [...e.querySelectorAll('button')].map((b) => b.textContent).join(', ')]));
  for (const [chart, buttons] of exports) assert.equal(buttons, 'Export PNG, Export SVG', chart);
  const ids = await page.evaluate(() => [...document.querySelectorAll('[id]')].map((e) => e.id));
  assert.deepEqual(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'ids used twice');
  assert.deepEqual(problems, []);
  await context.close();
});
