// The loaded model and the latest forward pass: what every section reads to draw itself.
// Set by model-picker.js (model) and pass.js (each pass); read everywhere else.
import { exposeForTests } from './testing-hook.js';

export const session = {
  viz: null, // the wasm `Viz`: model, last trace, drawing
  modelName: null, // which model `viz` holds (models.js)
  config: null, // the model's config, fixed until another model is loaded
  summary: null, // the last pass: tokens, steps, norms, timing
  stepsByName: {}, // summary.steps by name, for the stepper's input shapes
  drawn: {}, // chart name -> what Rust reported when drawing it (geometry, values, labels)
  unread: false, // the pass came from the GPU and some of its values are still on the device
};
exposeForTests('Drawn', session.drawn); // read by the browser tests to click a given thumbnail

// What a chart drew comes from Rust as a handle (`ChartDrawn`), made into JS objects only when
// something reads `session.drawn[name]` (hover, the residual chart's chips, export, tests):
// made for every chart at every keystroke, they took about a tenth of the keystroke.
const unreadDrawn = {}; // chart name -> the handle of its last drawing, not read yet

/** Keeps `handle` (a `ChartDrawn`) as what chart `name` drew, made into objects when read. */
export function keepDrawn(name, handle) {
  unreadDrawn[name]?.free();
  unreadDrawn[name] = handle;
  let value = null;
  Object.defineProperty(session.drawn, name, {
    configurable: true,
    enumerable: true,
    get() {
      if (unreadDrawn[name] === handle) {
        delete unreadDrawn[name];
        try {
          value = handle.value();
        } finally {
          handle.free();
        }
      }
      return value;
    },
  });
}

/** Chart `name` shows no drawing of the pass (a message instead, or nothing yet). */
export function forgetDrawn(name) {
  unreadDrawn[name]?.free();
  delete unreadDrawn[name];
  Object.defineProperty(session.drawn, name, { configurable: true, enumerable: true, writable: true, value: null });
}
