// The page names every ES module it loads in a <link rel="modulepreload"> (www/index.html), so
// the browser fetches them all at once instead of discovering them one level of imports at a
// time: a module added to www/js/ and not listed there would quietly slow the first view.
//   node --test tests/js/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const WWW = new URL('../../www/', import.meta.url);

test('every module in www/js is preloaded by index.html, and nothing else', () => {
  const html = readFileSync(new URL('index.html', WWW), 'utf8');
  const preloaded = [...html.matchAll(/<link rel="modulepreload" href="js\/([^"]+)">/g)].map((m) => m[1]).sort();
  const modules = readdirSync(new URL('js/', WWW)).filter((f) => f.endsWith('.js') && f !== 'main.js').sort();
  assert.deepEqual(preloaded, modules);
  assert.match(html, /<script type="module" src="js\/main.js"><\/script>/);
});

test('every preloaded module is imported by another page module', () => {
  const sources = readdirSync(new URL('js/', WWW)).map((f) => readFileSync(new URL(`js/${f}`, WWW), 'utf8')).join('\n');
  for (const f of readdirSync(new URL('js/', WWW)).filter((x) => x.endsWith('.js') && x !== 'main.js')) {
    assert.match(sources, new RegExp(`from '\\./${f.replace('.', '\\.')}'`), `${f} is preloaded but nothing imports it`);
  }
});

test('the page reads the crate\'s model catalog itself: www/js/models.json links to src/checkpoints/models.json', async () => {
  const { realpathSync } = await import('node:fs');
  const { fileURLToPath } = await import('node:url');
  const linked = realpathSync(fileURLToPath(new URL('js/models.json', WWW)));
  assert.equal(linked, realpathSync(fileURLToPath(new URL('../src/checkpoints/models.json', WWW))));
  const { MODELS, DEFAULT_MODEL } = await import('../../www/js/models.js');
  const catalog = JSON.parse(readFileSync(linked, 'utf8'));
  assert.deepEqual(Object.keys(MODELS), catalog.map((m) => m.name));
  assert.deepEqual(catalog.filter((m) => m.default).map((m) => m.name), [DEFAULT_MODEL]);
});
