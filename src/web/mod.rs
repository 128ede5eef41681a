//! The browser API: the only code that touches wasm-bindgen and web-sys. The page creates
//! one `Viz` from the model's files, calls `set_text` as the student types, and asks for
//! views by name (`View`) on its canvases or as SVG text; a `GpuSession` computes the same
//! passes on WebGPU.
//!
//! Lowest first: `js` (errors, values, the clock), `canvas` (a fast plotters backend),
//! `generated` and `summary` (what the page is handed), `gpu_session`, `viz`, `views`,
//! `switches` (parts switched off) and `patch_sweep` (patching, a few patches at a time);
//! `training` (the `train` feature) is the page's trainer, in its own wasm file.

mod canvas;
mod generated;
pub mod gpu_session;
mod js;
mod patch_sweep;
mod summary;
mod switches;
#[cfg(feature = "train")]
pub mod training;
mod views;
pub mod viz;

#[cfg(feature = "threads")]
use wasm_bindgen::prelude::*;

pub use generated::NextToken;
pub use gpu_session::{GpuPass, GpuSession};
pub use views::ChartDrawn;
pub use viz::{Viz, PAGE_TOKENS};

/// Starts `count` threads (the page's own among them) that share every matrix product on
/// this module's memory: the threaded build only. Resolves to the count.
#[cfg(feature = "threads")]
#[wasm_bindgen]
pub async fn start_threads(count: usize) -> Result<usize, JsError> {
    crate::model::threads::start(count)
        .await
        .map_err(|e| JsError::new(&e))
}
