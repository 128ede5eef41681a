// The inspector's right of way over a training run. While a keystroke's pass and charts are
// computed, the Training section's worker holds its next step, so the page's threads have
// both cores to themselves (a step of a preset takes tens of milliseconds, as long as a
// keystroke). The signal is one number in shared memory (the page is cross-origin isolated;
// without shared memory there is none and the worker never waits): odd while a keystroke is
// being drawn, even otherwise, one more at each change so the worker can tell a new keystroke
// from one it stopped waiting for. pass.js raises it when a keystroke arrives, charts.js lowers
// it when every chart is drawn (and pass.js when the text is refused), and train-worker.js
// reads it between steps.

/** The shared number, or null without shared memory (training.js hands it to the worker). */
export const rightOfWay = globalThis.crossOriginIsolated ? new Int32Array(new SharedArrayBuffer(4)) : null;

function set(odd) {
  if (!rightOfWay) return;
  const now = Atomics.load(rightOfWay, 0);
  if ((now % 2 === 1) === odd) return;
  Atomics.store(rightOfWay, 0, now + 1);
  Atomics.notify(rightOfWay, 0);
}

/** A keystroke is being computed and drawn: the worker waits. */
export function inspectorBusy() {
  set(true);
}

/** Every chart is drawn (or the text was refused): the worker goes on. */
export function inspectorIdle() {
  set(false);
}
