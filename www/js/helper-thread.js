// The helper thread: a second copy of the model in a Web Worker computes half of every dense
// layer of each pass (team-worker.js, `model::team`), so a pass uses two cores. The halves
// travel through shared memory, which browsers give only to cross-origin isolated pages (the
// README's server sends the two headers); elsewhere, on one core, or with ?threads=1, the
// page computes alone.
import { $ } from './dom.js';
import { MODEL, state } from './state.js';
import { session } from './session.js';

export function showBackend() {
  const { viz } = session;
  const backend = viz.backend();
  if ($('backend').textContent !== backend) $('backend').textContent = backend;
  window.__tviz.backend = backend;
  window.__tviz.threads = viz.threads();
}

export function startHelper(configJson, tokenizer, weights) {
  const { viz } = session;
  window.__tviz.helper = 'off';
  const isolated = window.crossOriginIsolated && typeof SharedArrayBuffer === 'function';
  if (state.threads === 1 || !isolated || (navigator.hardwareConcurrency ?? 1) < 2) return;
  const glue = document.querySelector('link[rel=modulepreload][href*="transformer-viz"]')?.href;
  const wasm = document.querySelector('link[rel=preload][href$="_bg.wasm"]')?.href;
  if (!glue || !wasm) return;
  let worker;
  try {
    worker = new Worker('team-worker.js', { type: 'module' });
  } catch {
    return;
  }
  window.__tviz.helper = 'starting';
  const buffer = new SharedArrayBuffer(viz.team_buffer_bytes());
  const stop = () => {
    viz.leave_team();
    worker.terminate();
    window.__tviz.helper = 'failed';
    showBackend();
  };
  worker.onmessage = ({ data }) => {
    if (data.ready) {
      viz.join_team(buffer, 0, worker);
      window.__tviz.helper = 'ready';
      showBackend();
    }
    if (data.failed) stop();
  };
  worker.onerror = (event) => { event.preventDefault(); stop(); };
  // The worker gets the weights' bytes (the page's model already holds its own copy).
  worker.postMessage({ start: { glue, wasm, model: MODEL, config: configJson, tokenizer, weights: weights.buffer, buffer } }, [weights.buffer]);
}
