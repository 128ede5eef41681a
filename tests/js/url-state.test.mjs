// Property tests of the link format (www/js/url-state.js), run in Node with fast-check:
// any text survives a link, no link can make the reader throw or hand the page a number
// outside the model's ranges, and a hostile fragment cannot expand without bound.
//   node --test tests/js/                       (bounded: a few hundred cases per property)
//   FC_NUM_RUNS=200000 node --test tests/js/    (the long mode)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import {
  encodeText, decodeText, textFragment, parseLink, clampToLimits, parseDims, queryFor, shorten, capText, parseOff, offCode,
  trainCode, parseTrain,
  MAX_TEXT_FRAGMENT, MAX_DECODED_TEXT_BYTES, MAX_DIMS, MAX_TEXT_CHARS,
} from '../../www/js/url-state.js';
import { threadPlan, MAX_THREADS } from '../../www/js/threads.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 300);
const LIMITS = { layer: 6, head: 12, stepHead: 12, step: 102, norm: 13, dims: 384 };
const base64url = (bytes) => Buffer.from(bytes).toString('base64url');

test('any text survives the fragment byte for byte', async () => {
  await fc.assert(fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 400 }), async (text) => {
    assert.equal(await decodeText(await encodeText(text)), text);
  }), { numRuns: runs });
  await fc.assert(fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 400 }), async (text) => {
    const wellFormed = text.toWellFormed(); // lone surrogates cannot be UTF-8 encoded
    assert.equal(await decodeText(await encodeText(wellFormed)), wellFormed);
  }), { numRuns: runs });
});

test('a long text gives a short link that holds a prefix of it, and says how much', async () => {
  const words = ['the', 'animal', 'street', 'tired', 'because', 'ünïcødé', '日本語', '🎉', 'مرحبا'];
  let text = '';
  let seed = 7;
  const next = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
  while (text.length < 100_000) text += `${words[next() % words.length]}${next() % 100000} `; // compresses poorly, like a real long paste
  const link = await textFragment(text);
  assert.ok(link.fragment.length <= MAX_TEXT_FRAGMENT, `fragment of ${link.fragment.length} characters`);
  assert.ok(link.keptChars < link.totalChars);
  assert.ok(link.keptChars > 1000, `only ${link.keptChars} characters kept`);
  assert.equal(await decodeText(link.fragment), [...text].slice(0, link.keptChars).join(''));
  const short = await textFragment('The animal didn\'t cross the street because it was too tired.');
  assert.equal(short.keptChars, short.totalChars);
});

test('a fragment that would expand past the limit is refused (no zip bomb)', async () => {
  const bomb = base64url(deflateRawSync(Buffer.alloc(MAX_DECODED_TEXT_BYTES * 8, 0x61)));
  await assert.rejects(decodeText(bomb));
  const { values, notes } = await parseLink('?layer=1', `#t=${bomb}`);
  assert.equal(values.text, undefined);
  assert.equal(values.layer, 1);
  assert.match(notes.join(' '), /could not be read/);
});

test('damaged fragments are noted, never thrown', async () => {
  for (const t of ['', '%%%', '!!', 'AAAA', base64url(Buffer.from([0xff, 0xfe])), base64url(deflateRawSync(Buffer.from([0xc3, 0x28])))]) {
    const { values, notes } = await parseLink('', `#t=${t}`);
    if (values.text === undefined) assert.ok(notes.length > 0, `no note for fragment ${t}`);
  }
});

test('no link makes the reader throw or hand out a bad value', async () => {
  const keys = ['text', 'model', 'layer', 'head', 'mode', 'step', 'stephead', 'norm', 'dims', 'threads', 'backend', 'x'];
  const value = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
    fc.double().map(String), fc.constantFrom('4294967296', '1e18', '-1', '0x10', ' 3', '3 ', '', '1,2,3', '0,999999999', 'NaN'));
  const search = fc.array(fc.tuple(fc.constantFrom(...keys), value), { maxLength: 12 })
    .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`);
  const raw = fc.string({ unit: 'binary', maxLength: 200 });
  await fc.assert(fc.asyncProperty(fc.oneof(search, raw), fc.oneof(raw, fc.string().map((s) => `#t=${s}`)), async (q, h) => {
    const { values, notes } = await parseLink(q, h);
    assert.ok(Array.isArray(notes));
    for (const k of ['layer', 'head', 'step', 'stepHead', 'norm']) {
      if (values[k] !== undefined) assert.ok(Number.isSafeInteger(values[k]) && values[k] >= 0, `${k}=${values[k]}`);
    }
    if (values.mode !== undefined) assert.ok(['heatmap', 'lines'].includes(values.mode));
    if (values.backend !== undefined) assert.ok(['auto', 'cpu', 'gpu'].includes(values.backend));
    if (values.threads !== undefined) assert.ok(Number.isInteger(values.threads) && values.threads >= 1 && values.threads <= MAX_THREADS, `threads=${values.threads}`);
    if (values.dims !== undefined) assert.ok(values.dims.length >= 1 && values.dims.length <= MAX_DIMS && values.dims.every(Number.isSafeInteger));
    if (values.text !== undefined) assert.equal(typeof values.text, 'string');
    const clamped = clampToLimits(values, LIMITS).values;
    for (const k of ['layer', 'head', 'step', 'stepHead', 'norm']) {
      if (clamped[k] !== undefined) assert.ok(clamped[k] < LIMITS[k], `${k}=${clamped[k]} after clamping`);
    }
    if (clamped.dims !== undefined) assert.ok(clamped.dims.length > 0 && clamped.dims.every((d) => d < LIMITS.dims));
    for (const note of notes) assert.ok(note.length < 400, `a note of ${note.length} characters`);
  }), { numRuns: runs });
});

test('a link with too many features plots the first ones and says so', async () => {
  const { values, notes } = await parseLink('?dims=0,1,2,3,4,5,6,7,8,9&follow=3,1', '');
  assert.deepEqual(values.dims, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(values.residualTokens, [3, 1]);
  assert.match(notes.join(' '), /10 features/);
});

test('out-of-range numbers are clamped or dropped, with a note each', async () => {
  const { values, notes } = await parseLink('?stephead=4294967296&dims=4294967296,1&layer=99&head=3&step=100000', '');
  const out = clampToLimits(values, LIMITS);
  assert.deepEqual([out.values.stepHead, out.values.layer, out.values.head, out.values.step], [11, 5, 3, 101]);
  assert.deepEqual(out.values.dims, [1]);
  assert.equal(notes.length, 0);
  assert.equal(out.notes.length, 4, out.notes.join('\n'));
  assert.match(out.notes.join('\n'), /4294967296/);
  const none = clampToLimits((await parseLink('?dims=999,1000', '')).values, LIMITS);
  assert.equal(none.values.dims, undefined, 'no feature in range: the page keeps its own');
});

test('the query round-trips through parseLink', async () => {
  await fc.assert(fc.asyncProperty(fc.record({
    layer: fc.nat(5), head: fc.nat(11), mode: fc.constantFrom('heatmap', 'lines'), step: fc.nat(101), stepHead: fc.nat(11),
    norm: fc.nat(12), dims: fc.uniqueArray(fc.nat(383), { minLength: 1, maxLength: MAX_DIMS }), threads: fc.option(fc.integer({ min: 1, max: MAX_THREADS }), { nil: null }), backend: fc.constantFrom('auto', 'cpu', 'gpu'),
    residualTokens: fc.option(fc.uniqueArray(fc.nat(40), { minLength: 1, maxLength: MAX_DIMS }), { nil: null }),
    query: fc.option(fc.nat(511), { nil: null }), stack: fc.constantFrom('decoder', 'encoder'),
  }), async (s) => {
    const { values, notes } = await parseLink(queryFor(s, 'minilm-l6'), '');
    assert.deepEqual(notes, []);
    assert.equal(values.query, s.query ?? undefined, 'the one-query chart\'s token');
    assert.equal(values.stack, s.stack === 'encoder' ? 'encoder' : undefined, 'the encoder-decoder\'s attention');
    for (const k of ['layer', 'head', 'mode', 'step', 'stepHead', 'norm', 'dims']) assert.deepEqual(values[k], s[k], k);
    assert.deepEqual(values.residualTokens, s.residualTokens ?? undefined);
    assert.equal(values.threads, s.threads ?? undefined);
    assert.equal(values.backend, s.backend === 'auto' ? undefined : s.backend);
  }), { numRuns: runs });
});

test('a link names the attention stack as encoder or decoder, or is noted and ignored', async () => {
  assert.equal((await parseLink('?stack=encoder', '')).values.stack, 'encoder');
  const { values, notes } = await parseLink('?stack=%3Cb%3E', '');
  assert.equal(values.stack, undefined);
  assert.match(notes.join(' '), /neither encoder nor decoder/);
});

test('a link names the backend as auto, cpu or gpu, or is noted and ignored', async () => {
  assert.equal((await parseLink('?backend=gpu', '')).values.backend, 'gpu');
  const { values, notes } = await parseLink('?backend=%3Cscript%3E', '');
  assert.equal(values.backend, undefined);
  assert.match(notes.join(' '), /not auto, cpu or gpu/);
});

test('a link asks for 1 to 16 threads, or is noted and the page chooses', async () => {
  assert.equal((await parseLink('?threads=4', '')).values.threads, 4);
  for (const bad of ['0', '17', '2.5', '-1', 'x', '', ' 2', '99999999999']) {
    const { values, notes } = await parseLink(`?threads=${encodeURIComponent(bad)}`, '');
    assert.equal(values.threads, undefined, bad);
    assert.match(notes.join(' '), /not a whole number from 1 to 16/, bad);
  }
});

test('the thread plan: the link, else the cores up to 8; threads only on an isolated page', () => {
  assert.deepEqual(threadPlan('', 4, true), { threads: 4, threaded: true, why: null });
  assert.deepEqual(threadPlan('', 32, true), { threads: 8, threaded: true, why: null });
  assert.deepEqual(threadPlan('?threads=12', 2, true), { threads: 12, threaded: true, why: null });
  assert.equal(threadPlan('?threads=1', 8, true).threaded, false);
  assert.match(threadPlan('?threads=1', 8, true).why, /threads=1/);
  assert.match(threadPlan('', 1, true).why, /one core/);
  assert.match(threadPlan('', undefined, true).why, /one core/);
  assert.match(threadPlan('', 8, false).why, /cross-origin isolation/);
  assert.deepEqual(threadPlan('?threads=banana', 2, true), { threads: 2, threaded: true, why: null });
});

test('features parse as a short list of whole numbers or not at all', () => {
  assert.deepEqual(parseDims('0, 1, 4'), [0, 1, 4]);
  assert.deepEqual(parseDims('3 3 3'), [3]);
  assert.equal(parseDims('1, -2'), null);
  assert.equal(parseDims('1.5'), null);
  assert.equal(parseDims(''), null);
  assert.equal(parseDims('1,'.repeat(100)), null);
  assert.equal(parseDims('0,1,2,3,4,5,6,7,8,9').length, 10);
  assert.equal(shorten('x'.repeat(1000)).length, 41);
});

test('the text cap keeps a whole-character prefix of at most MAX_TEXT_CHARS, and counts what it left out', async () => {
  await fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.integer({ min: 0, max: 3 }), (piece, extra) => {
    const whole = (piece || 'a').repeat(Math.ceil((MAX_TEXT_CHARS + extra * 7) / Math.max(1, [...(piece || 'a')].length)));
    const { text, cut } = capText(whole);
    const points = [...whole];
    assert.equal([...text].length, Math.min(points.length, MAX_TEXT_CHARS));
    assert.equal(cut, Math.max(0, points.length - MAX_TEXT_CHARS));
    assert.ok(whole.startsWith(text));
  }), { numRuns: Math.min(runs, 50) });
  // 'a' and 99,999 combining accents (one huge grapheme): a link of a few hundred characters
  // that once froze the page for 19 s; it opens cut, and says so.
  const marks = `a${'\u0301'.repeat(99_999)}`;
  const link = `#t=${base64url(deflateRawSync(Buffer.from(marks, 'utf8')))}`;
  assert.ok(link.length < 1000, `the link is ${link.length} characters`);
  const { values, notes } = await parseLink('', link);
  assert.equal([...values.text].length, MAX_TEXT_CHARS);
  assert.ok(notes.some((n) => /cut to its first 32,768 characters/.test(n)), notes.join('\n'));
  assert.equal(capText('short').cut, 0);
});

test('parts switched off read and write as short codes, each part once', () => {
  const off = parseOff('h1.2,f0m,pos,mask,x0.1m,h1.2m');
  assert.deepEqual(off, [
    { part: 'head', layer: 1, head: 2, fill: 'zero' },
    { part: 'ffn', layer: 0, fill: 'mean' },
    { part: 'position', fill: 'zero' },
    { part: 'mask', fill: 'zero' },
    { part: 'cross_head', layer: 0, head: 1, fill: 'mean' },
  ]);
  assert.equal(offCode(off), 'h1.2,f0m,pos,mask,x0.1m');
  for (const bad of ['h1', 'f', 'zz', 'h1.2.3', 'pos;mask', '', Array(65).fill('pos').join(',')]) {
    assert.equal(parseOff(bad), null, bad);
  }
});

test('a training run\'s settings survive a link, and a bad one is noted', async () => {
  const settings = fc.record({
    layers: fc.integer({ min: 0, max: 999999 }), heads: fc.integer({ min: 0, max: 999999 }), d_model: fc.integer({ min: 0, max: 999999 }),
    context: fc.integer({ min: 0, max: 999999999 }), batch: fc.integer({ min: 0, max: 999999 }), steps: fc.integer({ min: 0, max: 999999999 }),
    learning_rate: fc.constantFrom(0.003, 1e-5, 0.1, 0.0005, 2, 0.02), seed: fc.integer({ min: 0, max: 2 ** 40 }),
    pre_ln: fc.boolean(), positions: fc.boolean(), task: fc.constantFrom('stories', 'repeat', 'mixed', 'reverse', 'text'),
  });
  fc.assert(fc.property(settings, (t) => { assert.deepEqual(parseTrain(trainCode(t)), { ...t }); }), { numRuns: runs });
  const { values } = await parseLink('?train=l2_h4_d64_c64_b16_n2000_r0.003_s1_pre_pos_repeat', '');
  assert.deepEqual(values.train, { layers: 2, heads: 4, d_model: 64, context: 64, batch: 16, steps: 2000, learning_rate: 0.003, seed: 1, pre_ln: true, positions: true, task: 'repeat' });
  for (const bad of ['l2_h4', 'l2_h4_d64_c64_b16_n2000_rNaN_s1_pre_pos_repeat', 'l2_h4_d64_c64_b16_n2000_r0.003_s1_pre_pos_poems', 'l-1_h4_d64_c64_b16_n2000_r0.003_s1_pre_pos_repeat']) {
    assert.equal(parseTrain(bad), null, bad);
    const { values: none, notes } = await parseLink(`?train=${bad}`, '');
    assert.equal(none.train, undefined);
    assert.ok(notes.some((n) => /is not a training run's settings/.test(n)), notes.join('\n'));
  }
});

test('a link that switches parts off is read, and a bad one is noted', async () => {
  const { values } = await parseLink('?off=h0.1m,mask', '');
  assert.deepEqual(values.off, [{ part: 'head', layer: 0, head: 1, fill: 'mean' }, { part: 'mask', fill: 'zero' }]);
  const { values: none, notes } = await parseLink('?off=head1', '');
  assert.equal(none.off, undefined);
  assert.match(notes[0], /does not name parts of a model/);
  assert.match(queryFor({ layer: 0, head: 0, mode: 'heatmap', step: 0, stepHead: 0, norm: 1, dims: [0], off: [{ part: 'ffn', layer: 2, fill: 'zero' }] }, 'm'), /off=f2/);
});
