//! The trainer (native only): learns a byte-level BPE vocabulary and trains the lecture's
//! small transformers (sinusoidal positions, post-LN or pre-LN, ReLU FFN, tied embeddings) on
//! public-domain English, with candle's automatic differentiation on the CPU. The weights it
//! saves are the engine's own format, so the page and the CLI run them through the one
//! inference engine (`tests/engine/trainer.rs` checks the two forward passes agree).

pub mod adamw;
pub mod batches;
pub mod behaviour;
pub mod bigram;
pub mod corpus;
pub mod curve;
pub mod head_probe;
pub mod network;
pub mod reversal;
pub mod run;
pub mod stories;
pub mod vocab;
pub mod vocab_report;
