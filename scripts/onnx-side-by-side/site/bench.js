// MiniLM-L6 as an f32 ONNX graph on ONNX Runtime Web (WebAssembly, SIMD; ?threads=n), untraced:
// the library a web developer would use instead of this project. bench.mjs reads
// window.results: the median and range of `runs` passes at each token count.
import * as ort from './ort/ort.wasm.min.mjs';

const q = new URLSearchParams(location.search);
const threads = Number(q.get('threads') ?? 1);
const sizes = (q.get('tokens') ?? '32,128').split(',').map(Number);
const runs = Number(q.get('runs') ?? 10);
const warmup = Number(q.get('warmup') ?? 3); // passes not measured at each size, as the page's in bench.mjs

ort.env.wasm.wasmPaths = new URL('./ort/', location.href).href;
ort.env.wasm.numThreads = threads;

async function main() {
  const session = await ort.InferenceSession.create('minilm-l6.onnx', { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const out = {};
  for (const tokens of sizes) {
    // [CLS], ordinary word pieces, [SEP]: the ids do not change the arithmetic.
    const ids = BigInt64Array.from({ length: tokens }, (_, i) => BigInt(i === 0 ? 101 : i === tokens - 1 ? 102 : 1996 + (i % 500)));
    const feeds = { input_ids: new ort.Tensor('int64', ids, [1, tokens]) };
    for (let i = 0; i < warmup; i += 1) await session.run(feeds); // warm-up
    const times = [];
    for (let i = 0; i < runs; i += 1) {
      const start = performance.now();
      const result = await session.run(feeds);
      times.push(performance.now() - start);
      if (result.last_hidden_state.dims[1] !== tokens) throw new Error('wrong output shape');
    }
    times.sort((a, b) => a - b);
    out[tokens] = { median: times[Math.floor(times.length / 2)], min: times[0], max: times.at(-1), times };
  }
  window.results = { threads, crossOriginIsolated, out };
  document.getElementById('status').textContent = JSON.stringify(window.results);
}
main().catch((err) => { window.results = { error: String(err) }; });
