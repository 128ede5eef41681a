// transformer-viz page: wires the inputs to the wasm API (`Viz`) and the canvases.
// All model work and all chart drawing happen in Rust; these modules only keep state, ask for
// views by name, and handle hover, export, the URL and the keyboard. One module a section:
//   state.js (choices + URL)   session.js (model + last pass)   pass.js (text -> pass -> views)
//   charts.js (sizes, when to draw)   tokens.js  attention.js  head-finder.js  compare.js  position.js
//   norm.js  residual.js  stepper.js  prediction.js  hover.js  export.js  helper-thread.js  presenter.js
//   url-state.js (link format)  loading.js  messages.js  math.js  dom.js
import { $ } from './dom.js';
import { MODEL, state, fromLink, readUrl, checkAgainst, onHistoryMove, keepLinksOutOfHistory, writeUrl } from './state.js';
import { session } from './session.js';
import { showError, wireNotice } from './messages.js';
import { renderStaticMath } from './math.js';
import { fetchBytes, fetchText, wasmBindings } from './loading.js';
import { charts, drawAll, drawTiming, observeCharts } from './charts.js';
import { renderStep } from './stepper.js';
import { update, scheduleUpdate } from './pass.js';
import { wireAttention } from './attention.js';
import { wireHeadFinder } from './head-finder.js';
import { wireCompare } from './compare.js';
import { wirePosition } from './position.js';
import { wireNorm } from './norm.js';
import { wireResidual } from './residual.js';
import { wireStepper } from './stepper.js';
import { attachHover } from './hover.js';
import { attachExport } from './export.js';
import { showBackend, startHelper } from './helper-thread.js';
import { wirePresenter } from './presenter.js';

const MODEL_FILES = `models/${MODEL}`;

// Back/Forward landed on another view: show it.
function showHistoryView(before) {
  $('text').value = state.text;
  $('layer').value = state.layer;
  $('head').value = state.head;
  document.querySelector(`input[name=mode][value=${state.mode}]`).checked = true;
  $('dims').value = state.dims.join(', ');
  $('norm').value = state.norm;
  if (state.text !== before.text) {
    update(); // a new pass, then every chart
  } else {
    drawAll();
    renderStep();
    writeUrl();
  }
}

function wire() {
  wireNotice();
  keepLinksOutOfHistory();
  onHistoryMove(showHistoryView);
  wireAttention();
  wireHeadFinder();
  wireCompare();
  wirePosition();
  wireNorm();
  wireResidual();
  wireStepper();
  wirePresenter();
  $('text').addEventListener('input', (event) => { state.text = $('text').value; scheduleUpdate(event); });
  for (const name of Object.keys(charts)) attachExport(name);
  for (const name of ['attention', 'pos-table', 'pos-sin-table', 'pos-sim', 'pos-sin', 'step']) attachHover(name);
  let resize = null;
  addEventListener('resize', () => { clearTimeout(resize); resize = setTimeout(() => session.summary && drawAll(), 150); });
  observeCharts();
}

async function main() {
  await readUrl();
  $('text').value = state.text;
  // The model files download while the WebAssembly module starts.
  const files = Promise.all([
    fetchText(`${MODEL_FILES}/config.json`),
    fetchText(`${MODEL_FILES}/tokenizer.json`),
    fetchBytes(`${MODEL_FILES}/model.f16.safetensors`, (f) => { $('loading-progress').value = f; }),
  ]);
  const [bindings, [configJson, tokenizer, weights]] = await Promise.all([wasmBindings(), files]);
  $('loading-text').textContent = 'Preparing the model…';
  session.viz = new bindings.Viz(MODEL, configJson, tokenizer, weights);
  session.config = session.viz.config();
  const { config } = session;
  // Features are checked by position.js, which says what it drops beside its box.
  checkAgainst({ layer: config.n_layers, head: config.n_heads, stepHead: config.n_heads });
  showBackend();
  renderStaticMath();
  wire();
  // The helper starts after the first complete view, so that it does not delay it.
  drawTiming.afterFirstView = () => startHelper(configJson, tokenizer, weights);
  window.__tviz.helper = 'starting';
  update();
  if (session.summary) {
    // The first pass has already kept step and norm in range; say so if the link asked for more.
    const asked = Object.fromEntries(['step', 'norm'].filter((k) => fromLink[k] !== undefined).map((k) => [k, fromLink[k]]));
    checkAgainst({ step: session.summary.steps.length, norm: session.summary.norms.length }, asked);
    renderStep();
    writeUrl();
  }
  $('loading').hidden = true;
}

window.__tviz.ready = main().catch((err) => {
  $('loading').hidden = true;
  showError(`The model could not be loaded: ${err.message ?? err}`);
  window.__tviz.failed = String(err.message ?? err);
});
