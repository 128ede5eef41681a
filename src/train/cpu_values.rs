//! The f32 values behind a contiguous tensor on the CPU: what the trainer's fused operations
//! (`cross_entropy.rs`, `layer_norm.rs`, `attention_softmax.rs`) read their inputs from.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, Layout, Result as CResult};

/// The f32 values of a contiguous tensor's storage; `op` names the operation in the error.
pub fn f32_values<'a>(storage: &'a CpuStorage, layout: &Layout, op: &str) -> CResult<&'a [f32]> {
    let CpuStorage::F32(data) = storage else {
        candle_core::bail!("{op}: f32 tensors only, not {:?}", storage.dtype());
    };
    let Some((start, end)) = layout.contiguous_offsets() else {
        candle_core::bail!("{op}: the tensors must be contiguous");
    };
    Ok(&data[start..end])
}
