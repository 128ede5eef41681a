//! The native integration tests, one binary (each test binary links the whole crate with wgpu
//! and candle: one link instead of thirty). Each module is the file of the same name; see
//! tests/README.md for what each proves. The GGUF fuzzer (tests/fuzz_gguf.rs) stays a binary
//! of its own: its counting allocator measures the whole process.

#[path = "../common/mod.rs"]
mod common;

mod bpe;
mod cli_pipe;
mod config_limits;
mod encoder_decoder;
mod errors;
mod fixture_reference;
mod formulas;
mod fuzz;
mod gguf;
mod gpu_continued;
mod gpu_forward;
mod gpu_kernels;
mod gpu_readback;
mod head_scores;
mod interventions;
mod kv_cache;
mod logit_lens;
mod long_text;
mod minilm_behaviour;
mod minilm_reference;
mod quantized_matrix;
mod render;
mod rotary_view;
mod sampling;
mod section_views;
mod smollm2_reference;
mod stories;
mod threads;
mod trace_memory;
mod trainer;
