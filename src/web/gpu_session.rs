//! The page's GPU backend: WebGPU through wgpu (`crate::gpu`), computing the pass of the model
//! a `Viz` holds. Every readback is awaited, so a pass is a promise: the page awaits it, then
//! hands the finished pass to `Viz::install_pass`, which makes it the one every view reads.
//! Data still flows one way: text → tokens → one pass (here, on the GPU) → one trace → views.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::generated::{Generated, NextToken};
use super::js::now_ms;
use crate::gpu::{GpuBackend, GpuContext, GpuValue};
use crate::model::kv_cache::KvCache;
use crate::tokenize::Encoding;
use crate::trace::{Readback, Trace};
use crate::transformer::{Decoding, Keep, Kind, PassRequest, Transformer};

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
    /// A causal model's last GPU trace and its tokens' keys and values, on the device: the
    /// next pass continues it (`Transformer::continue_trace_with`).
    last: RefCell<Option<Trace>>,
    cache: RefCell<KvCache<GpuValue>>,
}

/// A finished pass on the GPU, until the page installs it (`Viz::install_pass`).
#[wasm_bindgen]
pub struct GpuPass {
    parts: GpuPassParts,
}

/// A finished GPU pass's parts.
pub(crate) struct GpuPassParts {
    pub trace: Trace,
    pub milliseconds: f64,
    /// An encoder-decoder's decoding: its output, each step's choice, whether it finished.
    pub translation: Option<Decoding>,
    /// Tokens taken from the last pass through the KV cache rather than computed again.
    pub reused: usize,
    /// The tokens and bytes the GPU's KV cache holds after the pass.
    pub cache: (usize, usize),
    /// The token a generation added (`GpuSession::generate`).
    pub generated: Option<Generated>,
}

impl GpuPass {
    pub(crate) fn into_parts(self) -> GpuPassParts {
        self.parts
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
        let inner = Inner {
            backend,
            model,
            limit,
            last: RefCell::new(None),
            cache: RefCell::new(KvCache::new()),
        };
        Ok(GpuSession {
            inner: Rc::new(inner),
        }
        .into())
    })
}

fn readback_of(read: Option<Vec<String>>) -> Readback {
    match read {
        None => Readback::Everything,
        Some(names) => Readback::views(names),
    }
}

impl Inner {
    /// A causal model's traced pass on `encoding`, continuing the session's last one through
    /// the KV cache on the device: only the tokens after the first change are computed.
    async fn continued(
        &self,
        encoding: Encoding,
        text: &str,
        readback: Readback,
        generated: Option<Generated>,
    ) -> Result<GpuPass, JsValue> {
        let start = now_ms();
        // Taken for the pass (the page runs one GPU pass at a time): a pass started meanwhile
        // would find neither and start from the first token.
        let previous = self.last.borrow_mut().take();
        let mut cache = std::mem::take(&mut *self.cache.borrow_mut());
        let request = PassRequest::tokens(encoding, text)
            .continuing(previous.as_ref(), &mut cache)
            .keeping(Keep::Steps(readback));
        let pass = self
            .model
            .pass(&self.backend, request)
            .await
            .map_err(rejection)?;
        drop(previous);
        let cached = (cache.len(), cache.bytes());
        let trace = pass.trace.expect("a pass that keeps its steps has a trace");
        if self.backend.failure().is_none() && self.model.kind() == Kind::Causal {
            *self.last.borrow_mut() = Some(trace.clone());
            *self.cache.borrow_mut() = cache;
        }
        let parts = GpuPassParts {
            trace,
            milliseconds: now_ms() - start,
            translation: pass.decoding,
            reused: pass.reused,
            cache: cached,
            generated,
        };
        Ok(GpuPass { parts })
    }
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

    /// Lets go of the last pass and its KV cache (the page computes on the CPU now): the
    /// next GPU pass starts from the first token.
    pub fn forget_last(&self) {
        *self.inner.last.borrow_mut() = None;
        *self.inner.cache.borrow_mut() = KvCache::new();
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
        wasm_bindgen_futures::future_to_promise(async move {
            Ok(inner.backend.read_rest().await.into())
        })
    }

    /// The traced pass on `text` (cut to the page's limit), computed on the GPU: a promise of
    /// a `GpuPass`, rejected only for text the model cannot read (as `Viz::set_text` fails).
    /// The pass stays on the device and comes back in one readback at its end: with `read`
    /// (step names, `Viz::steps_read` of the views on screen), only those steps, the tokens,
    /// the logits and every norm's statistics, the rest staying on the device until
    /// `read_rest`; without, every step. An encoder-decoder's traced passes read back so too
    /// (its encoder's steps named behind `trace::SOURCE_STEP`), its greedy steps their logits.
    /// A causal model's pass continues the session's last one through the KV cache on the
    /// device: only the tokens after the first change are computed (`Viz::install_pass`
    /// reports how many were reused).
    /// A kernel that fails or a device lost on the way: the pass is computed again on the
    /// CPU (`failure` says why), so the promise still gives a whole trace.
    pub fn trace(&self, text: String, read: Option<Vec<String>>) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let readback = readback_of(read);
            let encoding = inner
                .model
                .encode_within(&text, inner.limit)
                .map_err(rejection)?;
            let pass = inner.continued(encoding, &text, readback, None).await?;
            Ok(pass.into())
        })
    }

    /// The pass of a generated token (`Viz::draw_next_token`) on the GPU, through its KV
    /// cache: one new row of attention a layer. Read back as `trace` reads back; a promise of
    /// a `GpuPass` carrying the token, for `Viz::install_pass`.
    pub fn generate(&self, next: NextToken, read: Option<Vec<String>>) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let readback = readback_of(read);
            let NextToken {
                encoding,
                text,
                generated,
            } = next;
            Ok(inner
                .continued(encoding, &text, readback, Some(generated))
                .await?
                .into())
        })
    }
}
