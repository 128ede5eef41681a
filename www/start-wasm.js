// Starts the WebAssembly module, as Trunk's default loader does, but from a file: the page's
// Content-Security-Policy allows no inline script. Trunk.toml's `pattern_script` puts
// <script type="module" src="start-wasm.js" data-glue="…" data-wasm="…"> in the built page,
// with the hashed names of wasm-bindgen's glue and of the wasm file.
const { glue, wasm } = document.querySelector('script[data-glue]').dataset;
const bindings = await import(glue);
const exports = await bindings.default({ module_or_path: wasm }); // the module's exports, memory among them
window.wasmBindings = bindings; // js/loading.js waits for these two
dispatchEvent(new CustomEvent('TrunkApplicationStarted', { detail: { wasm: exports } })); // as Trunk's own loader does
