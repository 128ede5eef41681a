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
