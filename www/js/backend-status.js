// Where passes run, as the status line tells it: the CPU's threads (cpu-threads.js starts
// them) or the GPU (gpu-backend.js opens, chooses and loses it). Both change what the line
// says, so the GPU's state and the line's drawing live here, below both of them.
import { $ } from './dom.js';
import { state } from './state.js';
import { session } from './session.js';
import { publish } from './testing-hook.js';

/** The GPU backend's state (gpu-backend.js changes it; passes and charts read it). */
export const gpu = {
  session: null, // the wasm GpuSession for session.viz's model, once open
  viz: null, // the Viz it was opened for
  active: false, // passes run on it
  why: 'looking for WebGPU', // why there is no GPU session (status-line words), when none
  lost: null, // why the GPU stopped, after a fallback
  name: null, // the adapter's vendor and architecture, as the browser reports them
  difference: null, // the last GPU pass's largest difference from the CPU's
};

/** Whether passes run on the GPU: it is active and no part of the model is switched off
 * (ablation.js: a changed pass is computed on the CPU). */
export const passesOnGpu = () => gpu.active && !(state.off?.length > 0);

/** The CPU's threads as start-wasm.js planned them (threads.js), with `start()` when threaded. */
export const threadsPlan = () => window.wasmThreads ?? { threads: 1, threaded: false, why: 'the page was started without its loader' };

/** The status line: where passes run, how many threads, and the GPU's line. */
export function showBackend() {
  const { viz } = session;
  const backend = gpu.active ? 'GPU (WebGPU)' : viz.backend();
  if ($('backend').textContent !== backend) $('backend').textContent = backend;
  const threads = viz.threads();
  const { why, threaded, threads: wanted } = threadsPlan();
  let note = '';
  // Short while the threads start (the header keeps one line at 1280 px, so the charts below
  // do not jump when the pool is ready); the whole reason when one thread it stays.
  if (!gpu.active && threads === 1) note = why ? `(one thread: ${why})` : threaded ? `(${wanted} threads starting)` : '(one thread: this build has none)';
  if ($('backend-why').textContent !== note) $('backend-why').textContent = note;
  publish({ backend, threads });
  renderGpuStatus();
}

/** The adapter in full (the status line's tooltip) and in short (its text). */
function adapter() {
  const described = gpu.session.adapter(); // "<name> on BrowserWebGpu[, a software adapter]"
  return gpu.name && described.startsWith('an unnamed adapter') ? described.replace('an unnamed adapter', gpu.name) : described;
}
const shortAdapter = () => gpu.name ?? adapter().replace(/ on BrowserWebGpu.*$/, '');

// A reason can be long (a driver's message): the status line shows its start.
const clip = (text, most = 60) => ([...text].length > most ? `${[...text].slice(0, most - 1).join('')}…` : text);

const fmt = (x) => (x === 0 ? '0' : x.toExponential(1));

/** The GPU line of the status: what runs where, and how far the GPU's numbers are from the CPU's. */
export function renderGpuStatus() {
  const el = $('gpu-status');
  const choice = $('backend-choice');
  // A short line beside the choice (the header stays one line high at 1280 px); the adapter
  // and the whole story in its tooltip.
  let text;
  let title;
  if (gpu.active) {
    const d = gpu.difference;
    const software = gpu.session.is_software() ? ' (software)' : '';
    text = !d ? `on ${shortAdapter()}${software}; comparing with the CPU…`
      : d.error ? `on ${shortAdapter()}${software}; could not compare with the CPU: ${d.error}`
        : `on ${shortAdapter()}${software}; largest difference from the CPU: attention ${fmt(d.attention)}, other ${fmt(d.other)} (relative)${d.unread_steps ? `, ${d.unread_steps} steps still on the GPU` : ''}`;
    title = `Computed on the GPU: ${adapter()}${software ? ', an emulation on the CPU (correct, not fast)' : ''}. Each pass is compared with the CPU's pass on the same tokens: the largest difference of any attention weight, and of any other value relative to its size. A pass brings back from the GPU what the charts on screen draw; the rest comes back when a chart needs it, and is then compared too.`;
  } else if (gpu.lost) {
    text = clip(`GPU stopped: ${gpu.lost}`);
    title = `The GPU stopped (${gpu.lost}); every pass since runs on the CPU.`;
  } else if (gpu.session) {
    text = state.backend === 'cpu' ? 'GPU: unused (CPU chosen)' : 'GPU (software): unused';
    title = `A WebGPU adapter is available: ${adapter()}. ${state.backend === 'cpu' ? 'The CPU computes, as chosen.'
      : 'It emulates a GPU on the CPU, far slower than the page\'s own CPU path: choose GPU to compare the two.'}`;
  } else {
    text = clip(`GPU: none (${gpu.why})`);
    title = `No GPU computes here: ${gpu.why}. The page computes on the CPU.`;
  }
  if (el.title !== title) el.title = title;
  if (el.textContent !== text) el.textContent = text;
  choice.value = state.backend;
  choice.querySelector('option[value=gpu]').disabled = !gpu.session || Boolean(gpu.lost);
  publish({
    gpu: {
      active: gpu.active,
      adapter: gpu.session ? adapter() : null,
      software: gpu.session?.is_software() ?? null,
      difference: gpu.difference,
      lost: gpu.lost,
      why: gpu.why,
      status: text,
    },
  });
}
