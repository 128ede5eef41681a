// Every chart of every model can be read: each text a chart painted (its title, subtitle,
// axis names, every bar and row label) is still visible on the page's canvas and in the PNG
// export, and the SVG export's texts are on the canvas too. The page reports what a canvas
// painted when the canvas is marked `data-report-texts`: each text with its box.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { usePage, openPage, MINILM } from './helpers.mjs';

const env = usePage();

// Each model with a sentence it reads (the encoder-decoder takes lowercase letters and spaces).
const MODELS = [
  [null, 'The cat sat on the mat because it was tired.'],
  ['lecture-pre-ln', 'The cat sat on the mat because it was tired.'],
  ['lecture-reverse', 'the cat sat down'],
  [MINILM, 'The cat sat on the mat because it was tired.'],
  ['smollm2-135m', 'The cat sat on the mat because it was'],
];

/**
 * In the page: the texts of `texts` (a chart's report) that left no ink in `image` (an
 * ImageData of the chart drawn at `scale` pixels a CSS pixel): texts a student cannot see. A
 * text has ink when some pixel of its box is nearer its colour than the box's most common
 * colour (what it is drawn on) is, by a clear margin: an antialiased "i" or "." counts, a text
 * painted over by a shape does not. A text partly outside the image is looked for inside.
 */
function unseenTexts([texts, scale, image]) {
  const distance = (i, [r, g, b]) => Math.hypot(image.data[i] - r, image.data[i + 1] - g, image.data[i + 2] - b);
  return texts.filter((t) => {
    if (!t.text.trim()) return false; // a space has no ink to find
    const [x0, y0] = [Math.max(0, Math.floor(t.left * scale)), Math.max(0, Math.floor(t.top * scale))];
    const x1 = Math.min(image.width, Math.ceil((t.left + t.width) * scale));
    const y1 = Math.min(image.height, Math.ceil((t.top + t.height) * scale));
    const counts = new Map();
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const i = (y * image.width + x) * 4;
        const key = (image.data[i] << 16) | (image.data[i + 1] << 8) | image.data[i + 2];
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    if (counts.size === 0) return true; // wholly outside the image
    const ground = [...counts.entries()].reduce((a, b) => (b[1] > a[1] ? b : a))[0];
    const groundDistance = Math.hypot((ground >> 16) - t.color[0], ((ground >> 8) & 255) - t.color[1], (ground & 255) - t.color[2]);
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) if (distance((y * image.width + x) * 4, t.color) < groundDistance - 40) return false;
    }
    return true;
  }).map((t) => `"${t.text}" at (${Math.round(t.left)}, ${Math.round(t.top)})`);
}

/** Texts of an SVG document, each with its spaces collapsed. */
function svgTexts(svg) {
  const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
  return [...doc.querySelectorAll('text')].map((t) => t.textContent.replace(/\s+/g, ' ').trim()).filter(Boolean);
}

for (const [model, sentence] of MODELS) {
  test(`${model ?? 'the default model'}: every chart's texts are visible on screen and in the PNG, and the SVG's are on screen`, async () => {
    // Every chart canvas reports its texts from its first drawing on (some charts depend on
    // the model alone and are drawn once).
    const reporting = await env.browser.newContext({ viewport: { width: 1280, height: 720 }, acceptDownloads: true });
    await reporting.addInitScript(() => document.addEventListener('DOMContentLoaded', () => {
      for (const c of document.querySelectorAll('canvas[data-chart]')) c.setAttribute('data-report-texts', '');
    }));
    const { page, context, problems } = await openPage(env, env.base, { model, context: reporting });
    // The helpers above, defined in the page (an evaluated string is not the page's own script,
    // so its Content-Security-Policy, which forbids eval, does not apply).
    await page.evaluate(`window.__unseenTexts = ${unseenTexts}; window.__svgTexts = ${svgTexts};`);
    const renders = await page.evaluate(() => window.__tviz.renders);
    await page.fill('#text', sentence);
    await page.waitForFunction((n) => window.__tviz.renders > n, renders);
    const charts = await page.evaluate(() => [...document.querySelectorAll('canvas[data-chart]')]
      .filter((c) => c.checkVisibility() && document.querySelector(`.export[data-for="${c.dataset.chart}"]`)?.checkVisibility())
      .map((c) => c.dataset.chart));
    assert.ok(charts.length >= 8, `only ${charts.length} charts on screen: ${charts}`);
    const failures = [];
    for (const chart of charts) {
      await page.locator(`canvas[data-chart="${chart}"]`).scrollIntoViewIfNeeded();
      await page.waitForFunction((c) => window.__tvizSettled() && window.__tvizDrawn[c]?.texts, chart).catch((err) => { throw new Error(`${chart}: never drawn with its texts (${err.message})`); });
      // The report and the pixels read together: nothing draws between them.
      const onScreen = await page.evaluate((c) => {
        const canvas = document.querySelector(`canvas[data-chart="${c}"]`);
        const d = window.__tvizDrawn[c];
        const image = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
        const unseen = window.__unseenTexts([d.texts, canvas.width / d.width, image]);
        return { texts: d.texts, width: d.width, unseen };
      }, chart);
      if (onScreen.texts.length === 0) failures.push(`${chart}: no text at all`);
      if (onScreen.unseen.length) failures.push(`${chart} on screen: ${onScreen.unseen.join(', ')}`);

      const box = page.locator(`.export[data-for="${chart}"]`).first();
      const [png] = await Promise.all([page.waitForEvent('download').catch((e) => { throw new Error(`${chart}: ${e.message}`); }), box.getByText('Export PNG').click()]);
      const pngBase64 = readFileSync(await png.path()).toString('base64');
      const inPng = await page.evaluate(async ([texts, width, base64]) => {
        const bytes = Uint8Array.from(atob(base64), (ch) => ch.charCodeAt(0));
        const bitmap = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
        const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
        const context = canvas.getContext('2d');
        context.drawImage(bitmap, 0, 0);
        const image = context.getImageData(0, 0, bitmap.width, bitmap.height);
        return window.__unseenTexts([texts, bitmap.width / width, image]);
      }, [onScreen.texts, onScreen.width, pngBase64]);
      if (inPng.length) failures.push(`${chart} in the PNG: ${inPng.join(', ')}`);

      const [svg] = await Promise.all([page.waitForEvent('download'), box.getByText('Export SVG').click()]);
      const inSvg = await page.evaluate((text) => window.__svgTexts(text), readFileSync(await svg.path(), 'utf8'));
      const drawn = new Set(onScreen.texts.map((t) => t.text.replace(/\s+/g, ' ').trim()));
      const missing = inSvg.filter((t) => !drawn.has(t));
      if (missing.length) failures.push(`${chart}: the SVG has ${missing.map((t) => `"${t}"`).join(', ')}, the canvas does not`);
    }
    assert.deepEqual(failures, [], `${model ?? 'default'}:\n${failures.join('\n')}`);
    assert.deepEqual(problems, []);
    await context.close();
  });
}
