// scripts/check-layers.mjs on a copy of a small tree (tests/js/fixtures/layers/): it passes the
// tree as it is, and fails, naming the file and the import, once an import goes the wrong way.
//   node --test tests/js/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../scripts/check-layers.mjs', import.meta.url));
const FIXTURE = fileURLToPath(new URL('fixtures/layers/', import.meta.url));

/** Runs the checker on a fresh copy of the fixture, after `change(dir)` edits the copy. */
function check(change = () => {}, ...args) {
  const dir = mkdtempSync(join(tmpdir(), 'check-layers-'));
  try {
    cpSync(FIXTURE, dir, { recursive: true });
    change(dir);
    const run = spawnSync(process.execPath, [SCRIPT, '--root', dir, ...args], { encoding: 'utf8' });
    return { status: run.status, out: run.stdout + run.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Prepends `line` to the copy's file `path`. */
const prepend = (path, line) => (dir) => writeFileSync(join(dir, path), `${line}\n${readFileSync(join(dir, path), 'utf8')}`);

test('a tree whose imports go one way passes', () => {
  const { status, out } = check();
  assert.equal(status, 0, out);
  assert.match(out, /JavaScript \(www\/js\): dependencies go one way/);
  assert.match(out, /Rust \(src\): dependencies go one way/);
});

test('a page module importing from a layer above it fails, naming the file, the import and the cycle', () => {
  const { status, out } = check(prepend('www/js/dom.js', "import { draw } from './charts.js';"));
  assert.equal(status, 1, out);
  assert.match(out, /www\/js\/dom\.js:1 imports '\.\/charts\.js': layer 'foundations' may not import from layer 'charts' above it/);
  assert.match(out, /import cycle charts\.js -> state\.js -> dom\.js -> charts\.js/);
});

test('two page modules of one layer importing each other fail as a cycle', () => {
  const { status, out } = check((dir) => {
    writeFileSync(join(dir, 'www/js/compare.js'), "import { wireAttention } from './attention.js';\nexport const wireCompare = wireAttention;\n");
    prepend('www/js/attention.js', "import { wireCompare } from './compare.js';")(dir);
  });
  assert.equal(status, 1, out);
  assert.match(out, /import cycle attention\.js -> compare\.js -> attention\.js/);
  assert.doesNotMatch(out, /may not import/, 'both are sections: no layer is crossed');
});

test('a page module asking for a name its import does not export, or writing window.__tviz, fails', () => {
  const { status, out } = check((dir) => {
    prepend('www/js/attention.js', "import { redraw } from './charts.js';")(dir);
    writeFileSync(join(dir, 'www/js/state.js'), `${readFileSync(join(dir, 'www/js/state.js'), 'utf8')}window.__tviz.text = 1;\n`);
  });
  assert.equal(status, 1, out);
  assert.match(out, /www\/js\/attention\.js:1 imports '\.\/charts\.js': it exports no redraw/);
  assert.match(out, /www\/js\/state\.js: writes window\.__tviz itself/);
});

test('a script importing from tests/ fails', () => {
  const { status, out } = check((dir) => {
    mkdirSync(join(dir, 'scripts'));
    writeFileSync(join(dir, 'scripts/bench.mjs'), "import { openPage } from '../tests/e2e/helpers.mjs';\nexport { openPage };\n");
  });
  assert.equal(status, 1, out);
  assert.match(out, /scripts\/bench\.mjs:1 imports '\.\.\/tests\/e2e\/helpers\.mjs': a script imports no test/);
});

test('a page module in no layer fails', () => {
  const { status, out } = check((dir) => writeFileSync(join(dir, 'www/js/unplaced.js'), 'export const x = 1;\n'));
  assert.equal(status, 1, out);
  assert.match(out, /www\/js\/unplaced\.js: not in any layer/);
});

test('a crate module using one above it fails, by `use`, by a path in code and through a re-export', () => {
  const { status, out } = check((dir) => {
    prepend('src/model/backend.rs', 'use crate::trace::Trace;')(dir);
    writeFileSync(join(dir, 'src/error.rs'), 'pub struct VizError(pub Option<crate::Trace>);\n');
  });
  assert.equal(status, 1, out);
  // The layers' numbers follow RUST_LAYERS' order; the test names the modules, not the numbers.
  assert.match(out, /src\/model\/backend\.rs:1 uses crate::trace::Trace: 'model' \(layer \d+\) may not import from 'trace' \(layer \d+, above it\)/);
  assert.match(out, /src\/error\.rs:1 uses crate::Trace: 'error' \(layer \d+\) may not import from 'trace'/);
});

test('files of one directory using each other fail as a cycle; each part can be checked alone', () => {
  const backToAttention = prepend('src/model/backend.rs', 'use super::attention::scores;');
  const { status, out } = check(backToAttention);
  assert.equal(status, 1, out);
  assert.match(out, /src\/model\/: files import each other in a cycle attention\.rs -> backend\.rs -> attention\.rs/);
  assert.match(out, /src\/model\/backend\.rs:1 uses super::attention::scores/);
  // --js leaves the crate alone: the page's part passes.
  const js = check(backToAttention, '--js');
  assert.equal(js.status, 0, js.out);
  assert.doesNotMatch(js.out, /Rust/);
  const rust = check(prepend('www/js/dom.js', "import { draw } from './charts.js';"), '--rust');
  assert.equal(rust.status, 0, rust.out);
});

test('the page\'s own modules pass', () => {
  const run = spawnSync(process.execPath, [SCRIPT, '--js'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
