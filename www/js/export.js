// PNG and SVG export buttons under every chart, made for slides: the PNG is drawn again at
// twice the chart's size or more (three times on a 3x screen) with a caption naming the
// model, the chart's settings and the sentence; the file names carry the same settings, so
// two heads or two steps never overwrite each other. The SVG keeps text as text and embeds
// large heatmaps as one image (Rust's `view_svg`).
import { $, download } from './dom.js';
import { showError } from './messages.js';
import { state } from './state.js';
import { modelTitle } from './models.js';
import { session } from './session.js';
import { charts, canvasOf, draw, modelOf } from './charts.js';
import { valuesFor } from './gpu-readback.js';

const MODEL_ONLY = new Set(['pos-table', 'pos-waves', 'pos-sim', 'pos-sin']); // no sentence in them

/** What chart `name` shows now, as caption text and as a file-name part. */
function settingsOf(name) {
  const spec = charts[name]();
  const { summary } = session;
  switch (spec.kind) {
    case 'head': return { text: `attention of layer ${spec.layer}, head ${spec.head}`, slug: `L${spec.layer}-H${spec.head}` };
    case 'lines': return { text: `attention of layer ${spec.layer}, head ${spec.head} as lines`, slug: `lines_L${spec.layer}-H${spec.head}` };
    case 'cross_attention': return { text: `cross-attention of decoder layer ${spec.layer}, head ${spec.head}`, slug: `cross_L${spec.layer}-H${spec.head}` };
    case 'grid': {
      const of = { cross: 'the cross-attention of ', encoder: 'the encoder\'s self-attention of ' }[spec.of] ?? '';
      return { text: `${of}every head of every layer (layer ${spec.layer}, head ${spec.head} framed)`, slug: `L${spec.layer}-H${spec.head}` };
    }
    case 'position_table': return { text: 'the learned position table', slug: '' };
    case 'position_waves': return { text: `position features ${spec.dims.join(', ')}`, slug: `features-${spec.dims.join('-')}` };
    case 'position_similarity': return { text: 'similarity of the learned position vectors', slug: '' };
    case 'sinusoidal_similarity': return { text: 'similarity of the sinusoidal position table', slug: '' };
    case 'norm': {
      const norm = (modelOf(name).summary ?? summary).norms[spec.index];
      return { text: `layer norm ${norm.step}`, slug: norm.step.replace(/\W+/g, '-') };
    }
    case 'step': {
      const step = summary.steps[spec.index];
      const head = step.shape.length === 3 ? `, head ${spec.head}` : '';
      return {
        text: `step ${spec.index + 1} of ${summary.steps.length}, ${step.title}${head}`,
        slug: `step${spec.index + 1}-${step.name.replace(/\W+/g, '-')}${head ? `-H${spec.head}` : ''}`,
      };
    }
    default: return { text: spec.kind, slug: '' };
  }
}

/** The first words of the sentence, for a file name: "the-animal-didnt". */
function sentenceSlug() {
  return state.text.toLowerCase().replace(/['’]/g, '').split(/[^\p{L}\p{N}]+/u).filter(Boolean).slice(0, 3).join('-').slice(0, 40);
}

function fileName(name, extension) {
  const parts = ['transformer-viz', name, settingsOf(name).slug, MODEL_ONLY.has(name) ? '' : sentenceSlug()];
  return `${parts.filter(Boolean).join('_')}.${extension}`;
}

/** `text` broken into lines no wider than `width` on `ctx`. */
function wrap(ctx, text, width) {
  const lines = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line ? `${line} ${word}` : word;
    if (line && ctx.measureText(next).width > width) { lines.push(line); line = word; } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

/** The chart drawn again at `scale` pixels a CSS pixel, with a caption under it. */
function slideImage(name, scale) {
  draw(name); // bring it up to date if it was off screen
  const canvas = canvasOf(name);
  const info = session.drawn[name];
  const [width, height] = [info?.width || canvas.width, info?.height || canvas.height];
  const chart = document.createElement('canvas');
  chart.width = Math.round(width * scale);
  chart.height = Math.round(height * scale);
  chart.dataset.scale = String(scale);
  const model = modelOf(name);
  model.viz.draw(chart, JSON.stringify(charts[name]())).free(); // its boxes: the on-screen drawing's (info)

  const out = document.createElement('canvas');
  const ctx = out.getContext('2d');
  const font = width < 420 ? 11 : 13;
  ctx.font = `${font}px sans-serif`;
  const sentence = state.text.length > 300 ? `${state.text.slice(0, 299)}…` : state.text;
  const lines = [
    ...wrap(ctx, `transformer-viz · ${modelTitle(model.name)} · ${settingsOf(name).text}`, width - 16),
    ...(MODEL_ONLY.has(name) ? [] : wrap(ctx, `“${sentence}”`, width - 16)),
  ];
  const lineHeight = Math.round(font * 1.4);
  const captionHeight = lines.length * lineHeight + 12;
  out.width = chart.width;
  out.height = chart.height + Math.round(captionHeight * scale);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(chart, 0, 0);
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  ctx.fillStyle = '#222';
  ctx.font = `${font}px sans-serif`;
  ctx.textBaseline = 'top';
  lines.forEach((line, i) => ctx.fillText(line, 8, height + 4 + i * lineHeight));
  return out;
}

/** A PNG of the chart at least twice its size on screen (its layout size times the zoom). */
function exportPng(name) {
  draw(name);
  const onScreen = canvasOf(name).getBoundingClientRect().width / (session.drawn[name]?.width || 1) || 1;
  const scale = Math.max(2, Math.ceil(window.devicePixelRatio || 1)) * Math.max(1, onScreen);
  slideImage(name, scale).toBlob((blob) => download(blob, fileName(name, 'png')), 'image/png');
}

/** The chart as SVG at its layout size: text stays text, large heatmaps are one image. */
function exportSvg(name) {
  draw(name);
  const canvas = canvasOf(name);
  const info = session.drawn[name];
  const text = modelOf(name).viz.svg(JSON.stringify(charts[name]()), info?.width || canvas.width, info?.height || canvas.height);
  download(new Blob([text], { type: 'image/svg+xml' }), fileName(name, 'svg'));
}

export function attachExport(name) {
  const box = document.querySelector(`.export[data-for="${name}"]`);
  const error = document.createElement('p'); // an export that fails says so beside its buttons
  error.id = `export-error-${name}`;
  error.className = 'field-error';
  error.setAttribute('role', 'alert');
  error.hidden = true;
  const buttons = [['Export PNG', exportPng], ['Export SVG', exportSvg]].map(([label, run]) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary';
    button.textContent = label;
    button.addEventListener('click', async () => {
      try {
        error.hidden = true;
        await valuesFor(charts[name]()); // still on the GPU: brought back first
        run(name);
      } catch (err) {
        showError(`Could not export: ${err.message ?? err}`, error.id);
      }
    });
    return button;
  });
  box.append(...buttons, error);
}
