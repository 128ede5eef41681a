// The page's window for its browser tests and benchmarks (tests/e2e, scripts/bench-*.mjs):
// `window.__tviz`, what the page has done (passes, loads, the GPU's state, timings), and a
// few `window.__tviz<Name>` functions they call. Only this module touches `window` for them:
// the others publish through its functions.

/** What the tests read as `window.__tviz`. */
export const testHook = {
  ready: null, // main.js: the promise of the first view
  renders: 0, // passes (and refused texts) shown
  latencies: [], // input to drawn, per typed pass (ms)
  settledLatencies: [], // input to every chart drawn (ms)
  passes: [], // each recomputed pass's own time (ms)
  backend: null, // the status line's backend words
  cpuThreads: 'pending', // cpu-threads.js: pending, off, starting, ready or failed
  gpuPasses: 0,
  gpuPassText: null, // the text of the last GPU pass installed
  gpuReadback: { restReads: 0, valuesLeft: 0, stepsRead: null, waitingCharts: [] },
  trainingSpeeds: [], // training.js: tokens a second, each chunk of steps (the benchmark's)
  trainingEvaluations: [], // training.js: { step, seconds, previous, induction, copy } each evaluation
  trainingStepsHeld: 0, // training.js: the worker's steps that waited for a keystroke's charts
};
window.__tviz = testHook;

/** Sets fields of `window.__tviz`. */
export function publish(fields) {
  Object.assign(testHook, fields);
}

/** Sets fields of `window.__tviz.gpuReadback` (gpu-readback.js, pass.js). */
export function publishReadback(fields) {
  Object.assign(testHook.gpuReadback, fields);
}

/** Adds one to the count `window.__tviz[key]` (0 before the first). */
export function count(key) {
  testHook[key] = (testHook[key] ?? 0) + 1;
}

/** Appends `value` to the list `window.__tviz[key]`. */
export function record(key, value) {
  testHook[key].push(value);
}

/** Publishes `value` as `window.__tviz<name>`: a function the tests call (`Flush`,
 * `Settled`, `UrlWritten`, ...) or an object they read (`Drawn`, `Generation`). */
export function exposeForTests(name, value) {
  window[`__tviz${name}`] = value;
}
