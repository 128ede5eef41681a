#!/usr/bin/env node
// Dependencies go one way: a module may import from its own layer or the layers below it,
// never from a layer above, and no modules import each other in a circle. Checks
//   --js    the page's modules (www/js/*.js): import cycles, the layers of JS_LAYERS below, the
//           names each import asks for (the module must export them), and that only
//           testing-hook.js writes the browser tests' `window.__tviz`; and that no script
//           (scripts/**/*.mjs) imports from tests/;
//   --rust  the crate (src/): each file's `use crate::...`, `crate::X::` paths and `super::`
//           paths, by top-level module, against RUST_LAYERS below; and, inside each
//           directory, cycles among its files (a mod.rs, the directory's face, is left out).
// Both by default. Prints every violation (file and import) and exits 1 if there is any, 0
// otherwise. `--root DIR` checks another tree (the tests run it on small fixtures).
//   node scripts/check-layers.mjs [--js] [--rust] [--root DIR]
// Node's standard library only.
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { join, relative, dirname, resolve, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The page's layers, lowest first: a module may import from its own layer or one below. */
export const JS_LAYERS = [
  ['foundations', ['dom.js', 'messages.js', 'math.js', 'threads.js', 'url-state.js', 'models.js', 'loading.js', 'model-files.js', 'testing-hook.js', 'lesson-format.js', 'labels.js', 'right-of-way.js']],
  ['state', ['state.js', 'session.js']],
  ['engine', ['applicable.js', 'backend-status.js', 'cpu-threads.js', 'gpu-backend.js', 'gpu-readback.js']],
  ['charts', ['charts.js', 'hover.js', 'export.js']],
  ['sections', ['tokens.js', 'attention.js', 'head-finder.js', 'query.js', 'compare.js', 'position.js', 'norm.js', 'residual.js',
    'rotary.js', 'stepper.js', 'prediction.js', 'translation.js', 'presenter.js', 'twin.js', 'ablation.js', 'part-tokens.js', 'patch-sweep.js', 'lesson-answers.js']],
  ['flow', ['pass.js', 'model-picker.js']],
  ['lessons', ['lessons.js', 'training.js']],
  ['main', ['main.js']],
];

/** The crate's layers, lowest first, by top-level module (src/NAME.rs or src/NAME/). */
export const RUST_LAYERS = [
  ['error'],
  ['tensor'],
  ['tokenize'],
  ['model'],
  ['formats'],
  ['gpu'],
  ['trace'],
  ['transformer'],
  ['checkpoints'],
  ['analysis'],
  ['explain'],
  ['draw'],
  ['train'],
  ['cli'],
  ['web'],
];

// ---------------------------------------------------------------- shared

/** Cycles of a directed graph (Map node -> Set of nodes): one per strongly connected
 * component with more than one node (or a node importing itself), as a path a -> b -> ... -> a. */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const on = new Set();
  const idx = new Map();
  const low = new Map();
  const found = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v), idx.get(w)));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.has(v)) found.push({ path: pathThrough(graph, new Set(component)), members: component.sort() });
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return found;
}

/** One closed path through every node it can reach of a strongly connected component, starting
 * from its first node in sorted order (breadth-first back to the start). */
function pathThrough(graph, component) {
  const start = [...component].sort()[0];
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const w of [...(graph.get(v) ?? [])].sort()) {
      if (!component.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = previous.get(u)) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

function layerIndex(layers) {
  const of = new Map();
  layers.forEach(([name, members], i) => { for (const m of members) of.set(m, { i, name }); });
  return of;
}

// ---------------------------------------------------------------- JavaScript

/** JavaScript source without its comments (roughly: a `//` inside a string is taken for one). */
function stripJsComments(source) {
  return source.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** The imports of a module's source: `{ from, names, line }`, names null when not checkable
 * (a namespace, a default or a side-effect import, a re-export of everything). */
export function jsImports(source) {
  const code = stripJsComments(source);
  const found = [];
  const lineOf = (at) => code.slice(0, at).split('\n').length;
  const staticImport = /\b(import|export)\s*([\w$*\s{},]*?)\s*from\s*(['"])([^'"]+)\3/g;
  for (const m of code.matchAll(staticImport)) {
    let names = null;
    const clause = m[2].trim();
    const braces = clause.match(/^(?:[\w$]+\s*,\s*)?\{([^}]*)\}$/);
    if (braces) names = braces[1].split(',').map((n) => n.trim().split(/\s+as\s+/)[0]).filter(Boolean);
    found.push({ from: m[4], names, line: lineOf(m.index) });
  }
  for (const m of code.matchAll(/\bimport\s*(['"])([^'"]+)\1/g)) found.push({ from: m[2], names: null, line: lineOf(m.index) });
  for (const m of code.matchAll(/\bimport\s*\(\s*(['"])([^'"]+)\1\s*\)/g)) found.push({ from: m[2], names: null, line: lineOf(m.index), dynamic: true });
  return found;
}

/** The names a module exports (null when it re-exports everything of another). */
export function jsExports(source) {
  if (/\bexport\s*\*\s*from\b/.test(source)) return null;
  const names = new Set();
  for (const m of source.matchAll(/\bexport\s+(?:async\s+)?(?:function\s*\*?|class|const|let|var)\s+([\w$]+)/g)) names.add(m[1]);
  for (const m of source.matchAll(/\bexport\s*\{([^}]*)\}/g)) {
    for (const part of m[1].split(',')) {
      const name = part.trim().split(/\s+as\s+/).at(-1);
      if (name) names.add(name);
    }
  }
  if (/\bexport\s+default\b/.test(source)) names.add('default');
  return names;
}

/** Every file under `dir` (none when it does not exist) whose name passes `keep`. */
function listFiles(dir, keep) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : listFiles(path, keep);
    return keep(e.name) ? [path] : [];
  });
}

export function checkJs(root) {
  const dir = join(root, 'www/js');
  const problems = [];
  if (!existsSync(dir)) return [`www/js: no such directory under ${root}`];
  const files = readdirSync(dir).filter((f) => f.endsWith('.js')).sort();
  const layerOf = layerIndex(JS_LAYERS);
  const graph = new Map(files.map((f) => [f, new Set()]));
  const sources = new Map(files.map((f) => [f, readFileSync(join(dir, f), 'utf8')]));
  for (const file of files) {
    const where = `www/js/${file}`;
    if (!layerOf.has(file)) problems.push(`${where}: not in any layer (place it in JS_LAYERS, scripts/check-layers.mjs)`);
    const source = sources.get(file);
    if (file !== 'testing-hook.js' && /\bwindow\s*(?:\.\s*__tviz|\[\s*['"`]__tviz)/.test(stripJsComments(source))) {
      problems.push(`${where}: writes window.__tviz itself; only testing-hook.js does (publish through it)`);
    }
    for (const imp of jsImports(source)) {
      if (!imp.from.startsWith('.')) continue; // the page imports nothing from outside
      const target = relative(dir, resolve(dir, imp.from));
      const at = `${where}:${imp.line} imports '${imp.from}'`;
      if (target.endsWith('.json')) {
        if (!existsSync(join(dir, target))) problems.push(`${at}: no such file`);
        continue; // data, below every module
      }
      if (target.includes('/') || target.startsWith('..')) {
        problems.push(`${at}: a page module imports only modules beside it in www/js`);
        continue;
      }
      if (!sources.has(target)) {
        problems.push(`${at}: no such module`);
        continue;
      }
      graph.get(file).add(target);
      const [from, to] = [layerOf.get(file), layerOf.get(target)];
      if (from && to && to.i > from.i) {
        problems.push(`${at}: layer '${from.name}' may not import from layer '${to.name}' above it`);
      }
      if (imp.names) {
        const exported = jsExports(sources.get(target));
        const missing = exported && imp.names.filter((n) => !exported.has(n));
        if (missing?.length) problems.push(`${at}: it exports no ${missing.join(', ')}`);
      }
    }
  }
  // Scripts (benchmarks, tools) may share code with each other, never import the tests.
  for (const file of listFiles(join(root, 'scripts'), (f) => /\.m?js$/.test(f))) {
    for (const imp of jsImports(readFileSync(file, 'utf8'))) {
      if (!imp.from.startsWith('.')) continue;
      const target = relative(root, resolve(dirname(file), imp.from));
      if (target === 'tests' || target.startsWith('tests/')) {
        problems.push(`${relative(root, file)}:${imp.line} imports '${imp.from}': a script imports no test (move what it shares into scripts/)`);
      }
    }
  }
  for (const { path, members } of cycles(graph)) {
    const among = members.length > path.length - 1 ? ` (one of the cycles among ${members.join(', ')})` : '';
    problems.push(`www/js: import cycle ${path.join(' -> ')}${among}`);
  }
  return problems;
}

// ---------------------------------------------------------------- Rust

/** Rust source without comments, strings and character literals (same length, same lines). */
export function stripRust(source) {
  let out = '';
  let i = 0;
  const blank = (text) => text.replace(/[^\n]/g, ' ');
  while (i < source.length) {
    const rest = source.slice(i, i + 3);
    if (rest.startsWith('//')) {
      const end = source.indexOf('\n', i);
      const stop = end < 0 ? source.length : end;
      out += blank(source.slice(i, stop));
      i = stop;
    } else if (rest.startsWith('/*')) {
      let depth = 0;
      let j = i;
      do {
        if (source.startsWith('/*', j)) { depth += 1; j += 2; } else if (source.startsWith('*/', j)) { depth -= 1; j += 2; } else j += 1;
      } while (depth > 0 && j < source.length);
      out += blank(source.slice(i, j));
      i = j;
    } else if (/^(b?r#*")/.test(source.slice(i, i + 20)) && !/[\w]/.test(source[i - 1] ?? ' ')) {
      const open = source.slice(i, i + 20).match(/^(b?r(#*)")/);
      const close = `"${open[2]}`;
      const end = source.indexOf(close, i + open[1].length);
      const stop = end < 0 ? source.length : end + close.length;
      out += blank(source.slice(i, stop));
      i = stop;
    } else if (source[i] === '"') {
      let j = i + 1;
      while (j < source.length && source[j] !== '"') j += source[j] === '\\' ? 2 : 1;
      out += blank(source.slice(i, j + 1));
      i = j + 1;
    } else if (source[i] === '\'') {
      const char = source.slice(i).match(/^'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'/);
      if (char) {
        out += blank(char[0]);
        i += char[0].length;
      } else {
        out += source[i];
        i += 1;
      }
    } else {
      out += source[i];
      i += 1;
    }
  }
  return out;
}

/** The paths a `use` tree names, each as its list of segments (`self` folded into its parent). */
export function expandUseTree(tree) {
  const text = tree.replace(/\s+/g, '');
  const parse = (s, prefix) => {
    const out = [];
    let depth = 0;
    let start = 0;
    const parts = [];
    for (let i = 0; i <= s.length; i += 1) {
      if (i === s.length || (s[i] === ',' && depth === 0)) {
        parts.push(s.slice(start, i));
        start = i + 1;
      } else if (s[i] === '{') depth += 1;
      else if (s[i] === '}') depth -= 1;
    }
    for (const part of parts.filter(Boolean)) {
      const brace = part.indexOf('{');
      if (brace >= 0) {
        const head = part.slice(0, brace).replace(/::$/, '');
        const inner = part.slice(brace + 1, part.lastIndexOf('}'));
        out.push(...parse(inner, [...prefix, ...(head ? head.split('::') : [])]));
      } else {
        const segments = part.replace(/\bas[A-Za-z_]\w*$/, '').split(/as(?=[A-Za-z_]\w*$)/)[0].split('::');
        const path = [...prefix, ...segments].filter((x) => x !== '');
        if (path.at(-1) === 'self') path.pop();
        out.push(path);
      }
    }
    return out;
  };
  return parse(text.replace(/(\w)as([A-Za-z_]\w*)(?=,|}|$)/g, '$1'), []);
}

/** The crate's files: `{ rel: 'model/attention.rs', module: ['model', 'attention'] }`. */
function rustFiles(src) {
  const files = [];
  const walk = (dir, module) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (!(module.length === 0 && name === 'bin')) walk(path, [...module, name]);
      } else if (name.endsWith('.rs')) {
        const rel = relative(src, path);
        if (rel === 'main.rs') continue;
        const mod = name === 'mod.rs' || (module.length === 0 && name === 'lib.rs') ? module : [...module, name.slice(0, -3)];
        files.push({ rel, module: mod, path });
      }
    }
  };
  walk(src, []);
  return files;
}

export function checkRust(root) {
  const src = join(root, 'src');
  if (!existsSync(src)) return [`src: no such directory under ${root}`];
  const problems = [];
  const files = rustFiles(src);
  const byModule = new Map(files.map((f) => [f.module.join('::'), f]));
  const stripped = new Map(files.map((f) => [f.rel, stripRust(readFileSync(f.path, 'utf8'))]));

  // Each module's `pub use` re-exports: name -> the path it stands for.
  const reexports = new Map();
  for (const f of files) {
    const names = new Map();
    for (const m of stripped.get(f.rel).matchAll(/\bpub(?:\([^)]*\))?\s+use\s+([^;]+);/g)) {
      for (const path of expandUseTree(m[1])) {
        const alias = m[1].match(new RegExp(`\\b${path.at(-1)}\\s+as\\s+(\\w+)`));
        names.set(alias ? alias[1] : path.at(-1), absolute(path, f.module, []));
      }
    }
    reexports.set(f.module.join('::'), names);
  }

  /** `path` (from a file of module `module`, inside inline modules `inline`) from the crate's root. */
  function absolute(path, module, inline) {
    let base = [...module, ...inline];
    let rest = [...path];
    if (rest[0] === 'crate') {
      base = [];
      rest = rest.slice(1);
    } else if (rest[0] === 'self') {
      rest = rest.slice(1);
    } else if (rest[0] === 'super') {
      while (rest[0] === 'super') {
        base = base.slice(0, -1);
        rest = rest.slice(1);
      }
    } else if (byModule.has([...base, rest[0]].join('::'))) {
      // a child module named without `self::` (`use forward::X;` in model/mod.rs)
    } else {
      return null; // another crate, std, or a name in scope
    }
    return [...base, ...rest];
  }

  /** The file that defines what `path` (from the crate's root) names, following re-exports. */
  function fileOf(path, seen = 0) {
    let module = [];
    let i = 0;
    while (i < path.length && byModule.has([...module, path[i]].join('::'))) {
      module = [...module, path[i]];
      i += 1;
    }
    if (i < path.length && seen < 8) {
      const target = reexports.get(module.join('::'))?.get(path[i]);
      if (target && target.join('::') !== [...module, path[i]].join('::')) return fileOf([...target, ...path.slice(i + 1)], seen + 1);
    }
    return byModule.get(module.join('::')) ?? null;
  }

  const layerOf = new Map();
  RUST_LAYERS.forEach((members, i) => { for (const m of members) layerOf.set(m, { i, name: members.join(', ') }); });
  const top = (f) => f.module[0] ?? null; // null: the crate's root (lib.rs)

  const edges = []; // { from: file, to: file, what, line }
  for (const f of files) {
    const code = stripped.get(f.rel);
    // Inline modules (`mod tests { ... }`): a `super::` inside one is the file's own module.
    const inlineSpans = [];
    for (const m of code.matchAll(/\bmod\s+(\w+)\s*\{/g)) {
      let depth = 0;
      let j = m.index + m[0].length - 1;
      for (; j < code.length; j += 1) {
        if (code[j] === '{') depth += 1;
        else if (code[j] === '}' && --depth === 0) break;
      }
      inlineSpans.push({ name: m[1], start: m.index + m[0].length, end: j });
    }
    const inlineAt = (at) => inlineSpans.filter((s) => s.start <= at && at < s.end).sort((a, b) => a.start - b.start).map((s) => s.name);
    const lineOf = (at) => code.slice(0, at).split('\n').length;
    const found = [];
    const uses = /\buse\s+([^;]+);/g;
    for (const m of code.matchAll(uses)) {
      for (const path of expandUseTree(m[1])) found.push({ path, at: m.index, text: m[1].replace(/\s+/g, ' ').trim() });
    }
    const withoutUses = code.replace(uses, (m) => m.replace(/[^\n]/g, ' '));
    for (const m of withoutUses.matchAll(/(?<![\w$:])((?:crate|self|super)(?:\s*::\s*(?:super|[A-Za-z_]\w*))+)/g)) {
      found.push({ path: m[1].replace(/\s+/g, '').split('::'), at: m.index, text: m[1].replace(/\s+/g, '') });
    }
    for (const { path, at, text } of found) {
      const abs = absolute(path, f.module, inlineAt(at));
      if (!abs || abs.length === 0) continue;
      const target = fileOf(abs);
      if (!target || target === f) continue;
      edges.push({ from: f, to: target, what: text, line: lineOf(at) });
    }
  }

  // Layers, by top-level module.
  const reported = new Set();
  for (const e of edges) {
    const [a, b] = [top(e.from), top(e.to)];
    if (a === null || b === null || a === b) continue;
    const [from, to] = [layerOf.get(a), layerOf.get(b)];
    const key = `${e.from.rel}|${e.what}`;
    if (reported.has(key)) continue;
    if (!from) {
      reported.add(key);
      problems.push(`src/${e.from.rel}: module '${a}' is in no layer (place it in RUST_LAYERS, scripts/check-layers.mjs)`);
    } else if (to && to.i > from.i) {
      reported.add(key);
      problems.push(`src/${e.from.rel}:${e.line} uses ${e.what}: '${a}' (layer ${from.i + 1}) may not import from '${b}' (layer ${to.i + 1}, above it)`);
    }
  }

  // Cycles among the files of each directory (a mod.rs left out: it declares and re-exports its
  // directory's files). Top-level files of src/ count as one directory too.
  const dirOf = (f) => dirname(f.rel);
  const graphs = new Map();
  for (const e of edges) {
    if (dirOf(e.from) !== dirOf(e.to)) continue;
    if ([e.from, e.to].some((f) => basename(f.rel) === 'mod.rs' || f.rel === 'lib.rs')) continue;
    const g = graphs.get(dirOf(e.from)) ?? new Map();
    graphs.set(dirOf(e.from), g);
    if (!g.has(e.from.rel)) g.set(e.from.rel, new Set());
    if (!g.has(e.to.rel)) g.set(e.to.rel, new Set());
    g.get(e.from.rel).add(e.to.rel);
  }
  for (const [dir, g] of [...graphs].sort()) {
    for (const { path: cycle, members } of cycles(g)) {
      const among = members.length > cycle.length - 1 ? `; one of the cycles among ${members.map((f) => basename(f)).join(', ')}` : '';
      const steps = cycle.slice(0, -1).map((file, i) => {
        const e = edges.find((x) => x.from.rel === file && x.to.rel === cycle[i + 1]);
        return `src/${file}:${e.line} uses ${e.what}`;
      });
      problems.push(`src/${dir === '.' ? '' : `${dir}/`}: files import each other in a cycle ${cycle.map((f) => basename(f)).join(' -> ')} (${steps.join('; ')}${among})`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------- command line

function main(argv) {
  let root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  let js = false;
  let rust = false;
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--js') js = true;
    else if (argv[i] === '--rust') rust = true;
    else if (argv[i] === '--root') root = resolve(argv[(i += 1)] ?? '.');
    else if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node scripts/check-layers.mjs [--js] [--rust] [--root DIR]');
      return 0;
    } else {
      console.error(`unknown argument ${argv[i]}; usage: node scripts/check-layers.mjs [--js] [--rust] [--root DIR]`);
      return 2;
    }
  }
  if (!js && !rust) js = rust = true;
  let failed = false;
  for (const [name, run] of [['JavaScript (www/js)', js && checkJs], ['Rust (src)', rust && checkRust]]) {
    if (!run) continue;
    const problems = run(root);
    if (problems.length) {
      failed = true;
      console.log(`${name}: ${problems.length} violation${problems.length === 1 ? '' : 's'}`);
      for (const p of problems) console.log(`  ${p}`);
    } else {
      console.log(`${name}: dependencies go one way`);
    }
  }
  return failed ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
