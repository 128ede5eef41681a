//! transformer-viz: run a real, trained transformer on a sentence and keep every
//! intermediate value, so a page (or the CLI) can show how it computed.
//!
//! Data flows one way: text → `tokenize` → tokens → `model::forward` (one pass, any
//! config) → `trace::Trace` (ordered, named steps) → `draw` (views). `checkpoints` maps real
//! models' files onto `model::ModelConfig` and `model::Weights`; `formats` reads the bytes.
//! Only `web` touches the browser.

pub mod analysis;
pub mod checkpoints;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod draw;
pub mod error;
pub mod explain;
pub mod formats;
pub mod gpu;
pub mod model;
pub mod tensor;
pub mod tokenize;
pub mod trace;
#[cfg(any(not(target_arch = "wasm32"), feature = "train"))]
pub mod train;
pub mod transformer;

#[cfg(target_arch = "wasm32")]
pub mod web;

pub use error::{Result, VizError};
pub use trace::{Op, Trace};
pub use transformer::Transformer;
