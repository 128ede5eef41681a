// Downloads the model files and waits for the WebAssembly module that Trunk starts.

export async function fetchBytes(url, onProgress) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`could not load ${url} (HTTP ${res.status}); run the README's serve command, which fetches the model files`);
  const total = Number(res.headers.get('content-length')) || 0;
  if (!res.body || !total) return new Uint8Array(await res.arrayBuffer());
  const out = new Uint8Array(total);
  const reader = res.body.getReader();
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (got + value.length > total) throw new Error(`${url} is longer than the server said (${total} bytes)`);
    out.set(value, got);
    got += value.length;
    onProgress?.(got / total);
  }
  if (got !== total) throw new Error(`${url} arrived incomplete (${got} of ${total} bytes)`);
  return out;
}

export async function fetchText(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`could not load ${url} (HTTP ${res.status}); run the README's serve command, which fetches the model files`);
  return res.text();
}

export function wasmBindings() {
  if (window.wasmBindings) return Promise.resolve(window.wasmBindings);
  return new Promise((resolve, reject) => {
    addEventListener('TrunkApplicationStarted', () => resolve(window.wasmBindings), { once: true });
    setTimeout(() => reject(new Error('the WebAssembly module did not start; this browser may not support WebAssembly')), 30000);
  });
}
