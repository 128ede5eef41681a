// End-to-end tests of links and history: hostile links are clamped with a note, a long text
// makes a short link that reopens, the address bar always equals the view (also after Back
// and Forward), in-page links leave history alone, arrow keys act only where they should,
// and the status line says why the page computes with one thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { usePage, openPage as open, CHARTS, writtenUrl, typeSentence, isShownAndBlank, MINILM } from './helpers.mjs';
import { DEFAULT_MODEL } from '../../www/js/models.js';

const env = usePage();
const openPage = (url = env.base, options) => open(env, url, options);

/** What the address bar says, read as the page reads it. */
async function addressBar(page) {
  return page.evaluate(async () => {
    const q = new URLSearchParams(location.search);
    return { layer: q.get('layer'), head: q.get('head'), step: q.get('step'), hasText: location.hash.startsWith('#t='), length: location.href.length };
  });
}

/** What the page shows. */
async function shown(page) {
  return page.evaluate(() => ({
    layer: document.getElementById('layer').value,
    head: document.getElementById('head').value,
    step: String(Number(document.getElementById('step-count').textContent.match(/step (\d+)/)[1]) - 1),
    text: document.getElementById('text').value,
  }));
}

/** Waits until the address bar states `want` (a subset of addressBar's fields). */
async function waitForAddress(page, want) {
  await page.waitForFunction((w) => {
    const q = new URLSearchParams(location.search);
    return Object.entries(w).every(([k, v]) => q.get(k) === v);
  }, want);
}

test('a hostile link is clamped with notes that stay, and every chart is drawn', async () => {
  const { page, context, problems } = await openPage(`${env.base}?model=gpt2&stephead=4294967296&dims=4294967296,1&layer=99&head=3&step=100000&norm=1e18`);
  await page.waitForFunction(() => window.__tvizSettled());
  const notes = await page.locator('#notice-list li').allTextContents();
  assert.ok(notes.some((n) => /gpt2/.test(n)), notes.join('\n'));
  assert.ok(notes.some((n) => /4294967296/.test(n) && /step head/.test(n)), notes.join('\n'));
  assert.ok(notes.some((n) => /layer 99/.test(n)), notes.join('\n'));
  assert.ok(notes.some((n) => /norm=1e18/.test(n)), notes.join('\n'));
  assert.ok(notes.some((n) => /step 100000/.test(n)), notes.join('\n'));
  assert.equal(await page.isVisible('#error'), false, 'no error: the link was brought in range');
  // The unknown model gives way to the page's default; every number is clamped to its last.
  assert.equal(await page.evaluate(() => window.__tviz.model), DEFAULT_MODEL);
  const last = await page.evaluate(() => ({
    layer: [...document.getElementById('layer').options].at(-1).value,
    step: String(Number(document.getElementById('step-count').textContent.match(/of (\d+)/)[1]) - 1),
  }));
  assert.deepEqual(await shown(page).then((s) => [s.layer, s.head, s.step]), [last.layer, '3', last.step]);
  // Features are the features box's business: it says beside itself what it dropped.
  await page.waitForFunction(() => !document.getElementById('dims-message').hidden);
  assert.match(await page.textContent('#dims-message'), /4294967296/);
  // The default model's own table is the sinusoidal one: its waves chart plots the features.
  const plotted = await page.evaluate(() => window.__tvizDrawn['pos-sin-waves'].plotted.series.map((s) => s.dim).join(', '));
  assert.equal(await page.inputValue('#dims'), plotted, 'the box shows what is plotted');
  await page.evaluate(() => window.__tvizFlush());
  // A chart the model does not have is replaced by a sentence saying why (its canvas hidden).
  for (const c of CHARTS) assert.ok(!(await isShownAndBlank(page, c)), `${c} is blank`);
  // A new sentence keeps the notes (they are about the link, not the sentence).
  const renders = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', 'A new sentence after a strange link.');
  await page.waitForFunction((n) => window.__tviz.renders > n, renders);
  assert.ok(await page.isVisible('#notice'));
  assert.equal(await page.isVisible('#error'), false);
  await page.click('#notice-close');
  await page.waitForFunction(() => document.getElementById('notice').hidden);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a 100,000-character text is cut to the box\'s 32,768 characters, and gives a short link that reopens it', async () => {
  // MiniLM: the page's longest context, 512 tokens (the lecture decoder reads 128).
  const { page, context, problems } = await openPage(env.base, { model: MINILM });
  let text = '';
  let seed = 11;
  const next = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
  const words = ['cat', 'street', 'tired', 'because', 'Zürich', '日本語', 'animal', 'quickly'];
  while (text.length < 100_000) text += `${words[next() % words.length]}${next() % 10000} `;
  const renders = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', text);
  await page.waitForFunction((n) => window.__tviz.renders > n, renders);
  await page.waitForFunction(() => !document.getElementById('link-note').hidden);
  assert.equal([...(await page.inputValue('#text'))].length, 32768, 'the text box holds the cap');
  assert.match(await page.textContent('#text-limit'), /at most 32,768 characters.*the last [\d,]+ were left out/);
  assert.equal(await page.isVisible('#text-limit'), true);
  const note = await page.textContent('#link-note');
  assert.match(note, /too long to share whole/);
  const kept = Number(note.match(/first ([\d,]+) of/)[1].replace(/,/g, ''));
  const url = await writtenUrl(page);
  assert.ok(url.length < 9000, `the link is ${url.length} characters long`);
  assert.match(await page.textContent('#truncated'), /512/);

  const reopened = await openPage(url);
  const restored = await reopened.page.inputValue('#text');
  assert.equal(restored, [...text].slice(0, kept).join(''));
  assert.equal(await reopened.page.locator('#tokens li').count(), 512, 'the reopened text still fills the context');
  assert.deepEqual([...problems, ...reopened.problems], []);
  await reopened.context.close();
  await context.close();
});

test('a short link holding one letter and 99,999 combining accents opens cut to the cap, and says so', async () => {
  const { deflateRawSync } = await import('node:zlib');
  const text = `a${'\u0301'.repeat(99_999)}`;
  const fragment = deflateRawSync(Buffer.from(text, 'utf8')).toString('base64url');
  const { page, context, problems } = await openPage(`${env.base}#t=${fragment}`);
  assert.equal([...(await page.inputValue('#text'))].length, 32768);
  await page.waitForFunction(() => /cut to its first 32,768 characters/.test(document.getElementById('notice').textContent));
  await typeSentence(page, 'A sentence again.'); // the page still answers a keystroke
  assert.deepEqual(problems, []);
  await context.close();
});

test('Back and Forward move between chosen views, and the address bar equals the view', async () => {
  // MiniLM: layer 3 head 1, and a word its chips show whole ("history").
  const { page, context, problems } = await openPage(`${env.base}?layer=0&head=0`, { model: MINILM });
  const agree = async () => {
    const [a, s] = [await addressBar(page), await shown(page)];
    assert.deepEqual([a.layer, a.head, a.step], [s.layer, s.head, s.step], 'the address bar differs from the view');
    assert.ok(a.hasText, 'the address bar holds the text');
  };
  await page.selectOption('#layer', '3');
  await waitForAddress(page, { layer: '3' });
  await page.selectOption('#head', '1');
  await waitForAddress(page, { layer: '3', head: '1' });
  await page.locator('#stepper-section').scrollIntoViewIfNeeded();
  for (let i = 0; i < 4; i += 1) await page.click('#forward');
  await waitForAddress(page, { step: '4' });
  await agree();
  // A contents jump scrolls without touching the history or the address bar.
  const length = await page.evaluate(() => history.length);
  const address = await writtenUrl(page);
  await page.click('nav.toc a[href="#attention-section"]');
  await page.waitForFunction(() => document.getElementById('attention-section').getBoundingClientRect().top < 200);
  assert.equal(await page.evaluate(() => history.length), length);
  assert.equal(page.url(), address);

  await page.goBack(); // before the steps
  await waitForAddress(page, { step: '0', head: '1' });
  await page.waitForFunction(() => /step 1 of/.test(document.getElementById('step-count').textContent));
  await agree();
  await page.goBack(); // before head 1
  await waitForAddress(page, { head: '0', layer: '3' });
  await page.waitForFunction(() => document.getElementById('head').value === '0');
  await agree();
  await page.goForward();
  await waitForAddress(page, { head: '1' });
  await page.waitForFunction(() => document.getElementById('head').value === '1');
  await agree();
  // A new sentence is a new entry too; Back brings the old sentence and its pass back.
  const old = await page.inputValue('#text');
  const renders = await page.evaluate(() => window.__tviz.renders);
  await page.fill('#text', 'A second sentence for the history.');
  await page.waitForFunction((n) => window.__tviz.renders > n, renders);
  await page.waitForFunction(() => location.hash.length > 3 && document.getElementById('tokens').textContent.includes('history'));
  await page.goBack();
  await page.waitForFunction((t) => document.getElementById('text').value === t, old);
  await page.waitForFunction(() => !document.getElementById('tokens').textContent.includes('history'));
  await agree();
  assert.deepEqual(problems, []);
  await context.close();
});

test('arrow keys step only when no other control has the focus', async () => {
  const { page, context, problems } = await openPage();
  await page.locator('#stepper-section').scrollIntoViewIfNeeded();
  await page.click('#step-title');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => /step 2 of/.test(document.getElementById('step-count').textContent));
  // Focus on a button elsewhere: the arrow key must not move the stepper. A click on Step
  // afterwards gives a state to wait for; had the arrow stepped too, it would read step 4.
  await page.focus('.export[data-for="attention"] button');
  await page.keyboard.press('ArrowRight');
  await page.click('#forward');
  await page.waitForFunction(() => /step (3|4) of/.test(document.getElementById('step-count').textContent));
  assert.match(await page.textContent('#step-count'), /step 3 of/);
  // Focus in a select: the arrow changes the select, not the step.
  await page.focus('#layer');
  await page.keyboard.press('ArrowRight');
  await page.click('#forward');
  await page.waitForFunction(() => /step (4|5) of/.test(document.getElementById('step-count').textContent));
  assert.match(await page.textContent('#step-count'), /step 4 of/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the status line says why the page computes with one thread', async () => {
  const forced = await openPage(`${env.base}?threads=1`);
  await forced.page.waitForFunction(() => window.__tviz.cpuThreads === 'off' && document.getElementById('backend-why').textContent.length > 0);
  assert.match(await forced.page.textContent('#backend-why'), /threads=1/);
  await forced.context.close();
  // Served without the isolation headers, the page says that is why.
  const stripHeaders = (page) => page.route((url) => url.pathname === '/', async (route) => {
    const response = await route.fetch();
    const headers = { ...response.headers() };
    delete headers['cross-origin-opener-policy'];
    delete headers['cross-origin-embedder-policy'];
    await route.fulfill({ response, headers });
  });
  const plain = await openPage(env.base, { route: stripHeaders });
  assert.equal(await plain.page.evaluate(() => window.crossOriginIsolated), false);
  await plain.page.waitForFunction(() => window.__tviz.cpuThreads === 'off' && /isolation/.test(document.getElementById('backend-why').textContent));
  assert.equal(await plain.page.textContent('#backend'), 'CPU (WebAssembly)');
  assert.deepEqual(plain.problems, []);
  await plain.context.close();
  // The threaded build missing (a partial copy of dist/): the plain build computes, and says why.
  const noThreadedBuild = (page) => page.route((url) => url.pathname.startsWith('/threads/'), (route) => route.fulfill({ status: 404, body: '' }));
  const missing = await openPage(env.base, { route: noThreadedBuild });
  await missing.page.waitForFunction(() => window.__tviz.cpuThreads === 'off' && /threaded build did not start/.test(document.getElementById('backend-why').textContent));
  assert.equal(await missing.page.textContent('#backend'), 'CPU (WebAssembly)');
  await typeSentence(missing.page, 'One thread computes this.');
  assert.deepEqual(missing.problems.filter((p) => !/404/.test(p)), [], 'only the missing files are reported');
  await missing.context.close();
  // A hostile count is noted, and the page chooses.
  const hostile = await openPage(`${env.base}?threads=%3Cb%3E9000`);
  await hostile.page.waitForFunction(() => /threads=<b>9000 is not a whole number from 1 to 16/.test(document.getElementById('notice').textContent));
  await hostile.page.waitForFunction(() => !['pending', 'starting'].includes(window.__tviz.cpuThreads));
  assert.equal(await hostile.page.textContent('#backend'), `CPU (WebAssembly, ${Math.min(await hostile.page.evaluate(() => navigator.hardwareConcurrency), 8)} threads)`);
  assert.deepEqual(hostile.problems, []);
  await hostile.context.close();
});
