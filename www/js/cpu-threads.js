// The CPU's threads. start-wasm.js chose the build (threads.js): on a cross-origin isolated
// page, the threaded one, whose pool of workers shares every matrix product of a pass on the
// module's one memory (one copy of the weights however many threads). The pool starts after
// the first complete view, so that starting workers does not delay it, and serves every model
// the page loads after; until it is ready a pass uses one thread. The status line that tells
// them is backend-status.js's.
import { threadsPlan, showBackend } from './backend-status.js';
import { publish } from './testing-hook.js';

/**
 * Starts the threaded build's pool once (later calls do nothing); the status line follows.
 * `__tviz.cpuThreads` (for the tests): pending until the first view, then off (one thread),
 * starting, ready or failed.
 */
export function startThreads() {
  const p = threadsPlan();
  if (!p.threaded) {
    publish({ cpuThreads: 'off' });
    return;
  }
  if (p.started) return;
  p.started = true;
  publish({ cpuThreads: 'starting' });
  p.start().then((n) => {
    publish({ cpuThreads: n > 1 ? 'ready' : 'failed' });
    showBackend();
  });
}
