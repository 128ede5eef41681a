// Downloads a file with progress, and waits for the WebAssembly module that Trunk starts.

/**
 * The bytes at `url`, which must be exactly `expected` bytes long (the model registry's size:
 * a server's Content-Length may count compressed bytes). `onProgress(bytesSoFar)` follows the
 * download; `signal` cancels it; `store: false` keeps the response out of the browser's HTTP
 * cache (when the page keeps it in the Cache API, a second copy would only take disk space).
 */
export async function fetchBytes(url, { expected, onProgress, signal, store = true } = {}) {
  const res = await fetch(url, { signal, cache: store ? 'default' : 'no-store' });
  if (!res.ok) throw new Error(`could not load ${url} (HTTP ${res.status}); run the README's serve command, which fetches the model files`);
  const out = new Uint8Array(expected);
  if (!res.body) {
    const whole = new Uint8Array(await res.arrayBuffer());
    if (whole.length !== expected) throw new Error(`${url} has ${whole.length} bytes, not the ${expected} this page expects`);
    onProgress?.(expected);
    return whole;
  }
  const reader = res.body.getReader();
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (got + value.length > expected) {
      await reader.cancel();
      throw new Error(`${url} is longer than the ${expected} bytes this page expects`);
    }
    out.set(value, got);
    got += value.length;
    onProgress?.(got);
  }
  if (got !== expected) throw new Error(`${url} arrived incomplete (${got} of ${expected} bytes)`);
  return out;
}

export function wasmBindings() {
  if (window.wasmBindings) return Promise.resolve(window.wasmBindings);
  return new Promise((resolve, reject) => {
    addEventListener('TrunkApplicationStarted', () => resolve(window.wasmBindings), { once: true });
    setTimeout(() => reject(new Error('the WebAssembly module did not start; this browser may not support WebAssembly')), 30000);
  });
}
