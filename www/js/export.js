// PNG and SVG export buttons under every chart.
import { download } from './dom.js';
import { showError } from './messages.js';
import { session } from './session.js';
import { charts, canvasOf, draw } from './charts.js';

export function attachExport(name) {
  const box = document.querySelector(`.export[data-for="${name}"]`);
  const png = document.createElement('button');
  png.type = 'button';
  png.className = 'secondary';
  png.textContent = 'Export PNG';
  png.addEventListener('click', () => {
    draw(name); // bring it up to date if it was off screen
    canvasOf(name).toBlob((blob) => download(blob, `transformer-viz-${name}.png`), 'image/png');
  });
  const svg = document.createElement('button');
  svg.type = 'button';
  svg.className = 'secondary';
  svg.textContent = 'Export SVG';
  svg.addEventListener('click', () => {
    const canvas = canvasOf(name);
    try {
      const text = session.viz.svg(charts[name](), canvas.width, canvas.height);
      download(new Blob([text], { type: 'image/svg+xml' }), `transformer-viz-${name}.svg`);
    } catch (err) {
      showError(`Could not export: ${err.message ?? err}`);
    }
  });
  box.append(png, svg);
}
