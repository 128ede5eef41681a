// The page's helper thread (`model::team`, member 1): a second copy of the model that computes
// the second half of every dense layer of each forward pass the page runs, so that a pass uses
// both of the machine's cores. Started by js/helper-thread.js once the first view is drawn; the page works
// alone if this worker cannot start or stops answering.
let viz = null;
let wasm = null; // the module's exports: its memory, measured for the page

function fail(err) {
  self.postMessage({ failed: String(err?.message ?? err) });
}

self.onmessage = async ({ data }) => {
  if (data.start) {
    const s = data.start;
    try {
      const glue = await import(s.glue);
      wasm = await glue.default({ module_or_path: s.wasm });
      viz = new glue.Viz(s.model, s.config, s.tokenizer, new Uint8Array(s.weights));
      viz.join_team(s.buffer, 1, undefined);
      self.postMessage({ ready: true });
    } catch (err) {
      fail(err);
    }
  } else if (data.ids && viz) {
    try {
      viz.help(data.ids, data.reused ?? 0);
      self.postMessage({ memory: wasm.memory.buffer.byteLength });
    } catch (err) {
      fail(err);
    }
  }
};
