// The GPU backend: WebGPU through wgpu (Rust's `web_gpu`), opened beside the CPU path after
// the first view so that it never delays it. `?backend=` (state.backend) chooses where passes
// run: auto (the default) computes on a hardware adapter and stays on the CPU when the only
// adapter is a software emulation (headless Chromium's SwiftShader), which is slower than
// the page's own CPU path; gpu computes on any adapter; cpu never uses one. Every GPU pass is
// checked against the CPU's pass on the same tokens, and the largest difference is shown.
// No adapter, a failed device request, a lost device or a failed kernel: the page computes
// on the CPU and says why; the pass under way finishes on the CPU, so no view breaks.
import { $ } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { showNotice } from './messages.js';
import { showBackend } from './cpu-threads.js';

export const gpu = {
  session: null, // the wasm GpuSession for session.viz's model, once open
  viz: null, // the Viz it was opened for
  active: false, // passes run on it
  why: 'looking for WebGPU', // why there is no GPU session (status-line words), when none
  lost: null, // why the GPU stopped, after a fallback
  name: null, // the adapter's vendor and architecture, as the browser reports them
  difference: null, // the last GPU pass's largest difference from the CPU's
};

/** Closes the session (before its model is replaced): its weights are given back. */
export function closeGpu() {
  gpu.session?.free();
  Object.assign(gpu, { session: null, viz: null, active: false, difference: null, lost: null, why: 'looking for WebGPU' });
}

function decide() {
  if (!gpu.session || gpu.lost) return false;
  if (state.backend === 'gpu') return true;
  return state.backend === 'auto' && !gpu.session.is_software();
}

/**
 * Looks for a WebGPU adapter for the current model; `rerun` runs a pass again once the GPU is
 * chosen (the first view was computed on the CPU meanwhile).
 */
export async function openGpu(rerun) {
  closeGpu();
  const { viz } = session;
  if (!navigator.gpu) {
    gpu.why = 'this browser has no WebGPU';
    renderGpuStatus();
    return;
  }
  let opened;
  try {
    opened = await viz.open_gpu();
  } catch (err) {
    if (session.viz !== viz) return;
    gpu.why = String(err.message ?? err);
    renderGpuStatus();
    return;
  }
  if (session.viz !== viz) { opened.free(); return; } // another model was loaded meanwhile
  Object.assign(gpu, { session: opened, viz, why: null, name: await adapterName() });
  gpu.active = decide();
  renderGpuStatus();
  if (gpu.active) {
    viz.recompute_next();
    rerun();
  }
}

/** The GPU failed (`reason`): every later pass runs on the CPU, and the page says so. */
export function fallBack(reason) {
  gpu.lost = reason;
  gpu.active = false;
  gpu.difference = null;
  showNotice([`The GPU stopped (${reason}). The page now computes on the CPU; the views show the same numbers.`]);
  renderGpuStatus();
}

// wgpu passes on only the adapter's description, which Chromium leaves empty: the browser's
// own adapter info names it (vendor and architecture, "google swiftshader").
async function adapterName() {
  try {
    const info = (await navigator.gpu.requestAdapter())?.info;
    const name = info && (info.description || [info.vendor, info.architecture, info.device].filter(Boolean).join(' '));
    return name || null;
  } catch {
    return null;
  }
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
  window.__tviz.gpu = {
    active: gpu.active,
    adapter: gpu.session ? adapter() : null,
    software: gpu.session?.is_software() ?? null,
    difference: gpu.difference,
    lost: gpu.lost,
    why: gpu.why,
    status: text,
  };
}

/** The backend select: a change reruns the sentence where the student chose. */
export function wireBackendChoice(rerun) {
  $('backend-choice').addEventListener('change', () => {
    state.backend = $('backend-choice').value;
    gpu.active = decide();
    if (!gpu.active) gpu.session?.forget_last(); // its last pass and cache would only hold memory
    gpu.difference = null;
    session.viz?.recompute_next();
    showBackend(); // and the GPU line
    writeUrl();
    rerun();
  });
  // For the tests: destroys the device as a driver reset would; the next pass falls back.
  window.__tviz.loseGpu = () => {
    gpu.session?.lose_device();
    rerun();
  };
}
