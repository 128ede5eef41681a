//! The passes the tests ask for, each one `Transformer::pass` request, waited for on any
//! backend (a CPU pass is complete at once; a GPU's is awaited with `pollster`).

use transformer_viz::model::backend::Backend;
use transformer_viz::model::kv_cache::KvCache;
use transformer_viz::tokenize::Encoding;
use transformer_viz::trace::{Readback, Trace};
use transformer_viz::transformer::{Keep, PassRequest, Translation};
use transformer_viz::{Result, Transformer};

/// A traced pass that continued an earlier one: its trace and the tokens it took from it.
pub struct Continued {
    pub trace: Trace,
    pub reused: usize,
}

/// Every step of a pass on `text`, kept on `backend` (the GPU's way).
pub fn every_step<B: Backend>(model: &Transformer, backend: &B, text: &str) -> Result<Trace> {
    let request = PassRequest::text(text).keeping(Keep::Steps(Readback::Everything));
    Ok(pollster::block_on(model.pass(backend, request))?.into_trace())
}

/// `every_step` on tokens from `encode`.
pub fn every_step_of<B: Backend>(
    model: &Transformer,
    backend: &B,
    encoding: Encoding,
    text: &str,
) -> Result<Trace> {
    reading(model, backend, encoding, text, Readback::Everything)
}

/// Every step kept, the device bringing back with the pass what `readback` names.
pub fn reading<B: Backend>(
    model: &Transformer,
    backend: &B,
    encoding: Encoding,
    text: &str,
    readback: Readback,
) -> Result<Trace> {
    let request = PassRequest::tokens(encoding, text).keeping(Keep::Steps(readback));
    Ok(pollster::block_on(model.pass(backend, request))?.into_trace())
}

/// Every step kept, continuing `previous` through `cache` (on the backend's device).
pub fn continued<B: Backend>(
    model: &Transformer,
    backend: &B,
    encoding: Encoding,
    text: &str,
    previous: Option<&Trace>,
    cache: &mut KvCache<B::Heads>,
    readback: Readback,
) -> Result<Continued> {
    let request = PassRequest::tokens(encoding, text)
        .continuing(previous, cache)
        .keeping(Keep::Steps(readback));
    let pass = pollster::block_on(model.pass(backend, request))?;
    let reused = pass.reused;
    Ok(Continued {
        trace: pass.into_trace(),
        reused,
    })
}

/// An encoder-decoder's translation on `backend`, its final passes' every step kept and
/// read back as `readback` says.
pub fn translation<B: Backend>(
    model: &Transformer,
    backend: &B,
    source: &str,
    readback: Readback,
) -> Result<Translation> {
    let request = PassRequest::text(source).keeping(Keep::Steps(readback));
    let pass = pollster::block_on(model.pass(backend, request))?;
    let (output, steps, finished) = pass.decoding.clone().unwrap_or_default();
    Ok(Translation {
        trace: pass.into_trace(),
        output,
        steps,
        finished,
    })
}
