// Starts the WebAssembly module from a file rather than an inline script: the page's
// Content-Security-Policy allows no inline script. scripts/assemble-page.mjs puts
// <script type="module" async src="start-wasm.js" data-glue="…" data-wasm="…"> in the built
// page, with the hashed names of wasm-bindgen's glue and of the wasm file: it runs as soon as it
// and js/threads.js have arrived, before the page's other modules.
//
// A cross-origin isolated page runs the threaded build instead (threads/, js/threads.js).
import { threadPlan } from './js/threads.js';

const { glue, wasm } = document.querySelector('script[data-glue]').dataset;
const plan = threadPlan(location.search, navigator.hardwareConcurrency, self.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function');
let bindings = null;
let exports = null;
if (plan.threaded) {
  // The wasm's download starts before its glue is imported, not after.
  const download = fetch(new URL('threads/transformer_viz_bg.wasm', import.meta.url));
  try {
    bindings = await import('./threads/transformer_viz.js');
    exports = await bindings.default({ module_or_path: download });
  } catch (err) {
    Object.assign(plan, { threaded: false, threads: 1, why: `the threaded build did not start (${err?.message ?? err})` });
    bindings = null;
  }
}
if (!bindings) {
  bindings = await import(glue);
  exports = await bindings.default({ module_or_path: wasm }); // the module's exports, memory among them
}
// The threads, started by js/cpu-threads.js after the first view: resolves to how many
// compute a pass (1 if they could not start, with the reason in `why`).
plan.start = () => bindings.start_threads(plan.threads).catch((err) => {
  Object.assign(plan, { threads: 1, why: `the threads did not start (${err?.message ?? err})` });
  return 1;
});
window.wasmThreads = plan;
window.wasmBindings = bindings; // js/loading.js waits for these two
dispatchEvent(new CustomEvent('wasm-started', { detail: { wasm: exports } }));
