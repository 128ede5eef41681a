// What a GPU pass brings back from the device. A pass stays on the GPU until its end; its
// readback then brings back only the steps the charts on screen draw (Viz::steps_read finds
// them by drawing each chart once on a canvas that keeps nothing), every attention weight
// (the head finder ranks every head after each pass), the tokens, logits and norm
// statistics. The rest stays on the device until a chart that reads it is about to be
// drawn (scrolled into view, another layer or step chosen, exported): one readback then
// brings all of it (GpuSession::read_rest), and the charts waiting for it are drawn.
// Nothing is ever drawn from values still on the device: such a chart keeps its last
// picture until they arrive.
import { session } from './session.js';
import { gpu } from './backend-status.js';
import { testHook, publishReadback } from './testing-hook.js';

export const readback = {
  waiting: new Set(), // charts not drawn because their values are still on the device
  inFlight: null, // the read_rest promise under way
  arrived: [], // called with the charts that waited, once the rest has come back (charts.js, pass.js)
  rerun: null, // set by pass.js: a new pass, when the values can no longer come back
  lost: null, // set by pass.js: the GPU failed (its reason), the pass is computed on the CPU
};

const read = { key: null, viz: null, names: null }; // the last answer of stepsToRead
const readsOf = { viz: null, names: new Map() }; // each chart's steps, by its spec

/** The step names a GPU pass should read back with the pass: those of `specs` (the charts
 * on screen) and every attention weight. Null (read everything) if they cannot be found. */
export function stepsToRead(specs) {
  const { viz, summary } = session;
  if (!viz || !summary) return null;
  // The same charts with the same settings read the same steps of the same model: found once
  // (each chart drawn on a canvas that keeps nothing), then kept while they stay the same.
  const key = JSON.stringify([session.modelName, summary.steps.length, specs]);
  if (read.key === key && read.viz === viz) return read.names;
  try {
    const names = new Set(viz.steps_read(specs));
    for (const step of summary.steps) if (step.op === 'Softmax' || step.op === 'CrossSoftmax') names.add(step.name);
    Object.assign(read, { key, viz, names: [...names] });
    publishReadback({ stepsRead: names.size });
    return read.names;
  } catch {
    return null;
  }
}

/** True when the current pass came from the GPU and drawing `spec` would read values that
 * are still on the device. */
export function waitsForDevice(spec) {
  if (!session.unread) return false;
  const { viz, summary } = session;
  const key = JSON.stringify([session.modelName, summary.steps.length, spec]);
  if (readsOf.viz !== viz) Object.assign(readsOf, { viz, names: new Map() });
  if (readsOf.names.size > 500) readsOf.names.clear(); // settings visited long ago
  if (!readsOf.names.has(key)) readsOf.names.set(key, viz.steps_read([spec]));
  return viz.steps_wait(readsOf.names.get(key));
}

/** The current pass's values left on the device will not come back: no chart waits for them. */
function forgetRest() {
  session.unread = false;
  readback.waiting.clear();
}

/** Brings back what the current GPU pass left on the device (one readback at a time), then
 * draws the charts that waited for it. */
export function readRest() {
  if (readback.inFlight) return readback.inFlight;
  const { viz } = session;
  const opened = gpu.session;
  if (!opened || !session.unread) return Promise.resolve();
  if (opened.values_left() === 0) {
    // The values were those of a pass that a newer one replaced on the device: a new pass
    // reads back what the charts on screen need.
    forgetRest();
    readback.rerun?.();
    return Promise.resolve();
  }
  readback.inFlight = opened.read_rest()
    // True, or why the rest cannot come back: the GPU failed, or the session was closed
    // under the readback. Either way the pass is computed again.
    .then((ok) => ok || (opened.failure() ?? 'the GPU could not send back the rest of the pass'), (err) => String(err.message ?? err))
    .then((result) => {
      readback.inFlight = null;
      if (session.viz !== viz || gpu.session !== opened) return; // another model meanwhile
      if (result !== true) {
        forgetRest();
        readback.lost?.(result);
        return;
      }
      session.unread = viz.awaits_device();
      const waited = [...readback.waiting];
      readback.waiting.clear();
      publishReadback({ restReads: testHook.gpuReadback.restReads + 1, valuesLeft: opened.values_left(), waitingCharts: [] });
      for (const then of readback.arrived) then(waited);
    });
  return readback.inFlight;
}

/** A chart is waiting for values on the device: asks for them if it is on screen. */
export function chartWaits(name, onScreen) {
  readback.waiting.add(name);
  publishReadback({ waitingCharts: [...readback.waiting] });
  if (onScreen) readRest();
}

/** Before a chart is exported: its values, if they are still on the device. */
export async function valuesFor(spec) {
  while (waitsForDevice(spec) && gpu.session) {
    const left = gpu.session.values_left();
    await readRest();
    if (left === 0) return;
  }
}
