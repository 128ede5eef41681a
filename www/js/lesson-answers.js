// A lesson question's answer, computed from the live model on the sentence the page shows (the
// kinds are listed in lesson-format.js's ANSWERS), so a student who types their own sentence
// is asked a question whose answer is still right. Each function returns what the panel asks
// with and how it judges a reply, or `{ none: why }` when this sentence has no answer.
import { tokenLabel as label } from './labels.js';
import { session } from './session.js';
import { state } from './state.js';
import { headScores } from './head-finder.js';

/** How a token is written in a question, as the charts write it (labels.js); an empty one
 * as "∅", so that its button is not blank. */
export function textLabel(text) {
  return label(text) || '∅';
}

export function labelOfToken(token) {
  return textLabel(token.text);
}

/** The query token a step's `query` names on this sentence. */
function queryIndex(tokens) {
  const q = state.query;
  return q === null || q === undefined || q >= tokens.length ? tokens.length - 1 : q;
}

/** The column of the largest weight in row `row` of a row-major matrix `width` wide. */
function largestIn(weights, row, width) {
  let best = 0;
  for (let k = 1; k < width; k++) if (weights[row * width + k] > weights[row * width + best]) best = k;
  return best;
}

function mostAttended(tokens) {
  const T = tokens.length;
  const weights = session.viz.attention(state.layer, state.head); // (T * T,), row-major
  if (weights.length !== T * T) return { none: 'this head has no attention over the sentence' };
  const q = queryIndex(tokens);
  const best = largestIn(weights, q, T);
  return {
    ask: 'token',
    query: q,
    correct: best,
    values: { answer: `"${labelOfToken(tokens[best])}" (token ${best})`, weight: percent(weights[q * T + best]), query: `"${labelOfToken(tokens[q])}"` },
  };
}

function crossAttended(tokens) {
  const source = session.summary.translation?.source_tokens ?? [];
  if (!source.length) return { none: 'this model has no source to attend to' };
  const S = source.length;
  const weights = session.viz.cross_attention(state.layer, state.head); // (T * S,), row-major
  if (weights.length !== tokens.length * S) return { none: 'this head has no cross-attention over the source' };
  const q = queryIndex(tokens);
  const best = largestIn(weights, q, S);
  return {
    ask: 'token',
    tokens: source, // the reply is a source token
    query: q,
    correct: best,
    values: { answer: `"${labelOfToken(source[best])}" (source token ${best})`, weight: percent(weights[q * S + best]), query: `"${labelOfToken(tokens[q])}" (written token ${q})` },
  };
}

function bestHead(pattern) {
  const scores = headScores(); // [{layer, head, previous, next, first, induction, ...}]
  let best = null;
  for (const h of scores) {
    const s = h[pattern];
    if (s === null || s === undefined) continue;
    if (!best || s > best.score) best = { layer: h.layer, head: h.head, score: s };
  }
  if (!best) {
    const why = { induction: 'repeats no token', duplicate: 'repeats no token', antecedent: 'has no pronoun whose antecedent is known' };
    return { none: `this sentence ${why[pattern] ?? 'gives no score'}, so no head can be scored for this pattern` };
  }
  return {
    ask: 'head',
    correct: best,
    values: { answer: `layer ${best.layer}, head ${best.head}`, score: best.score.toFixed(2) },
  };
}

// A fixed order for the choices that does not give the answer away (not always first).
function shuffled(items, salt) {
  let x = salt >>> 0 || 1;
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function nextToken(tokens) {
  const next = session.viz.next_tokens(4); // [{id, token, prob}], most likely first
  if (!next.length) return { none: 'the model gives no next token' };
  const options = shuffled(next.map((n) => textLabel(n.token)), tokens.length * 31 + next[0].id);
  const correct = textLabel(next[0].token);
  return {
    ask: 'choice',
    options,
    correct,
    values: { answer: `"${correct}"`, probability: percent(next[0].prob) },
  };
}

function topChanges() {
  const { rows } = session.viz.switched_off_prediction(1); // [{token, intact, changed}]
  if (!rows.length) return { none: 'nothing is switched off' };
  const top = (key) => rows.reduce((a, b) => (b[key] > a[key] ? b : a));
  const before = top('intact');
  const after = top('changed');
  const changes = before.token !== after.token;
  return {
    ask: 'choice',
    options: ['yes', 'no'],
    correct: changes ? 'yes' : 'no',
    values: {
      answer: changes ? 'yes' : 'no',
      before: `"${textLabel(before.token)}" (${percent(before.intact)})`,
      after: `"${textLabel(after.token)}" (${percent(after.changed)})`,
    },
  };
}

/**
 * The answer to `question` (a parsed step's) on the pass the page shows now: `{ ask, correct,
 * options?, query?, values }` (`values` fill the step's `then:` text), or `{ none: why }`.
 */
export function computeAnswer(question) {
  const tokens = session.summary?.tokens ?? [];
  if (!tokens.length) return { none: 'there is no sentence yet' };
  switch (question.answer) {
    case 'most-attended': return mostAttended(tokens);
    case 'cross-attended': return crossAttended(tokens);
    case 'best-head': return bestHead(question.pattern);
    case 'next-token': return nextToken(tokens);
    case 'top-changes': return topChanges();
    case 'token-count': return { ask: 'number', correct: tokens.length, values: { answer: String(tokens.length) } };
    default: return { none: `the page computes no answer called ${question.answer}` };
  }
}

/** Whether `reply` (a token index, `{layer, head}`, an option's text or a number) is right. */
export function isRight(answer, reply) {
  switch (answer.ask) {
    case 'head': return reply.layer === answer.correct.layer && reply.head === answer.correct.head;
    default: return reply === answer.correct;
  }
}

/** `text` with each `{name}` replaced by the answer's value of that name. */
export function fillIn(text, values) {
  return text.replace(/\{([a-z]+)\}/g, (whole, name) => values[name] ?? whole);
}

function percent(p) {
  return `${(100 * p).toFixed(p < 0.1 ? 1 : 0)}%`;
}
