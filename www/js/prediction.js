// The next-token prediction section: for a decoder, the decoding controls (temperature, top-k,
// top-p, seed) whose effect the prediction chart draws, and generation through the KV cache;
// for an encoder, why it predicts nothing.
import { $, setIfChanged } from './dom.js';
import { state, writeUrl } from './state.js';
import { session } from './session.js';
import { modelTitle } from './models.js';
import { draw, drawAll, drawTiming, specsOnScreen, registerChart } from './charts.js';
import { showError, clearError } from './messages.js';
import { isEncoderDecoder } from './applicable.js';
import { gpu, passesOnGpu, renderGpuStatus } from './backend-status.js';
import { stepsToRead } from './gpu-readback.js';
import { exposeForTests } from './testing-hook.js';
import { thousands } from './labels.js';

registerChart('prediction', { spec: predictionSpec, shape: [0.6, 520] });
// The logit lens reads the stream through the same final norm and unembedding. It unembeds
// every layer's stream: hundreds of milliseconds, held while a generation runs.
registerChart('lens', {
  spec: () => ({ kind: 'logit_lens' }),
  shape: [0.78, 300],
  // A row a layer (and the final output) of about 56 px at most, plus the title, the axes and
  // the bars of final probabilities: a three-layer model's lens is not a screen of tall cells.
  height: (width, height) => Math.min(height, 140 + (session.config.n_layers + 1) * 56),
  heldWhileGenerating: true,
});

/** The decoding settings as the engine reads them. */
export function samplingSettings() {
  return { temperature: state.temperature, top_k: state.topK, top_p: state.topP, seed: state.seed };
}

export function predictionSpec() {
  return { kind: 'prediction', top: 20, ...samplingSettings() };
}

let wordsWrittenFor = null; // the model (its Viz) the section's words were written for

export function renderPrediction() {
  const el = $('prediction');
  const title = modelTitle(session.modelName, { start: true });
  setIfChanged($('generate'), 'disabled', generation.running || !canGenerate());
  // The words depend on the model alone: written when it changes, not on every keystroke.
  if (wordsWrittenFor === session.viz) return;
  wordsWrittenFor = session.viz;
  if (session.config.lm_head === 'None') {
    // Static words with links into the glossary (no text from outside goes into this HTML:
    // the title is the page's own registry's).
    el.innerHTML = `${title} is an <a class="term" href="#g-encoder" title="Every token sees every other token; one vector out per token">encoder</a>: it reads the whole sentence in both directions and outputs one vector per token (averaged, they make a sentence embedding for search and similarity). It has no language-model head, so it makes no next-token prediction. A decoder model ends with an <a class="term" href="#g-unembed" title="Maps the final vector to one raw score (logit) per vocabulary word">unembedding</a> matrix, whose <a class="term" href="#g-logits" title="Raw scores for every vocabulary word, before the softmax">logits</a> a softmax turns into next-token probabilities.`;
  } else if (isEncoderDecoder()) {
    el.textContent = `${title} is an encoder-decoder: this chart is its decoder's last pass, after the whole output, so it predicts what follows the output (when the output is complete, the end token). The encoder-decoder section at the top shows the choice of every step; writing text of its own (sampling below) is for the decoder-only models.`;
  } else {
    el.textContent = `${title} is a decoder: after the last token of your text, its unembedding gives every one of its ${thousands(session.config.vocab_size)} tokens a score, and the chart shows the 20 most likely next tokens.`;
  }
}

/** The controls show the state (after a link, Back/Forward, or a model switch). */
export function renderSamplingControls() {
  $('temperature').value = String(state.temperature);
  $('top-k').value = String(state.topK);
  $('top-p').value = String(state.topP);
  $('seed').value = String(state.seed);
  $('temperature-value').textContent = state.temperature === 0 ? '0 (greedy)' : state.temperature.toFixed(2);
  $('top-p-value').textContent = state.topP >= 1 ? '1.00 (off)' : state.topP.toFixed(2);
}

/** Reads one control; a value out of its range is refused beside the controls. */
function readControl(input, key, lo, hi, whole) {
  const text = input.value.trim();
  const n = Number(text);
  if (text === '' || !Number.isFinite(n) || n < lo || n > hi || (whole && !Number.isInteger(n))) {
    showError(`${input.closest('label').firstChild.textContent.trim()} must be ${whole ? 'a whole number' : 'a number'} from ${lo} to ${hi}.`, 'sampling-message');
    return false;
  }
  clearError('sampling-message');
  state[key] = n;
  return true;
}

// ---------- generation ----------
const generation = { running: false, stop: false };
exposeForTests('Generation', generation); // read by the browser tests

function say(text) {
  $('generation-status').textContent = text;
}

function formatBytes(bytes) {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(0)} kB`;
}

/** A promise kept in a new task, queued behind the tasks already waiting. */
function nextTask() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { channel.port1.close(); resolve(); };
    channel.port2.postMessage(null);
  });
}

/** The next token's pass: on the GPU when passes run there (through its KV cache on the
 * device), else on the CPU. Null when another model was loaded meanwhile. */
async function nextTokenPass(viz, gpuPass) {
  if (!passesOnGpu()) return viz.generate_next(samplingSettings());
  const next = viz.draw_next_token(samplingSettings());
  // Read back what the charts on screen draw; they are redrawn after each token.
  return gpuPass.passOnGpuWith((opened) => opened.generate(next, stepsToRead(specsOnScreen())), { compare: false });
}

/**
 * Adds up to N tokens, one pass each through the KV cache, redrawing every view after each.
 * `pass` is pass.js's: `showSummary`, and the GPU's `passOnGpuWith`, `passAgainIfTyped` and
 * `differenceFromCpu`.
 */
async function generate(pass) {
  const { showSummary } = pass;
  if (generation.running) return;
  const count = Number($('gen-tokens').value);
  if (!Number.isInteger(count) || count < 1 || count > 200) {
    showError('Tokens must be a whole number from 1 to 200.', 'generate-message');
    return;
  }
  clearError('generate-message');
  const { viz } = session;
  try {
    viz.start_generation(state.seed);
  } catch (err) {
    showError(String(err.message ?? err), 'generate-message');
    return;
  }
  Object.assign(generation, { running: true, stop: false, tokens: [], passMilliseconds: [], text: null, tokensPerSecond: null });
  $('generate').disabled = true;
  $('stop').disabled = false;
  const started = performance.now();
  try {
    for (let i = 0; i < count && !generation.stop; i += 1) {
      if (session.viz !== viz) break; // another model was loaded meanwhile: this one is gone
      const before = state.text;
      const summary = await nextTokenPass(viz, pass);
      if (!summary) break; // another model was loaded meanwhile
      if (state.text !== before) {
        // The student typed while the GPU computed: their text stays, its pass comes next.
        showSummary(summary);
        break;
      }
      const { generated } = summary;
      generation.tokens.push(generated.token);
      generation.passMilliseconds.push(summary.milliseconds); // the pass alone, for the benchmark
      generation.text = generated.text;
      state.text = generated.text;
      $('text').value = generated.text; // no input event: this text's pass is the one just run
      showSummary(summary);
      const seconds = (performance.now() - started) / 1000;
      generation.tokensPerSecond = generation.tokens.length / seconds;
      say(`Generated ${generation.tokens.length} of ${count} tokens, ${generation.tokensPerSecond.toFixed(1)} tokens/s. Last: “${generated.token}” (drawn with probability ${(generated.probability * 100).toFixed(1)}%, the model's own ${(generated.model_probability * 100).toFixed(1)}%). KV cache: ${summary.cached_tokens} tokens, ${formatBytes(summary.cache_bytes)}.`);
      if (generated.stopped) {
        // The model ended the text (a special token), as the command-line tool stops.
        say(`Generated ${generation.tokens.length} of ${count} tokens: ${generated.stopped}.`);
        break;
      }
      // Let the browser draw, and a click on Stop or a keystroke arrive, before the next token:
      // the next token waits behind every task already queued (a message, not a timer: nested
      // timers wait at least 4 ms each; not scheduler.yield, whose continuation goes first).
      await nextTask();
    }
  } catch (err) {
    showError(String(err.message ?? err), 'generate-message');
  } finally {
    generation.running = false;
    if (session.viz === viz) viz.end_generation(); // a model switched to meanwhile freed this one
    if (passesOnGpu() && session.viz === viz) {
      // The GPU's tokens are checked against the CPU once, on the last one's pass.
      gpu.difference = pass.differenceFromCpu(viz);
      renderGpuStatus();
    }
    pass.passAgainIfTyped();
    drawAll(); // the charts held while generating, and those off screen
    $('generate').disabled = !canGenerate();
    $('stop').disabled = true;
    if (generation.stop) say(`${$('generation-status').textContent} Stopped.`);
    writeUrl();
  }
}

/** Whether the loaded model writes text of its own (a decoder-only model). */
function canGenerate() {
  return Boolean(session.config?.causal) && !isEncoderDecoder();
}

/** Stops a generation under way (Stop, or the student typing). */
export function stopGeneration() {
  generation.stop = true;
}

/** `pass`: pass.js's `showSummary`, `passOnGpuWith`, `passAgainIfTyped` and `differenceFromCpu`. */
export function wirePrediction(pass) {
  drawTiming.generating = () => generation.running;
  const controls = [
    ['temperature', 'temperature', 0, 2, false],
    ['top-k', 'topK', 0, 1000, true],
    ['top-p', 'topP', 0.05, 1, false],
    ['seed', 'seed', 0, 999999999, true],
  ];
  for (const [id, key, lo, hi, whole] of controls) {
    $(id).addEventListener('input', () => {
      if (!readControl($(id), key, lo, hi, whole)) return;
      renderSamplingControls();
      draw('prediction');
      writeUrl();
    });
  }
  $('generate').addEventListener('click', () => generate(pass));
  $('stop').addEventListener('click', stopGeneration);
  $('text').addEventListener('input', stopGeneration);
  renderSamplingControls();
}
