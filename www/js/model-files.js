// Where a model's files come from: the browser's Cache API when an earlier visit stored them
// (checked against the registry's sizes: a copy of another size is discarded and downloaded
// again), else the server, with progress, then stored for the next visit. Pages served over
// plain http from another machine have no Cache API (`caches` needs a secure context): they
// just download.
import { filesOf, downloadBytes } from './models.js';
import { fetchBytes } from './loading.js';

export const CACHE_NAME = 'transformer-viz-models-v1';

function urlOf(file) {
  return new URL(file.path, document.baseURI).href;
}

/** Whether this page has the Cache API (a secure context: https, or http on this machine). */
export function cacheAvailable() {
  return typeof caches !== 'undefined' && window.isSecureContext;
}

/** The page's model cache, or null without the Cache API (or when the browser refuses it). */
async function openCache() {
  if (!cacheAvailable()) return null;
  try {
    return await caches.open(CACHE_NAME);
  } catch {
    return null; // e.g. storage blocked for this site
  }
}

/** The cached copy of `file`: `{ blob }` with a Blob when it has the registry's size, `{ stale:
 * true }` when the copy has another size, `{}` when there is none. */
async function cachedBlob(cache, file) {
  const res = await cache.match(urlOf(file));
  if (!res) return {};
  const blob = await res.blob(); // the cache's own copy: its size costs no read
  return blob.size === file.bytes ? { blob } : { stale: true };
}

/** Whether every file of `model` is in the cache, whole (the page then skips asking). */
export async function isCached(model) {
  const cache = await openCache();
  if (!cache) return false;
  for (const [, file] of filesOf(model)) if (!(await cachedBlob(cache, file)).blob) return false;
  return true;
}

// A note in localStorage for each model whose files were stored in the Cache API. Without it
// the cache is not asked before the download starts: a browser's cache storage is slow to open
// the first time in a profile (docs/benchmarks.md, "The first view"), and on a first visit it
// holds nothing.
// Clearing the site's data clears both; a note left over from evicted files only costs the
// question it would have cost anyway.
function noteOf(model) {
  return `${CACHE_NAME}:${model.name}`;
}

function mayBeCached(model) {
  try {
    return localStorage.getItem(noteOf(model)) !== null;
  } catch {
    return true; // no localStorage here: ask the cache every time
  }
}

function noteStored(model, stored) {
  try {
    if (stored) localStorage.setItem(noteOf(model), '1');
    else localStorage.removeItem(noteOf(model));
  } catch {
    // no localStorage here: the cache is asked every time
  }
}

/**
 * The files of `model`, fetched side by side: `{ config, tokenizer, weights, source,
 * discarded, stored }`, with `config` and `tokenizer` as text ("" for a file the model does
 * not have) and `weights` as bytes. `source` is 'cache' when every file came from the Cache
 * API, else 'network'; `discarded` names cached files whose size was wrong. Downloads are
 * written to the cache in the background, so the model is built without waiting for the
 * disk: `stored` is a promise of whether every downloaded file was kept (false without a Cache
 * API, or when the browser refused: quota). `onProgress(done, total)` counts bytes, cached
 * ones included.
 */
export async function loadModelFiles(model, { onProgress, signal } = {}) {
  const opening = openCache(); // for the downloads' copies; asked first only if a note says so
  const cache = mayBeCached(model) ? await opening : null;
  const total = downloadBytes(model);
  const arrived = new Map(); // role -> bytes so far
  const report = () => onProgress?.(Math.min([...arrived.values()].reduce((a, b) => a + b, 0), total), total);
  const discarded = [];
  const writes = [];
  let downloaded = false;
  const results = await Promise.all(filesOf(model).map(async ([role, file]) => {
    const url = urlOf(file);
    if (cache) {
      const { blob, stale } = await cachedBlob(cache, file);
      if (blob) {
        const bytes = new Uint8Array(await blob.arrayBuffer());
        arrived.set(role, file.bytes);
        report();
        return [role, bytes];
      }
      // An interrupted or older copy goes (asked only when there is one: each question to the
      // cache is a round trip before the download starts).
      if (stale && await cache.delete(url)) discarded.push(file.path);
    }
    downloaded = true;
    const bytes = await fetchBytes(url, { signal, store: !cacheAvailable(), onProgress: (n) => { arrived.set(role, n); report(); } });
    arrived.set(role, file.bytes);
    report();
    // Only a file of the registry's size is kept; any other (a damaged file on the server)
    // still goes to the engine, which says in its own words what is wrong with it.
    writes.push(bytes.length === file.bytes ? whenIdle().then(() => opening).then((c) => (c ? store(c, url, bytes) : false)) : Promise.resolve(false));
    return [role, bytes];
  }));
  signal?.throwIfAborted();
  const out = { config: '', tokenizer: '', weights: null, source: downloaded ? 'network' : 'cache', discarded };
  for (const [role, bytes] of results) out[role] = role === 'weights' ? bytes : new TextDecoder().decode(bytes);
  out.stored = Promise.all(writes).then((kept) => {
    const stored = kept.every(Boolean);
    if (downloaded) noteStored(model, stored);
    return stored;
  });
  return out;
}

/** Removes every cached file of `model`: the engine refused them, so the next load downloads
 * them again instead of reading the same broken copy forever. */
export async function dropCached(model) {
  noteStored(model, false);
  const cache = await openCache();
  if (!cache) return;
  for (const [, file] of filesOf(model)) await cache.delete(urlOf(file));
}

// A download is written to the cache once the page is idle: the Response copies its bytes
// (megabytes of weights) on the page's thread, which would otherwise come between the last
// file's arrival and the model being built and shown.
function whenIdle() {
  return new Promise((resolve) => {
    if (typeof requestIdleCallback === 'function') requestIdleCallback(() => resolve(), { timeout: 2000 });
    else setTimeout(resolve, 0);
  });
}

async function store(cache, url, bytes) {
  try {
    // The Response copies the bytes, so the caller may hand `bytes` on (to a worker).
    await cache.put(url, new Response(bytes, { headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.length) } }));
    return true;
  } catch {
    return false; // over the site's storage quota: the page works, the next visit downloads again
  }
}
