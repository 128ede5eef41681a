// The GPU backend: WebGPU through wgpu (Rust's `web_gpu`), opened beside the CPU path after
// the first view so that it never delays it. `?backend=` (state.backend) chooses where passes
// run: auto (the default) computes on a hardware adapter and stays on the CPU when the only
// adapter is a software emulation (headless Chromium's SwiftShader), which is slower than
// the page's own CPU path; gpu computes on any adapter; cpu never uses one. Every GPU pass is
// checked against the CPU's pass on the same tokens, and the largest difference is shown.
// No adapter, a failed device request, a lost device or a failed kernel: the page computes
// on the CPU and says why; the pass under way finishes on the CPU, so no view breaks.
// Its state (`gpu`) and the status line are backend-status.js's.
import { $ } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { showNotice } from './messages.js';
import { gpu, showBackend, renderGpuStatus } from './backend-status.js';
import { publish } from './testing-hook.js';

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
  publish({
    loseGpu: () => {
      gpu.session?.lose_device();
      rerun();
    },
  });
}
