// The head finder: leads a student from 72 heads to the few that do something for the
// sentence. Two ranked lists, each entry a button that opens the head: the heads that attend
// most strongly from a chosen token to another word (Viz::heads_from), and the heads ranked
// by a pattern score (previous token, next token, [CLS], [SEP]; Viz::head_scores). It also
// picks the head the page opens on when the URL names none.
import { $, fillSelect, syncChildren, setIfChanged } from './dom.js';
import { state } from './state.js';
import { session } from './session.js';
import { selectHead, renderLinesControls } from './attention.js';
import { draw, canvasOf, registerChart } from './charts.js';
import { chartPoint, cellAt } from './hover.js';

registerChart('head-grid', { spec: () => ({ kind: 'head_grid', pattern: state.gridPattern }), shape: [0.8, 420] });

const SHOWN = 8; // entries per list

// Words that stand for another word: the default token, when the sentence has one.
const PRONOUNS = new Set(['it', 'he', 'she', 'they', 'him', 'her', 'them', 'its', 'his', 'their', 'this', 'that', 'which', 'who']);

// `opened`: the head the page opened on and why, with the model and text that reason holds for.
const finder = { token: null, tokenText: null, openingChosen: false, scores: [], opened: null };

const tokenTexts = () => session.summary.tokens.map((t) => t.text);

/** A token as a word: without the space a byte-level tokenizer keeps in front ("·it"), lower case. */
const wordOf = (text) => text.replace(/^[\s·Ġ▁]+/u, '').toLowerCase();

/** Whether token `i` of `tokens` is a pronoun (a word that stands for another), as a whole
 * word: not the "he" a small vocabulary cuts "The" into ("T" + "he"). A byte-level token that
 * starts a word begins with its space; a word continues into a next token that has none (or,
 * in WordPiece, one that starts with ##). */
function isPronoun(tokens, i) {
  const t = tokens[i];
  if (t.special || !PRONOUNS.has(wordOf(t.text))) return false;
  const next = tokens[i + 1];
  if (session.config.tokenizer === 'word-piece') return !next?.text.startsWith('##');
  const starts = /^[\s·Ġ▁]/u.test(t.text) || i === 0 || tokens[i - 1].special;
  const continues = next && !next.special && /^[\p{L}\p{N}]/u.test(next.text);
  return starts && !continues;
}

/** The most interesting token to start from: a pronoun if there is one, else the last word
 * that has words before it to look at (in a decoder the first token sees only itself). */
export function defaultToken() {
  const tokens = session.summary.tokens;
  // In a decoder a pronoun looks only back: it needs a word before it, beyond its neighbour.
  const lookable = (i) => !session.config.causal || tokens.slice(0, Math.max(0, i - 1)).some((t) => !t.special);
  const pronoun = tokens.findIndex((_, i) => isPronoun(tokens, i) && lookable(i));
  if (pronoun > 0) return pronoun;
  for (let i = tokens.length - 1; i > 0; i -= 1) if (!tokens[i].special && /\w/.test(tokens[i].text)) return i;
  return tokens.length - 1;
}

/** Keeps the chosen token across passes: the same text nearest its old place, else the default. */
function keepToken() {
  const texts = tokenTexts();
  if (finder.tokenText !== null) {
    let best = -1;
    texts.forEach((t, i) => { if (t === finder.tokenText && (best < 0 || Math.abs(i - finder.token) < Math.abs(best - finder.token))) best = i; });
    if (best >= 0) return best;
  }
  return defaultToken();
}

/** A list entry: a button that opens a head (wireHeadFinder listens for its clicks). */
function makeEntry() {
  const li = document.createElement('li');
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'secondary';
  li.append(button);
  return li;
}

/** Brings entry `li` up to date: the head it opens, its words and its tooltip. The lists'
 * elements are kept from pass to pass, and only what changed is written. */
function updateEntry(li, { layer, head, text, title }) {
  const button = li.firstElementChild;
  setIfChanged(button.dataset, 'layer', String(layer));
  setIfChanged(button.dataset, 'head', String(head));
  setIfChanged(button, 'title', title);
  setIfChanged(button, 'textContent', text);
}

/** Opens the head an entry's button names, for a click anywhere in `list`. */
function openOnClick(list) {
  list.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-layer]');
    if (!button) return;
    selectHead(Number(button.dataset.layer), Number(button.dataset.head));
    canvasOf('attention').scrollIntoView({ block: 'nearest' }); // the head just chosen
  });
}

function markCurrent() {
  document.querySelectorAll('#head-finder button[data-layer]').forEach((b) => {
    const current = Number(b.dataset.layer) === state.layer && Number(b.dataset.head) === state.head;
    b.classList.toggle('current', current);
    if (current) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
  });
  document.querySelectorAll('#tokens li').forEach((li, i) => li.classList.toggle('finder-token', i === finder.token));
}

function renderFrom() {
  const texts = tokenTexts();
  const ranked = session.viz.heads_from(finder.token, $('finder-beyond').checked);
  const list = $('finder-from');
  if (!ranked.length) {
    const li = document.createElement('li');
    li.className = 'hint';
    li.textContent = 'The sentence has no other word for this token to look at.';
    list.replaceChildren(li);
    return;
  }
  if (list.firstElementChild?.classList.contains('hint')) list.replaceChildren(); // entries again
  syncChildren(list, ranked.slice(0, SHOWN).map((r) => ({
    layer: r.layer,
    head: r.head,
    text: `layer ${r.layer}, head ${r.head} → "${texts[r.key]}" ${r.weight.toFixed(2)}`,
    title: `In layer ${r.layer}, head ${r.head}, "${texts[finder.token]}" puts ${(r.weight * 100).toFixed(0)}% of its attention on "${texts[r.key]}" (position ${r.key}).`,
  })), makeEntry, updateEntry);
}

function renderPattern() {
  const kind = $('finder-kind').value;
  const names = { previous: 'the previous token', next: 'the next token', first: firstTokenWords(), last: 'the last token ([SEP])', induction: 'the token after the last occurrence of its own token', duplicate: 'the earlier copy of its own token', antecedent: 'the name or noun a pronoun stands for' };
  const ranked = finder.scores.filter((s) => s[kind] !== null && s[kind] !== undefined).sort((a, b) => b[kind] - a[kind]);
  syncChildren($('finder-pattern'), ranked.slice(0, SHOWN).map((s) => ({
    layer: s.layer,
    head: s.head,
    text: `layer ${s.layer}, head ${s.head}: ${s[kind].toFixed(2)}`,
    title: `On average each token gives ${(s[kind] * 100).toFixed(0)}% of its attention to ${names[kind]} in layer ${s.layer}, head ${s.head}.`,
  })), makeEntry, updateEntry);
}

function render() {
  renderFrom();
  renderPattern();
  markCurrent();
}

/** The first token in words: an encoder's is its [CLS] marker, a decoder's the text's start. */
function firstTokenWords() {
  const first = session.summary?.tokens[0];
  return first?.special ? `the first token (${first.text})` : 'the first token';
}

/** Picks the token the list ranks heads from; `show`: bring the list into view (a chip was
 * clicked far above it). */
function chooseToken(index, { show = false } = {}) {
  finder.token = index;
  finder.tokenText = tokenTexts()[index];
  $('finder-token').value = index;
  renderFrom();
  markCurrent();
  if (show) $('finder-from').scrollIntoView({ block: 'nearest' });
}

const percent = (x) => `${(x * 100).toFixed(0)}%`;

/** The sentence's pronouns and the words they stand for, as `"it" → "animal"`. */
function referencesInWords() {
  return session.viz.references().map((r) => `"${r.pronoun_word}" → ${r.antecedent_words.map((w) => `"${w}"`).join(' and ')}`).join(', ');
}

/** How many tokens of the sentence repeat an earlier one (not the one just before). */
function repeats() {
  const seen = new Map();
  let count = 0;
  session.summary.tokens.forEach((t, i) => {
    if (t.special) return;
    const before = seen.get(t.text);
    if (before !== undefined && before < i - 1) count += 1;
    seen.set(t.text, i);
  });
  return count;
}

/** The jobs a head can be seen doing on a sentence, in the order the page prefers to open on
 * them, each with the least score (mean weight where the job says) that counts as doing it,
 * and the repeated tokens the sentence needs to judge it (two, not one "the"). */
const JOBS = [
  { kind: 'antecedent', least: 0.4, repeats: 0, job: 'an antecedent head', says: (s) => `from each pronoun it puts ${percent(s.antecedent)} of its attention on the name or noun the pronoun stands for (${referencesInWords()})` },
  { kind: 'induction', least: 0.4, repeats: 2, job: 'an induction head', says: (s) => `a repeated token puts ${percent(s.induction)} of its attention on what followed it last time, the token to copy next` },
  { kind: 'duplicate', least: 0.4, repeats: 2, job: 'a duplicate-token head', says: (s) => `from a repeated word it puts ${percent(s.duplicate)} of its attention on the word's earlier copy` },
];

/**
 * The head to open on when the URL names none, from the scores on this sentence: the best head
 * of the first job in JOBS some head does (an antecedent head when a pronoun's word is known,
 * an induction or duplicate-token head when a word repeats); else, for a pronoun, the head
 * that sends it most strongly back to an earlier word; else the strongest previous-token head,
 * the easiest pattern to see. Says which job, and why, in the finder's note.
 */
function openingHead() {
  const texts = tokenTexts();
  const repeated = repeats();
  for (const { kind, least, repeats: needed, job, says } of JOBS) {
    if (repeated < needed) continue;
    const best = finder.scores.reduce((a, b) => ((b[kind] ?? -1) > (a[kind] ?? -1) ? b : a));
    if ((best[kind] ?? 0) >= least) {
      return { ...best, job: kind, why: `Opened on layer ${best.layer}, head ${best.head}, ${job}: on this sentence ${says(best, texts)}.` };
    }
  }
  const q = finder.token;
  if (isPronoun(session.summary.tokens, q)) {
    const back = session.viz.heads_from(q, true).find((r) => r.key < q);
    if (back) return { ...back, job: 'pronoun', why: `Opened on layer ${back.layer}, head ${back.head}: of all ${finder.scores.length} heads it sends "${texts[q]}" most strongly back to an earlier word, "${texts[back.key]}" (${back.weight.toFixed(2)}).` };
  }
  const best = finder.scores.reduce((a, b) => (b.previous > a.previous ? b : a));
  return { ...best, job: 'previous', why: `Opened on layer ${best.layer}, head ${best.head}, a previous-token head: on this sentence each token gives on average ${percent(best.previous)} of its attention to the token before it.` };
}

/** Every head's scores on the pass shown (`Viz::head_scores`), computed once a pass here. */
export function headScores() {
  return finder.scores;
}

/** After each pass, before the charts are drawn: new scores and lists, and on the first
 * pass of a page whose URL named no head, the head to open on. */
export function renderHeadFinder() {
  finder.scores = session.viz.head_scores();
  const texts = tokenTexts();
  finder.token = keepToken();
  finder.tokenText = texts[finder.token];
  fillSelect($('finder-token'), texts.map((_, i) => i), (i) => `${i}: ${texts[i]}`, finder.token);
  const kinds = $('finder-kind');
  // A score this model or sentence cannot have (null) is not offered.
  for (const kind of ['last', 'induction', 'duplicate', 'antecedent']) {
    setIfChanged(kinds.querySelector(`option[value=${kind}]`), 'disabled', finder.scores[0]?.[kind] === null);
  }
  // In a decoder no token sees the one after it: that score is always 0, so it is not offered.
  setIfChanged(kinds.querySelector('option[value=next]'), 'disabled', Boolean(session.config.causal));
  setIfChanged(kinds.querySelector('option[value=first]'), 'textContent', firstTokenWords().replace('the first', 'first'));
  if (kinds.selectedOptions[0]?.disabled) kinds.value = 'previous';
  if (!finder.openingChosen) {
    finder.openingChosen = true;
    if (!state.layerHeadFromUrl) {
      const open = openingHead();
      state.layer = open.layer;
      state.head = open.head;
      $('layer').value = state.layer;
      $('head').value = state.head;
      finder.opened = { layer: open.layer, head: open.head, job: open.job, why: open.why, model: session.modelName, text: state.text };
      renderLinesControls(); // its caption names the head
      // No 'tviz:head' event: its listeners draw the charts that follow the head, at once and
      // off screen too, ahead of the charts on screen; the pass draws them all next, with
      // this head (showSummary), and the finder's own marks are set by render() below.
    }
  }
  renderNote();
  render();
}

/** The note on why the page opened on its head, while it is still true: the same model,
 * sentence and head it was worked out for; gone once any of them changes. */
function renderNote() {
  const o = finder.opened;
  const holds = o && o.model === session.modelName && o.text === state.text && o.layer === state.layer && o.head === state.head;
  $('finder-note').textContent = holds ? o.why : '';
  setIfChanged($('finder-note').dataset, 'job', holds ? o.job : '');
}

// Common words, each one token for MiniLM's and SmolLM2's tokenizers (one to three for the
// lecture decoders'), for a random sequence to repeat.
const WORDS = ('apple river chair green window music paper stone yellow garden train bottle silver '
  + 'market winter candle forest pencil summer rabbit castle orange letter bridge doctor ocean '
  + 'blanket kitchen monkey planet button farmer jacket pillow rocket island tiger camera basket '
  + 'engine violin cookie dragon mirror ladder wallet circle hammer puzzle spider tunnel wizard').split(' ');

/** Twenty words in a random order, then the same twenty again; fewer words when `fits` (the
 * model reads the text whole) says twice twenty would not fit the model's context, since an
 * induction head needs the whole first copy in view. */
export function repeatedRandomText(random = Math.random, fits = () => true) {
  const pool = [...WORDS];
  for (let i = pool.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  const twice = (n) => { const half = pool.slice(0, n).join(' '); return `${half} ${half}`; };
  let n = 20;
  while (n > 4 && !fits(twice(n))) n -= 1;
  return twice(n);
}

// A held-out pair of names in a held-out sentence shape of the lecture stories: each pronoun
// has one name it can stand for, by gender, and it comes before the pronoun (a decoder looks
// only back).
// It opens with a sentence of no person: a name as a text's first word sits right after the
// start token, where many heads rest whatever the text (see analysis/antecedents.rs).
const PRONOUN_EXAMPLE = 'The rain had stopped. Anna called Tom from the station. He told her about the dog, and she laughed.';
// The indirect-object sentence (Wang et al., 2022): the name said once gets the gift.
const NAMES_EXAMPLE = 'When Mary and John went to the store, John gave a drink to';

function useExample(text) {
  $('text').value = text;
  $('text').dispatchEvent(new Event('input', { bubbles: true }));
}

export function wireHeadFinder() {
  $('grid-pattern').addEventListener('change', () => {
    state.gridPattern = $('grid-pattern').value;
    draw('head-grid');
  });
  $('example-repeat').addEventListener('click', () => {
    // The pattern first: the pass runs inside useExample's input event and may draw the grid
    // in that same task.
    $('grid-pattern').value = 'induction';
    state.gridPattern = 'induction';
    useExample(repeatedRandomText(Math.random, (text) => session.viz.fits(text)));
  });
  $('example-pronouns').addEventListener('click', () => {
    $('grid-pattern').value = 'antecedent';
    state.gridPattern = 'antecedent';
    useExample(PRONOUN_EXAMPLE);
  });
  $('example-names').addEventListener('click', () => {
    $('grid-pattern').value = 'duplicate';
    state.gridPattern = 'duplicate';
    useExample(NAMES_EXAMPLE);
  });
  $('example-sentence').addEventListener('click', () => useExample('The animal didn\'t cross the street because it was too tired.'));
  canvasOf('head-grid').addEventListener('click', (event) => {
    const point = chartPoint('head-grid', event);
    const cell = point && cellAt(point);
    if (cell) selectHead(cell.row, cell.col);
  });
  openOnClick($('finder-from'));
  openOnClick($('finder-pattern'));
  $('finder-token').addEventListener('change', () => chooseToken(Number($('finder-token').value)));
  $('finder-beyond').addEventListener('change', renderFrom);
  $('finder-beyond').addEventListener('change', markCurrent);
  $('finder-kind').addEventListener('change', () => { renderPattern(); markCurrent(); });
  // A click on a token chip picks that token.
  $('tokens').addEventListener('click', (event) => {
    const li = event.target.closest('#tokens li');
    if (!li) return;
    chooseToken([...li.parentElement.children].indexOf(li), { show: true });
  });
  document.addEventListener('tviz:head', () => {
    markCurrent();
    renderNote();
  });
}
