// transformer-viz page: wires the inputs to the wasm API (`Viz`) and the canvases.
// All model work and all chart drawing happen in Rust; these modules only keep state, ask for
// views by name, and handle hover, export, the URL and the keyboard. Imports go one way, from
// the top of this list down (scripts/check-layers.mjs checks it):
//   main.js (wiring)   lessons.js (the Lessons panel: steps that set the page, questions)
//     training.js (the Training section; its worker, www/train-worker.js, runs the trainer's wasm)
//   pass.js (text -> pass -> views)   model-picker.js (choosing and loading one)
//   sections, one module each, each registering its charts with charts.js: tokens.js
//     attention.js  head-finder.js  query.js (one query at a time)  compare.js  position.js  norm.js
//     residual.js  rotary.js
//     stepper.js  prediction.js (and the logit lens)  translation.js (encoder-decoder)  presenter.js
//   charts.js (sizes, when to draw)  hover.js  export.js
//   gpu-backend.js  cpu-threads.js  backend-status.js (the status line, the GPU's state)
//     gpu-readback.js  applicable.js (views a model does not have)
//   state.js (choices + URL)   session.js (model + last pass)
//   models.js (which models, their files: src/checkpoints/models.json)  model-files.js (Cache
//     API, downloads)  url-state.js (link format)  lesson-format.js (a lesson file, read)
//     labels.js (a token as text)  threads.js  loading.js  messages.js  math.js
//     dom.js  testing-hook.js (window.__tviz, for the browser tests)
import { $, setIfChanged } from './dom.js';
import { capText, MAX_TEXT_CHARS } from './url-state.js';
import { state, fromLink, readUrl, checkAgainst, onHistoryMove, keepLinksOutOfHistory, writeUrl } from './state.js';
import { session } from './session.js';
import { showError, wireNotice } from './messages.js';
import { renderStaticMath, renderRemainingMath } from './math.js';
import { charts, drawAll, drawTiming, observeCharts } from './charts.js';
import { renderStep } from './stepper.js';
import { update, scheduleUpdate, showSummary, passOnGpuWith, passAgainIfTyped, differenceFromCpu } from './pass.js';
import { wirePrediction, renderSamplingControls } from './prediction.js';
import { wireAttention, renderLayerHeadOptions, renderLinesControls } from './attention.js';
import { wireHeadFinder } from './head-finder.js';
import { wireCompare, refreshCompare } from './compare.js';
import { wirePosition, renderDimsForModel } from './position.js';
import { wireNorm } from './norm.js';
import { wireResidual } from './residual.js';
import { wireRotary, renderRotaryForModel, pairCount } from './rotary.js';
import { wireStepper } from './stepper.js';
import { wireTranslation } from './translation.js';
import { wireSwitches } from './ablation.js';
import { wirePartTokens } from './part-tokens.js';
import { attachHover } from './hover.js';
import { attachExport } from './export.js';
import { startThreads } from './cpu-threads.js';
import { showBackend } from './backend-status.js';
import { openGpu, wireBackendChoice } from './gpu-backend.js';
import { wirePresenter } from './presenter.js';
import { openFirstModel, wirePicker, switchModel } from './model-picker.js';
import { wireQuery } from './query.js';
import { wireLessons, showLessonOfState, openLinkedLesson } from './lessons.js';
import { wireTraining } from './training.js';
import { publish } from './testing-hook.js';
import { thousands } from './labels.js';

// Back/Forward landed on another view: show it.
function showHistoryView(before) {
  if (state.model !== session.modelName) {
    $('text').value = state.text;
    switchModel(state.model); // then a pass on the text and every chart
    return;
  }
  $('text').value = state.text;
  $('layer').value = state.layer;
  $('head').value = state.head;
  document.querySelector(`input[name=mode][value=${state.mode}]`).checked = true;
  renderLinesControls(); // the caption names the head
  $('dims').value = state.dims.join(', ');
  $('norm').value = state.norm;
  $('rotary-pair').value = String(state.rotaryPair);
  renderSamplingControls();
  if (state.text !== before.text || JSON.stringify(state.off) !== JSON.stringify(before.off)) {
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
  onHistoryMove((before) => { showHistoryView(before); showLessonOfState(); });
  wireAttention();
  wireHeadFinder();
  wireQuery();
  wireCompare();
  wirePosition();
  wireNorm();
  wireResidual();
  wireRotary();
  wirePrediction({ showSummary, passOnGpuWith, passAgainIfTyped, differenceFromCpu });
  wireStepper();
  wireTranslation();
  wireSwitches({ update });
  wirePartTokens();
  wirePresenter();
  wireLessons(showHistoryView);
  wireTraining();
  $('text').addEventListener('input', (event) => { state.text = textBoxText(); scheduleUpdate(event); });
  for (const name of Object.keys(charts)) attachExport(name);
  for (const name of ['attention', 'pos-table', 'pos-sin-table', 'pos-sim', 'pos-sin', 'step', 'head-grid', 'lens', 'rotary-distance', 'cross', 'off-attention']) attachHover(name);
  let resize = null;
  addEventListener('resize', () => { clearTimeout(resize); resize = setTimeout(() => session.summary && drawAll(), 150); });
  observeCharts();
}

/** The text box's text, cut to the longest text the page takes; says so beside the box. */
function textBoxText() {
  const { text, cut } = capText($('text').value);
  if (cut) $('text').value = text;
  const limit = $('text-limit');
  if (cut) {
    limit.textContent = `The text box holds at most ${thousands(MAX_TEXT_CHARS)} characters, far more than any model here reads: the last ${thousands(cut)} were left out.`;
    limit.hidden = false;
  } else if (text.length < MAX_TEXT_CHARS) {
    setIfChanged(limit, 'hidden', true); // shorter again (a full box keeps the note)
  }
  return text;
}

// Another model was loaded: each section's model-dependent choices, then a pass on the
// current text and every chart again (the CPU's threads, if any, serve it too).
function showNewModel() {
  renderLayerHeadOptions();
  renderDimsForModel('The features chosen for the other model do not fit this one.');
  renderRotaryForModel();
  showBackend();
  update();
  refreshCompare();
  setTimeout(() => openGpu(update), 0);
}

async function main() {
  await readUrl();
  $('text').value = state.text;
  // The model files download (or come from the browser's cache) while the WebAssembly module starts.
  await openFirstModel();
  const { config } = session;
  // Features are checked by position.js, which says what it drops beside its box.
  checkAgainst({ layer: config.n_layers, head: config.n_heads, stepHead: config.n_heads, rotaryPair: pairCount() || undefined });
  renderRotaryForModel();
  showBackend();
  renderStaticMath();
  wire();
  wirePicker(showNewModel);
  wireBackendChoice(update);
  // The CPU's threads and the GPU start, and the equations off screen are typeset, after the
  // first complete view, so that none of them delays it.
  drawTiming.afterFirstView = () => {
    drawTiming.afterFirstView = null;
    startThreads();
    openGpu(update);
    renderRemainingMath();
  };
  update();
  if (session.summary) {
    // The first pass has already kept step and norm in range; say so if the link asked for more.
    const asked = Object.fromEntries(['step', 'norm', 'query'].filter((k) => fromLink[k] !== undefined).map((k) => [k, fromLink[k]]));
    checkAgainst({ step: session.summary.steps.length, norm: session.summary.norms.length, query: session.summary.tokens.length }, asked);
    renderStep();
    writeUrl();
  }
  $('loading').hidden = true;
  openLinkedLesson();
}

publish({
  ready: main().catch((err) => {
    $('loading').hidden = true;
    showError(`The model could not be loaded: ${err.message ?? err}`);
    publish({ failed: String(err.message ?? err) });
  }),
});
