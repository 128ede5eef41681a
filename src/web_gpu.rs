//! The page's GPU backend: WebGPU through wgpu (`crate::gpu`), computing the pass of the model
//! a `Viz` holds. Every readback is awaited, so a pass is a promise: the page awaits it, then
//! hands the finished pass to `Viz::install_pass`, which makes it the one every view reads.
//! Data still flows one way: text → tokens → one pass (here, on the GPU) → one trace → views.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use crate::analysis::translation::Decoding;
use crate::gpu::{GpuBackend, GpuContext};
use crate::trace::{Readback, Trace};
use crate::Transformer;

/// A GPU device with this model's weights on it (uploaded on the first pass).
#[wasm_bindgen]
pub struct GpuSession {
    inner: Rc<Inner>,
}

struct Inner {
    backend: GpuBackend,
    model: Rc<Transformer>,
    /// The most tokens a pass takes, as the page's CPU pass.
    limit: usize,
}

/// A finished pass on the GPU, until the page installs it (`Viz::install_pass`).
#[wasm_bindgen]
pub struct GpuPass {
    trace: Trace,
    milliseconds: f64,
    /// An encoder-decoder's decoding: its output, each step's choice, whether it finished.
    translation: Option<Decoding>,
}

/// A finished GPU pass's parts: the trace, its time, an encoder-decoder's decoding.
pub(crate) type GpuPassParts = (Trace, f64, Option<Decoding>);

impl GpuPass {
    pub(crate) fn into_parts(self) -> GpuPassParts {
        (self.trace, self.milliseconds, self.translation)
    }
}

fn rejection(message: impl std::fmt::Display) -> JsValue {
    JsError::new(&message.to_string()).into()
}

/// `Viz::open_gpu`: a promise of a session, or of the reason there is none.
pub(crate) fn open(model: Rc<Transformer>, limit: usize) -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move {
        let ctx = GpuContext::new().await.map_err(rejection)?;
        let backend = GpuBackend::new(ctx, &model.weights);
        Ok(GpuSession { inner: Rc::new(Inner { backend, model, limit }) }.into())
    })
}

#[wasm_bindgen]
impl GpuSession {
    /// The adapter and API, for the status line ("SwiftShader ... on BrowserWebGpu, a
    /// software adapter").
    pub fn adapter(&self) -> String {
        self.inner.backend.context().adapter_description()
    }

    /// Whether the adapter emulates a GPU on the CPU (its speed says nothing of a real GPU's).
    pub fn is_software(&self) -> bool {
        self.inner.backend.context().is_software()
    }

    /// Why the GPU stopped and its passes finish on the CPU, if it did.
    pub fn failure(&self) -> Option<String> {
        self.inner.backend.failure().map(|e| e.to_string())
    }

    /// Destroys the device, as a driver reset would (`device.destroy()`): the next pass
    /// fails over to the CPU. For the tests and the page's "simulate a lost GPU" link.
    pub fn lose_device(&self) {
        self.inner.backend.lose_device();
    }

    /// How many of the last pass's values are still on the device (`trace` with `read`).
    pub fn values_left(&self) -> usize {
        self.inner.backend.values_left()
    }

    /// Reads back what the last pass left on the device, in one readback: a promise of true
    /// once the values are in its trace (the one the page installed), of false when the GPU
    /// failed meanwhile (`failure` says why; the page then computes the pass on the CPU).
    pub fn read_rest(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move { Ok(inner.backend.read_rest().await.into()) })
    }

    /// The traced pass on `text` (cut to the page's limit), computed on the GPU: a promise of
    /// a `GpuPass`, rejected only for text the model cannot read (as `Viz::set_text` fails).
    /// The pass stays on the device and comes back in one readback at its end: with `read`
    /// (step names, `Viz::steps_read` of the views on screen), only those steps, the tokens,
    /// the logits and every norm's statistics, the rest staying on the device until
    /// `read_rest`; without, every step. An encoder-decoder's traced passes read back so too
    /// (its encoder's steps named behind `trace::SOURCE_STEP`), its greedy steps their logits.
    /// A kernel that fails or a device lost on the way: the pass is computed again on the
    /// CPU (`failure` says why), so the promise still gives a whole trace.
    pub fn trace(&self, text: String, read: Option<Vec<String>>) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let start = js_sys::Date::now();
            let readback = match read {
                None => Readback::Everything,
                Some(names) => Readback::views(names, &inner.model.config),
            };
            if inner.model.config.is_encoder_decoder() {
                // The text is the source: encoded once, decoded greedily, every pass on the GPU.
                let (trace, decoding) = inner.model.translate_reading(&inner.backend, &text, readback).await.map_err(rejection)?.into_parts();
                return Ok(GpuPass { trace, milliseconds: js_sys::Date::now() - start, translation: Some(decoding) }.into());
            }
            let encoding = inner.model.encode_within(&text, inner.limit).map_err(rejection)?;
            let trace = inner.model.trace_reading(&inner.backend, encoding, &text, readback).await.map_err(rejection)?;
            Ok(GpuPass { trace, milliseconds: js_sys::Date::now() - start, translation: None }.into())
        })
    }
}
