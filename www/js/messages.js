// The page's error box: plain words about what went wrong.
import { $ } from './dom.js';

export function showError(message) {
  const box = $('error');
  box.textContent = message;
  box.hidden = false;
}

export function clearError() {
  $('error').hidden = true;
}

window.addEventListener('error', (e) => { showError(`Something went wrong: ${e.message}`); e.preventDefault(); });
window.addEventListener('unhandledrejection', (e) => { showError(`Something went wrong: ${e.reason?.message ?? e.reason}`); e.preventDefault(); });
