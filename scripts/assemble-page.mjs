// Assembles the release page in dist/ from www/index.html and the plain build's wasm-bindgen
// output (scripts/lib.sh, build_page). Each `<link data-build ...>` line of www/index.html says
// what goes into dist/ and is replaced in the built page:
//   rel="wasm"       the plain build (its glue, wasm and snippets, from the directory given as
//                    the first argument): its glue and wasm are named by a hash of their bytes,
//                    and the line becomes the <script> that www/start-wasm.js reads them from
//                    (the page's Content-Security-Policy allows no inline script; `async`, so it
//                    starts the wasm's download as soon as it and js/threads.js have arrived,
//                    not after the page's other modules and KaTeX). Preloaded right after it:
//                    the threaded build's glue and snippets when dist/threads/ holds them (the
//                    build a cross-origin isolated page runs, www/js/threads.js; built first by
//                    scripts/lib.sh), else the plain glue. Not the wasm: start-wasm.js fetches
//                    the one the page runs;
//   rel="css"        a stylesheet, named by its hash, linked with its integrity;
//   rel="copy-file"  a file, into data-target-path (dist/ itself without one);
//   rel="copy-dir"   a directory, into data-target-path.
// Paths in href are relative to www/. Written here rather than with Trunk: these four rules are
// all the page needs, and Trunk took about 11 minutes to install from crates.io on a bare
// machine (docs/benchmarks.md, "The test command").
//
//   node scripts/assemble-page.mjs BINDGEN_DIR [DIST]
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, extname, join, sep } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
const WWW = join(ROOT, 'www');
const CRATE = 'transformer_viz';
// Links are copied as the files they point to (www/js/models.json is one, to the crate's model
// list): dist/ is served and copied elsewhere whole, where a link would point nowhere.
const COPY = { recursive: true, dereference: true };

/** The attributes of one `<link ...>` tag, by name. */
export function attributes(tag) {
  const found = {};
  for (const [, name, value] of tag.matchAll(/([\w-]+)(?:="([^"]*)")?/g)) found[name] = value ?? '';
  return found;
}

/** The first 16 hex digits of the bytes' SHA-256: the part of a built file's name that changes with it. */
function hashOf(bytes) {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/** Copies `bytes` into dist as `stem-HASH.ext`; returns the name. */
function writeHashed(dist, stem, ext, bytes) {
  const name = `${stem}-${hashOf(bytes)}${ext}`;
  writeFileSync(join(dist, name), bytes);
  return name;
}

/** The built page's text for www/index.html's `html`; copies what its data-build lines name into dist. */
export function assemble(html, bindgenDir, dist) {
  let started = false;
  const lines = html.split('\n').flatMap((line) => {
    const tag = line.match(/<link data-build [^>]*>/)?.[0];
    if (!tag) return [line];
    const { rel, href, 'data-target-path': target = '' } = attributes(tag);
    const indent = line.match(/^\s*/)[0];
    switch (rel) {
      case 'wasm': {
        const glue = writeHashed(dist, 'transformer-viz', '.js', readFileSync(join(bindgenDir, `${CRATE}.js`)));
        const wasm = writeHashed(dist, 'transformer-viz', '_bg.wasm', readFileSync(join(bindgenDir, `${CRATE}_bg.wasm`)));
        if (existsSync(join(bindgenDir, 'snippets'))) cpSync(join(bindgenDir, 'snippets'), join(dist, 'snippets'), COPY);
        started = true;
        const preloads = existsSync(join(dist, 'threads', `${CRATE}.js`)) ? threadedModules(dist) : [`./${glue}`];
        return [
          `${indent}<script type="module" async src="./start-wasm.js" data-glue="./${glue}" data-wasm="./${wasm}"></script>`,
          ...preloads.map((href) => `${indent}<link rel="modulepreload" href="${href}">`),
        ];
      }
      case 'css': {
        const bytes = readFileSync(join(WWW, href));
        const name = writeHashed(dist, basename(href, extname(href)), extname(href), bytes);
        const integrity = `sha384-${createHash('sha384').update(bytes).digest('base64')}`;
        return [`${indent}<link rel="stylesheet" href="./${name}" integrity="${integrity}">`];
      }
      case 'copy-file': {
        mkdirSync(join(dist, target), { recursive: true });
        cpSync(join(WWW, href), join(dist, target, basename(href)), COPY);
        return [];
      }
      case 'copy-dir': {
        if (!target) throw new Error(`${tag}: a copy-dir needs data-target-path`);
        cpSync(join(WWW, href), join(dist, target), COPY);
        return [];
      }
      default:
        throw new Error(`${tag}: unknown rel "${rel}" (wasm, css, copy-file, copy-dir)`);
    }
  });
  if (!started) throw new Error('www/index.html has no <link data-build rel="wasm"> line');
  return lines.join('\n');
}

/** The threaded build's glue and the snippets it imports (dist/threads/), as the page's paths. */
function threadedModules(dist) {
  const snippets = join(dist, 'threads', 'snippets');
  const found = existsSync(snippets)
    ? readdirSync(snippets, { recursive: true }).filter((f) => f.endsWith('.js')).sort().map((f) => `./threads/snippets/${f.split(sep).join('/')}`)
    : [];
  return [`./threads/${CRATE}.js`, ...found];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [bindgenDir, dist = join(ROOT, 'dist')] = process.argv.slice(2);
  if (!bindgenDir) {
    console.error('usage: node scripts/assemble-page.mjs BINDGEN_DIR [DIST]');
    process.exit(2);
  }
  mkdirSync(dist, { recursive: true });
  writeFileSync(join(dist, 'index.html'), assemble(readFileSync(join(WWW, 'index.html'), 'utf8'), bindgenDir, dist));
}
