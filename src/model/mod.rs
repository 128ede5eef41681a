//! The model: a config, its weights and the one forward pass that reads them.

pub mod attention;
pub mod backend;
pub mod config;
pub mod cpu;
pub mod cross_attention;
pub mod edits;
pub mod embed;
pub mod ffn;
pub mod forward;
pub mod kv_cache;
pub mod linear;
pub mod matrix;
pub mod norm;
pub mod position;
pub mod quantized;
pub mod record;
pub mod simd_exp;
#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
mod spinning_helpers;
pub mod threads;
pub mod weights;

pub use config::ModelConfig;
pub use forward::{forward, ForwardOutput};
pub use weights::Weights;
