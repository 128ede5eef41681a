//! The trainer: learns a byte-level BPE vocabulary and trains the lecture's
//! small transformers (sinusoidal positions, post-LN or pre-LN, ReLU FFN, tied embeddings) on
//! public-domain English, with candle's automatic differentiation on the CPU. The weights it
//! saves are the engine's own format, so the page and the CLI run them through the one
//! inference engine (`tests/engine/trainer.rs` checks the two forward passes agree).

//! In the page (the `train` feature, `web::training`) the same network, sampler and step
//! train in a worker; the parts that read and write files or time the run are native only.

pub mod adamw;
pub mod attention_softmax;
pub mod batches;
pub mod behaviour;
pub mod bias;
pub mod bigram;
pub mod corpus;
pub mod cpu_values;
pub mod cross_entropy;
#[cfg(not(target_arch = "wasm32"))]
pub mod curve;
pub mod head_probe;
pub mod in_page;
pub mod layer_norm;
pub mod network;
pub mod relu;
pub mod reversal;
#[cfg(not(target_arch = "wasm32"))]
pub mod reversal_run;
#[cfg(not(target_arch = "wasm32"))]
pub mod run;
pub mod step;
pub mod stories;
pub mod vocab;
#[cfg(not(target_arch = "wasm32"))]
pub mod vocab_report;
