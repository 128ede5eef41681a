// End-to-end tests of the attention section's classroom tools in headless Chromium: the head
// finder, the head the page opens on, the lines view (hover, focus, several heads, caption)
// and the comparison of two sentences. Run after `bash scripts/build-page.sh`:
//   node --test tests/e2e/heads.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usePage, openPage as open, writtenUrl, MINILM } from './helpers.mjs';

const DEFAULT = "The animal didn't cross the street because it was too tired.";

const env = usePage();
// MiniLM: these tests know its heads (3/1 and 5/11 read "it" -> "animal"; layer 0's
// previous-token head, layer 1's next-token head) and its 16 tokens of the example sentence.
const openPage = (url = env.base, viewport = { width: 1280, height: 720 }) => open(env, url, { viewport, model: MINILM });

/** The entries of a finder list: layer, head and text. */
function entries(page, list) {
  return page.evaluate((id) => [...document.querySelectorAll(`#${id} button`)].map((b) => ({
    layer: Number(b.dataset.layer), head: Number(b.dataset.head), text: b.textContent,
  })), list);
}

/** Clicks the token chip whose text is `text` (the first one). */
async function clickChip(page, text) {
  await page.locator('#tokens li').filter({ has: page.locator('span', { hasText: new RegExp(`^${text}$`) }) }).first().click();
}

const tokenIndex = (page, text) => page.evaluate((t) => [...document.querySelectorAll('#tokens li span')].findIndex((s) => s.textContent === t), text);

test('the head finder ranks the heads from a token and by pattern, and opens the one clicked', async () => {
  const { page, context, problems } = await openPage(`${env.base}?layer=0&head=0`);
  const it = await tokenIndex(page, 'it');
  const animal = await tokenIndex(page, 'animal');
  await clickChip(page, 'animal');
  await page.waitForFunction((i) => document.getElementById('finder-token').value === String(i), animal);
  await clickChip(page, 'it');
  await page.waitForFunction((i) => document.getElementById('finder-token').value === String(i), it);
  await page.waitForFunction(() => document.querySelectorAll('#finder-from button').length >= 3);
  const fromIt = await entries(page, 'finder-from');
  const top3 = fromIt.slice(0, 3).map((e) => `${e.layer}/${e.head}`);
  assert.ok(top3.includes('3/1') || top3.includes('5/11'), `top three heads from "it": ${top3}`);
  assert.match(fromIt.find((e) => `${e.layer}/${e.head}` === '3/1' || `${e.layer}/${e.head}` === '5/11').text, /→ "animal" 0\.\d\d/);

  // Choosing by a select works as well as a chip.
  await page.selectOption('#finder-token', String(animal));
  await page.waitForFunction(() => document.querySelector('#finder-from button')?.textContent && !document.querySelector('#finder-from button').textContent.includes('"animal"'));
  const fromAnimal = await entries(page, 'finder-from');
  assert.notDeepEqual(fromAnimal, fromIt, 'another token ranks other heads');

  // The ranking by pattern: the previous-token head of layer 0 leads its list.
  await page.selectOption('#finder-kind', 'previous');
  await page.waitForFunction(() => /^layer 0, head \d+: /.test(document.querySelector('#finder-pattern button')?.textContent));
  const previous = await entries(page, 'finder-pattern');
  assert.equal(previous[0].layer, 0, `previous-token ranking: ${previous[0].text}`);
  assert.match(previous[0].text, /: (0\.[5-9]\d|1\.00)$/);
  await page.selectOption('#finder-kind', 'next');
  await page.waitForFunction((first) => document.querySelector('#finder-pattern button').textContent !== first, previous[0].text);
  const next = await entries(page, 'finder-pattern');
  assert.equal(next[0].layer, 1, `next-token ranking: ${next[0].text}`);

  // Clicking an entry opens that head: selects, the URL and the drawn heatmap follow.
  const target = fromIt.find((e) => `${e.layer}/${e.head}` === '5/11') ?? fromIt[0];
  await page.selectOption('#finder-token', String(it));
  await page.locator(`#finder-from button[data-layer="${target.layer}"][data-head="${target.head}"]`).click();
  await page.waitForFunction(([l, h]) => document.getElementById('layer').value === String(l) && document.getElementById('head').value === String(h), [target.layer, target.head]);
  assert.match(await writtenUrl(page), new RegExp(`layer=${target.layer}&head=${target.head}`));
  await page.waitForFunction(() => window.__tvizDrawn.attention?.geometry);
  const weights = await page.evaluate(() => Array.from(window.__tvizDrawn.attention.values));
  const t = Math.round(Math.sqrt(weights.length));
  const animalAt = await tokenIndex(page, 'animal');
  assert.ok(weights[it * t + animalAt] > 0.5, 'the drawn head is the one whose "it" looks at "animal"');
  assert.equal(await page.getAttribute(`#finder-from button[data-layer="${target.layer}"][data-head="${target.head}"]`, 'aria-current'), 'true');
  assert.deepEqual(problems, []);
  await context.close();
});

test('with no head in the URL the page opens on an informative head, and records it; a URL head is kept', async () => {
  const { page, context, problems } = await openPage();
  const chosen = [await page.inputValue('#layer'), await page.inputValue('#head')].join('/');
  assert.ok(['3/1', '5/11'].includes(chosen), `opened on layer/head ${chosen}`);
  assert.match(await writtenUrl(page), new RegExp(`layer=${chosen.split('/')[0]}&head=${chosen.split('/')[1]}`), 'the URL records the head');
  assert.match(await page.textContent('#finder-note'), /Opened on layer \d, head \d+.*"it".*"animal"/);
  assert.match(await page.textContent('#attention-caption'), new RegExp(`layer ${chosen.split('/')[0]}, head ${chosen.split('/')[1]}`));
  // The note holds for the head it names: another head, and it goes.
  await page.selectOption('#head', chosen.split('/')[1] === '0' ? '1' : '0');
  await page.waitForFunction(() => document.getElementById('finder-note').textContent === '');

  // Without a pronoun: the clearest previous-token head.
  const plain = await openPage(`${env.base}?text=${encodeURIComponent('the quick brown fox jumps over the lazy dog')}`);
  assert.equal(await plain.page.inputValue('#layer'), '0');
  assert.match(await plain.page.textContent('#finder-note'), /previous-token head/);
  const scores = await plain.page.evaluate(() => Array.from(window.__tvizDrawn.attention.values));
  const t = Math.round(Math.sqrt(scores.length));
  const previous = [...Array(t - 1).keys()].reduce((s, i) => s + scores[(i + 1) * t + i], 0) / (t - 1);
  assert.ok(previous > 0.5, `the opening head's previous-token score is ${previous}`);
  // ... and for the sentence and the model it was worked out on.
  await plain.page.fill('#text', 'a cat and a dog sat in the sun');
  await plain.page.waitForFunction(() => document.getElementById('finder-note').textContent === '');
  await plain.page.selectOption('#model', 'minilm-l6');
  await plain.page.waitForFunction(() => window.__tviz.model === 'minilm-l6');
  assert.equal(await plain.page.textContent('#finder-note'), '');

  const shared = await openPage(`${env.base}?layer=0&head=0`);
  assert.equal(await shared.page.inputValue('#layer'), '0');
  assert.equal(await shared.page.inputValue('#head'), '0');
  assert.equal(await shared.page.textContent('#finder-note'), '');
  assert.deepEqual([...problems, ...plain.problems, ...shared.problems], []);
  await Promise.all([context.close(), plain.context.close(), shared.context.close()]);
});

/** Viewport coordinates of canvas pixel (x, y) of the attention chart. */
async function attentionPoint(page, x, y) {
  const box = await page.locator('#attention-canvas').boundingBox();
  const width = await page.evaluate(() => document.getElementById('attention-canvas').width);
  const scale = box.width / width;
  return [box.x + x * scale, box.y + y * scale];
}

const drawnLines = (page) => page.evaluate(() => window.__tvizDrawn.attention.lines);

test('lines view: a hovered token keeps only its lines, lines and tokens show weights, several heads in colour, captions per mode', async () => {
  const { page, context, problems } = await openPage(`${env.base}?layer=3&head=1`);
  const heatmapCaption = await page.textContent('#attention-caption');
  assert.match(heatmapCaption, /^Heatmap/);
  await page.check('input[name=mode][value=lines]');
  await page.waitForFunction(() => window.__tvizDrawn.attention?.lines);
  const linesCaption = await page.textContent('#attention-caption');
  assert.notEqual(linesCaption, heatmapCaption, 'the caption follows the mode');
  assert.match(linesCaption, /^Lines of layer 3, head 1:/);
  await page.locator('#attention-canvas').scrollIntoViewIfNeeded();
  const all = await drawnLines(page);
  assert.ok(all.lines.length > all.tokens, `${all.lines.length} lines drawn`);
  const rowY = (g, i) => g.top + g.row_height * (i + 0.5);

  // A query token on the left: only its lines.
  const it = await tokenIndex(page, 'it');
  await page.mouse.move(...await attentionPoint(page, all.left_x - 20, rowY(all, it)));
  await page.waitForFunction((i) => {
    const g = window.__tvizDrawn.attention.lines;
    return g.lines.length > 0 && g.lines.every((l) => l.query === i);
  }, it);
  const tip = page.locator('#tooltip');
  await tip.waitFor({ state: 'visible' });
  assert.match(await tip.textContent(), /^"it" → "[^"]+": 0\.\d{4}/);

  // A key token on the right: only the lines into it.
  const animal = await tokenIndex(page, 'animal');
  await page.mouse.move(...await attentionPoint(page, all.right_x + 20, rowY(all, animal)));
  await page.waitForFunction((k) => {
    const g = window.__tvizDrawn.attention.lines;
    return g.lines.length > 0 && g.lines.every((l) => l.key === k);
  }, animal);
  assert.match(await tip.textContent(), /→ "animal": 0\.\d{4}/);

  // Over a line between the columns: every line again, and the line's weight.
  const strongest = all.lines.filter((l) => l.query !== l.key).reduce((a, b) => (b.weight > a.weight ? b : a));
  const x = all.left_x + (all.right_x - all.left_x) * 0.25;
  const y = rowY(all, strongest.query) + (rowY(all, strongest.key) - rowY(all, strongest.query)) * 0.25;
  await page.mouse.move(...await attentionPoint(page, x, y));
  await page.waitForFunction((n) => window.__tvizDrawn.attention.lines.lines.length === n, all.lines.length);
  await page.waitForFunction(() => /^"[^"]+" → "[^"]+": \d\.\d{4}$/.test(document.getElementById('tooltip').textContent));

  // Several heads of the layer at once, each in its own colour, with a legend.
  const vermillion = () => page.evaluate(() => {
    const canvas = document.getElementById('attention-canvas');
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, 80).data; // the legend row
    for (let i = 0; i < data.length; i += 4) if (data[i] === 213 && data[i + 1] === 94 && data[i + 2] === 0) return true;
    return false;
  });
  assert.equal(await vermillion(), false, 'one head: no second colour yet');
  await page.mouse.move(0, 0);
  await page.check('#lines-heads input[value="11"]');
  await page.waitForFunction(() => window.__tvizDrawn.attention.lines.heads.join() === '1,11');
  const two = await drawnLines(page);
  assert.deepEqual([...new Set(two.lines.map((l) => l.head))].sort((a, b) => a - b), [1, 11]);
  assert.ok(await vermillion(), 'the second head is drawn in its own colour (Okabe-Ito vermillion) in the legend');
  const severalCaption = await page.textContent('#attention-caption');
  assert.match(severalCaption, /heads 1, 11 together, one colour per head/);
  assert.notEqual(severalCaption, linesCaption);
  // Hovering a token with two heads: only its lines, of both heads.
  await page.locator('#attention-canvas').scrollIntoViewIfNeeded();
  await page.mouse.move(...await attentionPoint(page, two.left_x - 20, rowY(two, it)));
  await page.waitForFunction((i) => {
    const g = window.__tvizDrawn.attention.lines;
    return g.lines.every((l) => l.query === i) && new Set(g.lines.map((l) => l.head)).size === 2;
  }, it);
  await page.waitForFunction(() => /\(head \d+\)/.test(document.getElementById('tooltip').textContent));

  // Back to the heatmap: its caption again.
  await page.check('input[name=mode][value=heatmap]');
  await page.waitForFunction(() => window.__tvizDrawn.attention.geometry);
  assert.match(await page.textContent('#attention-caption'), /^Heatmap of layer 3, head 1/);
  assert.ok(await page.isHidden('#lines-heads'), 'the head picks belong to the lines view');
  assert.deepEqual(problems, []);
  await context.close();
});

const compareState = (page) => page.evaluate(() => ({
  runs: window.__tviz.compareRuns ?? 0,
  pixels: Object.fromEntries(['compare-a', 'compare-b', 'compare-diff'].map((c) => [c, document.querySelector(`canvas[data-chart="${c}"]`).toDataURL()])),
  diff: window.__tvizDrawn['compare-diff'] ? { geometry: window.__tvizDrawn['compare-diff'].geometry, values: Array.from(window.__tvizDrawn['compare-diff'].values), labels: window.__tvizDrawn['compare-diff'].row_labels } : null,
  caption: document.getElementById('compare-caption').textContent,
  status: document.getElementById('compare-status').textContent,
}));

async function typeCompare(page, text) {
  const before = await page.evaluate(() => window.__tviz.compareRuns ?? 0);
  await page.fill('#compare-text', text);
  await page.waitForFunction((n) => (window.__tviz.compareRuns ?? 0) > n, before);
}

test('a second sentence is drawn beside the first with the difference, which follows the second sentence', async () => {
  const { page, context, problems } = await openPage(`${env.base}?layer=3&head=1`);
  assert.equal(await page.evaluate(() => document.getElementById('compare').open), false, 'collapsed by default');
  await page.click('#compare summary');
  await page.waitForFunction(() => (window.__tviz.compareRuns ?? 0) >= 1 && window.__tvizDrawn['compare-diff']?.geometry);
  await page.locator('#compare-diff-canvas').scrollIntoViewIfNeeded();
  const wide = await compareState(page);
  for (const [name, url] of Object.entries(wide.pixels)) assert.ok(url.length > 20000, `${name} looks blank (${url.length} bytes)`);
  assert.match(wide.status, /Sentence B: 16 tokens/);
  assert.ok(wide.diff.labels.includes('tired/wide'), `labels: ${wide.diff.labels}`);
  assert.ok(wide.diff.values.some((v) => Math.abs(v) > 0.01), 'tired and wide change some weights of this head');
  assert.match(wide.caption, /red where sentence A gives more weight/);

  await typeCompare(page, "The animal didn't cross the street because it was too narrow.");
  const narrow = await compareState(page);
  assert.ok(narrow.diff.labels.includes('tired/narrow'));
  assert.notDeepEqual(narrow.diff.values, wide.diff.values, 'the difference follows the second sentence');
  assert.notEqual(narrow.pixels['compare-diff'], wide.pixels['compare-diff']);
  assert.notEqual(narrow.pixels['compare-b'], wide.pixels['compare-b']);
  assert.equal(narrow.pixels['compare-a'], wide.pixels['compare-a'], 'sentence A did not change');

  // Another head: all three follow the grid's choice.
  await page.selectOption('#head', '11');
  await page.waitForFunction((old) => JSON.stringify(Array.from(window.__tvizDrawn['compare-diff'].values)) !== old, JSON.stringify(narrow.diff.values));
  const head11 = await compareState(page);
  assert.notDeepEqual(head11.diff.values, narrow.diff.values, 'the difference is of the chosen head');

  // Different token counts: both drawn, no difference, and the caption says why.
  await typeCompare(page, 'A much shorter sentence.');
  const short = await compareState(page);
  assert.match(short.caption, /16 and \d tokens/);
  assert.equal(short.diff.geometry, null, 'no cell-by-cell difference between unaligned tokens');
  assert.ok(short.pixels['compare-b'].length > 20000, 'sentence B is still drawn');
  assert.notEqual(short.pixels['compare-diff'], head11.pixels['compare-diff'], 'the difference chart says why it is empty');

  // Bad input: a message, and the last comparison stays.
  await typeCompare(page, '   ');
  assert.match(await page.textContent('#compare-status'), /empty/);
  assert.equal((await compareState(page)).pixels['compare-b'], short.pixels['compare-b']);
  assert.deepEqual(problems, []);
  await context.close();
});

test('on the decoder the head finder starts from the sentence\'s pronoun, offers no next-token score, and shows what a click chose', async () => {
  // The lecture decoder on a sentence with pronouns (its default sentence has none).
  const { page, context, problems } = await open(env, `${env.base}?text=${encodeURIComponent('The rain had stopped. Anna called Tom from the station. He told her about the dog, and she laughed.')}`);
  await page.waitForFunction(() => document.querySelectorAll('#finder-from button').length > 0);
  const token = await page.$eval('#finder-token', (s) => s.selectedOptions[0].textContent);
  assert.match(token, /\b(it|he|she|they|him|her|them|its|his|their)$/i, `the finder starts from ${token}, not a pronoun`);
  const first = await page.textContent('#finder-from button');
  const weight = Number(first.match(/([\d.]+)$/)[1]);
  assert.ok(weight > 0.05, `the first head from "it" puts ${weight} on another word: ${first}`);
  assert.equal(await page.$eval('#finder-kind option[value=next]', (o) => o.disabled), true, 'a decoder\'s next-token score is always 0');
  assert.doesNotMatch(await page.textContent('#finder-kind option[value=first]'), /CLS/);
  // A chip far above the list: the list comes into view, ranked from that token.
  await page.locator('#tokens li').nth(3).click();
  await page.waitForFunction(() => document.getElementById('finder-token').value === '3');
  await page.waitForFunction(() => { const r = document.getElementById('finder-from').getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; });
  // A result: its heatmap comes into view.
  await page.click('#finder-from button');
  await page.waitForFunction(() => { const r = document.getElementById('attention-canvas').getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; });
  assert.deepEqual(problems, []);
  await context.close();
});
