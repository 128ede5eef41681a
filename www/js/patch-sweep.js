// Patching sentence A into B a few patches at a time (`Viz::patch_step`): a small model's
// sweep is done while its chart is drawn; a large one's goes on between frames, with a
// progress bar, Stop and Continue, and the page stays responsive. When it is done (or stopped
// and continued) the two patching charts are drawn again.
import { $, setIfChanged } from './dom.js';
import { session } from './session.js';
import { draw, afterDraw } from './charts.js';
import { exposeForTests } from './testing-hook.js';

const SLICE_MS = 30; // patches made between two frames

const sweep = { running: false, stopped: false, id: null, version: 0, last: null };
exposeForTests('PatchSweep', sweep);

/** Changes when a sweep finishes, so the patching charts are drawn again (compare.js). */
export const sweepVersion = () => sweep.version;

const seconds = (ms) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);

function show(p) {
  const box = $('patch-run');
  if (!p || (p.finished && p.milliseconds < 200)) { // a quick sweep needs no progress bar
    setIfChanged(box, 'hidden', true);
    return;
  }
  setIfChanged(box, 'hidden', false);
  $('patch-progress').max = p.total;
  $('patch-progress').value = p.done;
  const shared = p.shared ? `; the first ${p.shared} tokens are the same in both and computed once` : '';
  let text;
  if (p.finished) text = `${p.total} patches in ${seconds(p.milliseconds)}${shared}.`;
  else if (sweep.stopped) text = `Stopped after ${p.done} of ${p.total} patches (${seconds(p.milliseconds)}).`;
  else text = `Patching: ${p.done} of ${p.total} patches (${seconds(p.milliseconds)})${shared}.`;
  $('patch-status').textContent = text;
  $('patch-stop').hidden = p.finished;
  $('patch-stop').textContent = sweep.stopped ? 'Continue' : 'Stop';
}

const open = () => $('compare').open && !$('patch-block').hidden;

/** Runs the sweep under way to its end, a slice a frame, unless stopped or no longer shown. */
async function follow() {
  if (sweep.running) return;
  sweep.running = true;
  try {
    for (;;) {
      const { viz } = session;
      const p = viz?.patch_progress();
      sweep.last = p;
      show(p);
      if (!p || p.finished || sweep.stopped || !open()) break;
      await new Promise((resolve) => { setTimeout(resolve, 0); });
      if (session.viz !== viz) continue; // another model: its own sweep, if any
      sweep.last = viz.patch_step(SLICE_MS);
      if (sweep.last?.finished) {
        sweep.version += 1;
        draw('patch-heads');
        draw('patch-stream');
      }
    }
  } finally {
    sweep.running = false;
  }
}

/** After a patching chart is drawn: a new sweep starts unstopped; one under way is followed. */
function afterPatchChart() {
  const p = session.viz?.patch_progress();
  sweep.last = p;
  if (p && p.id !== sweep.id) {
    sweep.id = p.id;
    sweep.stopped = false;
  }
  show(p);
  if (p && !p.finished) follow();
}

export function wirePatchSweep() {
  afterDraw['patch-heads'] = afterPatchChart;
  afterDraw['patch-stream'] = afterPatchChart;
  $('patch-stop').addEventListener('click', () => {
    sweep.stopped = !sweep.stopped;
    show(session.viz?.patch_progress());
    if (!sweep.stopped) follow();
  });
}
