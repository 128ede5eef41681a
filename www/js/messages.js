// Messages in plain words: errors (beside the control that caused them, or at the top when
// nothing on the page did), notices about a link (they stay until dismissed), and the note
// that a text is too long to share whole.
import { $, setIfChanged } from './dom.js';
import { exposeForTests } from './testing-hook.js';
import { thousands } from './labels.js';

const MAX_MESSAGE_CHARS = 600; // a message built from a file's contents can be huge

function cut(message) {
  const chars = [...String(message)];
  return chars.length > MAX_MESSAGE_CHARS ? `${chars.slice(0, MAX_MESSAGE_CHARS).join('')}… (${thousands(chars.length)} characters in all)` : chars.join('');
}

/**
 * Shows `message`. With `near` (the id of an element with class `field-error` placed next to
 * a control), it appears there; else in the box at the top.
 */
export function showError(message, near = null) {
  const box = (near && $(near)) || $('error');
  box.textContent = cut(message);
  box.hidden = false;
}

/** Hides the error shown at `near` (or the top box). */
export function clearError(near = null) {
  const box = (near && $(near)) || $('error');
  setIfChanged(box, 'hidden', true);
}

/** Notes about the opening link (what it asked for that could not be shown). */
export function showNotice(lines) {
  const list = $('notice-list');
  const shown = new Set([...list.children].map((li) => li.textContent));
  for (const line of lines) {
    if (shown.has(cut(line))) continue; // said already (a second GPU loss, the same link note)
    shown.add(cut(line));
    const li = document.createElement('li');
    li.textContent = cut(line);
    list.append(li);
  }
  $('notice').hidden = false;
}

exposeForTests('Notice', showNotice); // the tests say the same thing twice

export function wireNotice() {
  $('notice-close').addEventListener('click', () => {
    $('notice').hidden = true;
    $('notice-list').replaceChildren();
  });
}

/** Says (or stops saying) that the link keeps only part of the text. */
export function setLinkNote(text) {
  const el = $('link-note');
  el.hidden = !text;
  if (text) el.textContent = text;
}

window.addEventListener('error', (e) => { showError(`Something went wrong: ${e.message}`); e.preventDefault(); });
window.addEventListener('unhandledrejection', (e) => { showError(`Something went wrong: ${e.reason?.message ?? e.reason}`); e.preventDefault(); });
