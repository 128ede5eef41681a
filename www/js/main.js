// transformer-viz page: wires the inputs to the wasm API (`Viz`) and the canvases.
// All model work and all chart drawing happen in Rust; these modules only keep state, ask for
// views by name, and handle hover, export, the URL and the keyboard. One module a section:
//   state.js (choices + URL)   session.js (model + last pass)   pass.js (text -> pass -> views)
//   charts.js (sizes, when to draw)   tokens.js  attention.js  position.js  norm.js  residual.js  stepper.js
//   prediction.js  hover.js  export.js  helper-thread.js   loading.js  messages.js  math.js  dom.js
import { $ } from './dom.js';
import { MODEL, state, readUrl } from './state.js';
import { session } from './session.js';
import { showError } from './messages.js';
import { renderStaticMath } from './math.js';
import { fetchBytes, fetchText, wasmBindings } from './loading.js';
import { charts, drawAll, drawTiming, observeCharts } from './charts.js';
import { update, scheduleUpdate } from './pass.js';
import { wireAttention } from './attention.js';
import { wirePosition } from './position.js';
import { wireNorm } from './norm.js';
import { wireResidual } from './residual.js';
import { wireStepper } from './stepper.js';
import { attachHover } from './hover.js';
import { attachExport } from './export.js';
import { showBackend, startHelper } from './helper-thread.js';

const MODEL_FILES = `models/${MODEL}`;

function wire() {
  wireAttention();
  wirePosition();
  wireNorm();
  wireResidual();
  wireStepper();
  $('text').addEventListener('input', (event) => { state.text = $('text').value; scheduleUpdate(event); });
  for (const name of Object.keys(charts)) attachExport(name);
  for (const name of ['attention', 'pos-table', 'pos-sin-table', 'pos-sim', 'pos-sin', 'step']) attachHover(name);
  let resize = null;
  addEventListener('resize', () => { clearTimeout(resize); resize = setTimeout(() => session.summary && drawAll(), 150); });
  observeCharts();
}

async function main() {
  readUrl();
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
  showBackend();
  renderStaticMath();
  wire();
  // The helper starts after the first complete view, so that it does not delay it.
  drawTiming.afterFirstView = () => startHelper(configJson, tokenizer, weights);
  window.__tviz.helper = 'starting';
  update();
  $('loading').hidden = true;
}

window.__tviz.ready = main().catch((err) => {
  $('loading').hidden = true;
  showError(`The model could not be loaded: ${err.message ?? err}`);
  window.__tviz.failed = String(err.message ?? err);
});
