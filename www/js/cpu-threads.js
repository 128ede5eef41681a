// The CPU's threads, as the status line tells them. start-wasm.js chose the build (threads.js):
// on a cross-origin isolated page, the threaded one, whose pool of workers shares every matrix
// product of a pass on the module's one memory (one copy of the weights however many threads).
// The pool starts after the first complete view, so that starting workers does not delay it,
// and serves every model the page loads after; until it is ready a pass uses one thread.
import { $ } from './dom.js';
import { session } from './session.js';
import { gpu, renderGpuStatus } from './gpu-backend.js';

const plan = () => window.wasmThreads ?? { threads: 1, threaded: false, why: 'the page was started without its loader' };

export function showBackend() {
  const { viz } = session;
  const backend = gpu.active ? 'GPU (WebGPU)' : viz.backend();
  if ($('backend').textContent !== backend) $('backend').textContent = backend;
  const threads = viz.threads();
  const { why, threaded, threads: wanted } = plan();
  let note = '';
  // Short while the threads start (the header keeps one line at 1280 px, so the charts below
  // do not jump when the pool is ready); the whole reason when one thread it stays.
  if (!gpu.active && threads === 1) note = why ? `(one thread: ${why})` : threaded ? `(${wanted} threads starting)` : '(one thread: this build has none)';
  if ($('backend-why').textContent !== note) $('backend-why').textContent = note;
  window.__tviz.backend = backend;
  window.__tviz.threads = threads;
  renderGpuStatus();
}

/**
 * Starts the threaded build's pool once (later calls do nothing); the status line follows.
 * `__tviz.cpuThreads` (for the tests): pending until the first view, then off (one thread),
 * starting, ready or failed.
 */
export function startThreads() {
  const p = plan();
  if (!p.threaded) {
    window.__tviz.cpuThreads = 'off';
    return;
  }
  if (p.started) return;
  p.started = true;
  window.__tviz.cpuThreads = 'starting';
  p.start().then((n) => {
    window.__tviz.cpuThreads = n > 1 ? 'ready' : 'failed';
    showBackend();
  });
}
