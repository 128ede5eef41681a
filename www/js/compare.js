// Compare two sentences: a second sentence box (collapsed until asked for) whose pass is kept
// beside the first in the same model (Viz::set_compare_text), the chosen head drawn on both,
// and their difference A − B where the two token grids line up.
import { $, setIfChanged } from './dom.js';
import { state } from './state.js';
import { session } from './session.js';
import { draw, registerChart, canvasOf } from './charts.js';
import { attachHover, chartPoint, cellAt } from './hover.js';
import { selectHead } from './attention.js';
import { goToStep } from './stepper.js';
import { count } from './testing-hook.js';
import { sweepVersion, wirePatchSweep } from './patch-sweep.js';

export const COMPARE_CHARTS = ['compare-a', 'compare-b', 'compare-diff', 'patch-heads', 'patch-stream'];
for (const name of COMPARE_CHARTS) registerChart(name, { spec: () => compareSpec(name), shape: [0.9, 340] });

/** An answer box's token: a word gets the space in front that a byte-level vocabulary keeps
 * with it ("Mary" → " Mary"); empty: null (the sentence's most likely next token). */
function answerOf(id) {
  const text = $(id).value;
  if (!text.trim()) return null;
  return /^\s/.test(text) ? text : ` ${text}`;
}

// The second sentence's tokens once its pass ran (null while the box is closed or its text
// cannot be read), and how many times it changed (so unchanged charts are not redrawn).
const compare = { tokens: null, version: 0, pending: false };

/** What each compare chart asks Rust to draw (charts.js). `sentence_b` only tells the chart
 * cache which second sentence a picture shows; Rust ignores it. */
export function compareSpec(name) {
  const base = { layer: state.layer, head: state.head, sentence_b: compare.version };
  if (name === 'compare-diff') return { kind: 'compare_difference', ...base };
  if (name.startsWith('patch-')) {
    // The text of sentence A tells the chart cache which pair a grid is for; `sweep`, that a
    // sweep under way has finished.
    return { kind: name === 'patch-heads' ? 'patch_heads' : 'patch_stream', answer: answerOf('patch-answer'), wrong: answerOf('patch-wrong'), sentence_b: compare.version, sentence_a: state.text, sweep: sweepVersion() };
  }
  return { kind: 'compare_head', which: name === 'compare-a' ? 'a' : 'b', ...base };
}

const isOpen = () => $('compare').open;

function renderCaption() {
  const a = session.summary?.tokens.length;
  const b = compare.tokens?.length;
  let text = '';
  if (b === undefined) {
    text = 'Type a second sentence above to see the difference.';
  } else if (a === b) {
    text = `A − B, cell by cell: red where sentence A gives more weight, blue where B does, white where they agree (the colour bar is scaled to the largest change). Tokens that differ are labelled A/B. Change one word and see which heads notice.`;
  } else {
    text = `The sentences have ${a} and ${b} tokens, so position by position they hold different words: we do not line them up, and draw no difference. Replace a word by another of one token (tired → wide) to see A − B.`;
  }
  setIfChanged($('compare-caption'), 'textContent', text);
}

function drawCompare() {
  renderCaption();
  if (!isOpen()) return;
  for (const name of COMPARE_CHARTS) draw(name);
}

function runCompare() {
  compare.version += 1;
  if (!isOpen()) {
    session.viz.clear_compare(); // the pass is only kept while the comparison is shown
    compare.tokens = null;
    $('compare-status').textContent = '';
    drawCompare();
    return;
  }
  try {
    const summary = session.viz.set_compare_text($('compare-text').value);
    compare.tokens = summary.tokens;
    $('compare-status').textContent = `Sentence B: ${summary.tokens.length} tokens${summary.truncated ? ` (cut to ${session.summary?.token_limit ?? session.config.context})` : ''}.`;
    $('compare-status').classList.remove('warning');
  } catch (err) {
    // Keep the last comparison; say what is wrong in plain words.
    $('compare-status').textContent = `Sentence B: ${err.message ?? err}`;
    $('compare-status').classList.add('warning');
  }
  drawCompare();
  count('compareRuns');
}

/** Another model was loaded: sentence B's pass is run again in it (when the comparison is open). */
export function refreshCompare() {
  if (isOpen()) runCompare();
}

/** After each pass of sentence A: the captions and, when open, the charts follow it. */
export function renderCompare() {
  renderCaption();
}

export function wireCompare() {
  $('compare').addEventListener('toggle', runCompare);
  $('compare-text').addEventListener('input', () => {
    // Keystrokes that arrive while a pass runs are folded into one pass on the latest text.
    if (compare.pending) return;
    compare.pending = true;
    setTimeout(() => { compare.pending = false; runCompare(); }, 0);
  });
  document.addEventListener('tviz:head', drawCompare);
  for (const name of COMPARE_CHARTS) attachHover(name); // their export buttons: main.js, as every chart's
  wirePatchSweep();
  for (const id of ['patch-answer', 'patch-wrong']) {
    $(id).addEventListener('change', () => { draw('patch-heads'); draw('patch-stream'); });
  }
  // A click on a head opens it in the attention section; on the stream, that layer's steps.
  canvasOf('patch-heads').addEventListener('click', (event) => {
    const point = chartPoint('patch-heads', event);
    const cell = point && cellAt(point);
    if (!cell) return;
    selectHead(cell.row, cell.col);
    $('attention-section').scrollIntoView({ block: 'start' });
  });
  canvasOf('patch-stream').addEventListener('click', (event) => {
    const point = chartPoint('patch-stream', event);
    const cell = point && cellAt(point);
    if (!cell) return;
    const first = session.summary.steps.findIndex((s) => s.layer === cell.row);
    if (first < 0) return;
    goToStep(first);
    $('stepper-section').scrollIntoView({ block: 'start' });
  });
}
