// The helper thread: a second copy of the model in a Web Worker computes half of every dense
// layer of each pass (team-worker.js, `model::team`), so a pass uses two cores. The halves
// travel through shared memory, which browsers give only to cross-origin isolated pages (the
// README's server sends the two headers); elsewhere, on one core, or with ?threads=1, the
// page computes alone. A model whose registry entry says so (models.js `helperThread`) never
// starts one: the worker would hold a second copy of its weights.
import { $ } from './dom.js';
import { state } from './state.js';
import { session } from './session.js';
import { modelNamed } from './models.js';
import { gpu, renderGpuStatus } from './gpu-backend.js';

// Why the page computes with one thread, in the status line's words (null: two threads).
let oneThreadBecause = 'a helper thread is starting';

export function showBackend() {
  const { viz } = session;
  const backend = gpu.active ? 'GPU (WebGPU)' : viz.backend();
  if ($('backend').textContent !== backend) $('backend').textContent = backend;
  const why = gpu.active || viz.threads() > 1 ? '' : `(one thread: ${oneThreadBecause})`;
  if ($('backend-why').textContent !== why) $('backend-why').textContent = why;
  window.__tviz.backend = backend;
  window.__tviz.threads = viz.threads();
  renderGpuStatus();
}

// The running helper: its worker and the page's model it serves (null: none).
let helper = null;

/** Stops the helper thread (before its model is replaced). */
export function stopHelper() {
  if (!helper) return;
  helper.viz.leave_team();
  helper.worker.terminate();
  helper = null;
  oneThreadBecause = 'a helper thread is starting';
  window.__tviz.helper = 'off';
}

function computeAlone(because) {
  oneThreadBecause = because;
  window.__tviz.helper = 'off';
  showBackend();
}

export function startHelper(configJson, tokenizer, weights) {
  const { viz } = session;
  stopHelper();
  const kept = modelNamed(session.modelName)?.helperThread;
  if (kept) return computeAlone(kept);
  const isolated = window.crossOriginIsolated && typeof SharedArrayBuffer === 'function';
  if (state.threads === 1) return computeAlone('the link asks for threads=1');
  if (!isolated) return computeAlone('the server did not send the cross-origin isolation headers that shared memory needs');
  if ((navigator.hardwareConcurrency ?? 1) < 2) return computeAlone('this device reports one core');
  const glue = document.querySelector('link[rel=modulepreload][href*="transformer-viz"]')?.href;
  const wasm = document.querySelector('link[rel=preload][href$="_bg.wasm"]')?.href;
  if (!glue || !wasm) return computeAlone('the WebAssembly files were not found for a worker');
  let worker;
  try {
    worker = new Worker('team-worker.js', { type: 'module' });
  } catch {
    return computeAlone('this browser could not start a worker');
  }
  window.__tviz.helper = 'starting';
  const buffer = new SharedArrayBuffer(viz.team_buffer_bytes());
  helper = { worker, viz };
  const current = () => helper?.worker === worker; // not replaced by another model's helper
  const stop = () => {
    if (!current()) return;
    viz.leave_team();
    worker.terminate();
    helper = null;
    oneThreadBecause = 'the helper thread stopped answering';
    window.__tviz.helper = 'failed';
    showBackend();
  };
  worker.onmessage = ({ data }) => {
    if (!current()) return;
    if (data.ready) {
      viz.join_team(buffer, 0, worker);
      window.__tviz.helper = 'ready';
      showBackend();
    }
    if (data.memory) window.__tviz.helperMemory = data.memory; // the worker's WebAssembly memory
    if (data.failed) stop();
  };
  worker.onerror = (event) => { event.preventDefault(); stop(); };
  // The worker gets the weights' bytes (the page's model already holds its own copy).
  worker.postMessage({ start: { glue, wasm, model: session.modelName, config: configJson, tokenizer, weights: weights.buffer, buffer } }, [weights.buffer]);
}
