// Downloads a file with progress, and waits for the WebAssembly module that www/start-wasm.js starts.

// Files this small arrive whole: no progress to show (a config, a tokenizer).
const STREAM_ABOVE_BYTES = 1 << 20;

/**
 * The bytes at `url`; a large file is read as it arrives, checked against the length the
 * server announced (a shorter body is an interrupted download). `onProgress(bytesSoFar)`
 * follows the download; `signal` cancels it; `store: false` keeps the response out of the
 * browser's HTTP cache (when the page keeps it in the Cache API, a second copy would only take
 * disk space).
 */
export async function fetchBytes(url, { onProgress, signal, store = true } = {}) {
  const res = await fetch(url, { signal, cache: store ? 'default' : 'no-store' });
  if (!res.ok) throw new Error(`could not load ${url} (HTTP ${res.status}); run the README's serve command, which fetches the model files`);
  const total = Number(res.headers.get('content-length')) || 0;
  if (!res.body || total <= STREAM_ABOVE_BYTES) {
    const whole = new Uint8Array(await res.arrayBuffer());
    onProgress?.(whole.length);
    return whole;
  }
  const out = new Uint8Array(total);
  const reader = res.body.getReader();
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (got + value.length > total) {
      await reader.cancel();
      throw new Error(`${url} is longer than the server said (${total} bytes)`);
    }
    out.set(value, got);
    got += value.length;
    onProgress?.(got);
  }
  if (got !== total) throw new Error(`${url} arrived incomplete (${got} of ${total} bytes)`);
  return out;
}

export function wasmBindings() {
  if (window.wasmBindings) return Promise.resolve(window.wasmBindings);
  return new Promise((resolve, reject) => {
    addEventListener('wasm-started', () => resolve(window.wasmBindings), { once: true });
    setTimeout(() => reject(new Error('the WebAssembly module did not start; this browser may not support WebAssembly')), 30000);
  });
}
