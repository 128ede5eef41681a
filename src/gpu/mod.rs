//! The GPU backend's kernels: WGSL compute shaders run through `wgpu`, one kernel a file
//! (`dense.wgsl`) beside its Rust host (`dense.rs`), whose doc names the CPU twin in
//! `crate::model` that it must agree with (`tests/engine/gpu_kernels.rs` checks each pair on random
//! shapes).
//!
//! Natively wgpu finds Vulkan, Metal or DX12 (on a machine without a GPU, Mesa's lavapipe,
//! a CPU Vulkan driver). Every readback is asynchronous (`GpuContext::read`), as the browser
//! requires; natively the CLI and the tests wait on it with `pollster`.

mod activation;
mod attention_scores;
mod backend;
mod causal_mask;
mod context;
mod dense;
mod error;
mod kernel;
mod layer_norm;
mod residual_add;
mod rotary;
mod softmax;
mod splice;
mod swap_heads;
mod swiglu_gate;
mod tensor;
mod weighted_values;

pub use activation::activation;
pub use attention_scores::attention_scores;
pub use backend::{GpuBackend, GpuValue};
pub use causal_mask::causal_mask;
pub use context::GpuContext;
pub use dense::dense;
pub use error::GpuError;
pub use layer_norm::{layer_norm, NormOutput};
pub use residual_add::residual_add;
pub use rotary::rotary;
pub use softmax::softmax_rows;
pub use splice::splice;
pub use swap_heads::swap_heads;
pub use swiglu_gate::swiglu_gate;
pub use tensor::{GpuDtype, GpuTensor};
pub use weighted_values::weighted_values;
