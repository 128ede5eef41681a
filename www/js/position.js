// The positional-encoding section: which features of the position table are plotted.
import { $ } from './dom.js';
import { state, writeUrl, parseDims } from './state.js';
import { session } from './session.js';
import { showError, clearError } from './messages.js';
import { draw } from './charts.js';

export function wirePosition() {
  $('dims').value = state.dims.join(', ');
  $('dims').addEventListener('change', () => {
    const dims = parseDims($('dims').value);
    if (!dims || dims.some((d) => d >= session.config.d_model)) {
      showError(`Features must be whole numbers from 0 to ${session.config.d_model - 1}, separated by commas.`);
      return;
    }
    clearError();
    state.dims = dims;
    draw('pos-waves');
    writeUrl();
  });
}
