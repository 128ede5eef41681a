// scripts/assemble-page.mjs on a small page: what each data-build line puts into dist/ and
// what the built page says in its place.
//   node --test tests/js/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assemble, attributes } from '../../scripts/assemble-page.mjs';

/** A wasm-bindgen output directory with a glue, a wasm and one snippet; returns its path. */
function bindgenOutput(root) {
  const dir = join(root, 'glue');
  mkdirSync(join(dir, 'snippets', 'crate-1'), { recursive: true });
  writeFileSync(join(dir, 'transformer_viz.js'), 'export default function start() {}\n');
  writeFileSync(join(dir, 'transformer_viz_bg.wasm'), Buffer.from([0, 97, 115, 109, 1, 0, 0, 0]));
  writeFileSync(join(dir, 'snippets', 'crate-1', 'inline0.js'), 'export const x = 1;\n');
  return dir;
}

function withDirs(body) {
  const root = mkdtempSync(join(tmpdir(), 'assemble-page-'));
  try {
    const dist = join(root, 'dist');
    mkdirSync(dist);
    body(bindgenOutput(root), dist);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('attributes reads names with and without values', () => {
  assert.deepEqual(attributes('<link data-build rel="copy-file" href="../a/b.json" data-target-path="models/x">'), {
    link: '',
    'data-build': '',
    rel: 'copy-file',
    href: '../a/b.json',
    'data-target-path': 'models/x',
  });
});

test('the wasm line becomes the start script with hashed names, its glue preloaded after it', () => {
  withDirs((glueDir, dist) => {
    const html = '<html><head>\n  <link data-build rel="wasm">\n  <title>t</title>\n</head><body></body></html>';
    const page = assemble(html, glueDir, dist);
    const script = page.match(/<script type="module" async src="\.\/start-wasm\.js" data-glue="\.\/([^"]+)" data-wasm="\.\/([^"]+)"><\/script>/);
    assert.ok(script, page);
    const [, glue, wasm] = script;
    assert.match(glue, /^transformer-viz-[0-9a-f]{16}\.js$/);
    assert.match(wasm, /^transformer-viz-[0-9a-f]{16}_bg\.wasm$/);
    assert.deepEqual(readFileSync(join(dist, wasm)), readFileSync(join(glueDir, 'transformer_viz_bg.wasm')));
    assert.equal(readFileSync(join(dist, glue), 'utf8'), 'export default function start() {}\n');
    assert.ok(existsSync(join(dist, 'snippets', 'crate-1', 'inline0.js')), 'the snippets are copied');
    assert.ok(page.includes(`></script>\n  <link rel="modulepreload" href="./${glue}">\n  <title>`), page);
    assert.ok(!page.includes('data-build'), 'no data-build line is left');
    assert.ok(page.includes('  <title>t</title>'), 'the other lines stay');
  });
});

test('with the threaded build in dist/threads/, its glue and snippets are preloaded instead of the plain glue', () => {
  withDirs((glueDir, dist) => {
    mkdirSync(join(dist, 'threads', 'snippets', 'rayon-1', 'src'), { recursive: true });
    writeFileSync(join(dist, 'threads', 'transformer_viz.js'), 'export default function start() {}\n');
    writeFileSync(join(dist, 'threads', 'snippets', 'rayon-1', 'src', 'workerHelpers.js'), 'export const y = 2;\n');
    const page = assemble('<head>\n  <link data-build rel="wasm">\n</head>', glueDir, dist);
    const preloaded = [...page.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1]);
    assert.deepEqual(preloaded, ['./threads/transformer_viz.js', './threads/snippets/rayon-1/src/workerHelpers.js']);
    assert.match(page, /<script type="module" async src="\.\/start-wasm\.js" data-glue="\.\/transformer-viz-[0-9a-f]{16}\.js"/, 'the plain build stays the fallback');
  });
});

test('a changed wasm gets a new name; the same bytes the same name', () => {
  withDirs((glueDir, dist) => {
    const html = '<head>\n<link data-build rel="wasm">\n</head>';
    const wasmOf = (page) => page.match(/data-wasm="\.\/([^"]+)"/)[1];
    const first = wasmOf(assemble(html, glueDir, dist));
    assert.equal(wasmOf(assemble(html, glueDir, dist)), first);
    writeFileSync(join(glueDir, 'transformer_viz_bg.wasm'), Buffer.from([0, 97, 115, 109, 1, 0, 0, 0, 0]));
    assert.notEqual(wasmOf(assemble(html, glueDir, dist)), first);
  });
});

test('the stylesheet is linked by its hashed name with its integrity, and www/ files are copied', () => {
  withDirs((glueDir, dist) => {
    // Real files of www/ (hrefs are relative to it): its stylesheet, a file, a directory.
    const html = [
      '<head>',
      '<link data-build rel="wasm">',
      '  <link data-build rel="css" href="style.css">',
      '  <link data-build rel="copy-file" href="start-wasm.js">',
      '  <link data-build rel="copy-file" href="../trained/lecture-reverse/config.json" data-target-path="models/lecture-reverse">',
      '  <link data-build rel="copy-dir" href="lessons" data-target-path="lessons">',
      '  <link data-build rel="copy-dir" href="js" data-target-path="js">',
      '</head>',
    ].join('\n');
    assemble(html, glueDir, dist);
    const page = assemble(html, glueDir, dist); // again over the first: as a second build does
    const www = new URL('../../www/', import.meta.url).pathname;
    const css = readFileSync(join(www, 'style.css'));
    const [, name, integrity] = page.match(/ {2}<link rel="stylesheet" href="\.\/([^"]+)" integrity="([^"]+)">/);
    assert.match(name, /^style-[0-9a-f]{16}\.css$/);
    assert.deepEqual(readFileSync(join(dist, name)), css);
    assert.equal(integrity, `sha384-${createHash('sha384').update(css).digest('base64')}`);
    assert.deepEqual(readFileSync(join(dist, 'start-wasm.js')), readFileSync(join(www, 'start-wasm.js')));
    assert.ok(existsSync(join(dist, 'models', 'lecture-reverse', 'config.json')));
    assert.ok(existsSync(join(dist, 'lessons', 'index.json')));
    // www/js/models.json is a link to the crate's model list: dist/ gets the file itself.
    assert.ok(lstatSync(join(www, 'js', 'models.json')).isSymbolicLink(), 'the fixture is still a link');
    assert.ok(lstatSync(join(dist, 'js', 'models.json')).isFile(), 'dist/js/models.json is a file, not a link');
    assert.deepEqual(readFileSync(join(dist, 'js', 'models.json')), readFileSync(join(www, 'js', 'models.json')));
    // <head>, the script, the preload, the stylesheet, </head>: the copy lines are gone.
    assert.equal(page.split('\n').length, 5, page);
  });
});

test('a page without the wasm line, or with an unknown rule, is refused by name', () => {
  withDirs((glueDir, dist) => {
    assert.throws(() => assemble('<head>\n</head>', glueDir, dist), /no <link data-build rel="wasm">/);
    assert.throws(() => assemble('<link data-build rel="rust" href="x">', glueDir, dist), /unknown rel "rust"/);
    assert.throws(() => assemble('<link data-build rel="copy-dir" href="js">', glueDir, dist), /needs data-target-path/);
  });
});
