// How many threads compute a forward pass on the CPU, and which WebAssembly build runs them.
// Read by start-wasm.js before the module starts (it picks the build), and by the page.
//
// Threads need memory shared between workers, which browsers give only to a cross-origin
// isolated page (the README's server sends the two headers). Then the page runs the threaded
// build (dist/threads/: wasm threads on one shared memory, one copy of the weights; rayon
// through wasm-bindgen-rayon) with as many threads as the device reports cores, at most
// DEFAULT_MAX_THREADS unless a link asks (`?threads=N`, 1 to MAX_THREADS). Elsewhere, or with
// ?threads=1, it runs the plain build on one thread.

export const MAX_THREADS = 16;
const DEFAULT_MAX_THREADS = 8;

/** The link's `threads=`: a whole number 1..MAX_THREADS, null when absent, NaN when invalid. */
export function threadsInLink(search) {
  const q = new URLSearchParams(search);
  if (!q.has('threads')) return null;
  const text = q.get('threads');
  const n = /^\d{1,2}$/.test(text) ? Number(text) : NaN;
  return n >= 1 && n <= MAX_THREADS ? n : NaN;
}

/**
 * The plan for this page: `{ threads, threaded, why }`: how many threads to start, whether the
 * threaded build runs, and (when one thread) why, in the status line's words.
 */
export function threadPlan(search, cores, isolated) {
  const asked = threadsInLink(search);
  const reported = Number.isInteger(cores) && cores >= 1 ? cores : 1;
  const threads = Number.isInteger(asked) ? asked : Math.min(reported, DEFAULT_MAX_THREADS);
  if (threads === 1) {
    const why = asked === 1 ? 'the link asks for threads=1' : 'this device reports one core';
    return { threads: 1, threaded: false, why };
  }
  if (!isolated) {
    return { threads: 1, threaded: false, why: 'the server did not send the cross-origin isolation headers that shared memory needs' };
  }
  return { threads, threaded: true, why: null };
}
