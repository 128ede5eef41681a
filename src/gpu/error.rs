//! What can go wrong on the GPU: each a reason to fall back to the CPU, none a panic.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum GpuError {
    #[error("no GPU adapter was found ({0})")]
    NoAdapter(String),

    #[error("the GPU refused a device: {0}")]
    DeviceRequest(String),

    #[error(
        "a GPU buffer of {bytes} bytes for {what} exceeds the device's limit of {limit} bytes"
    )]
    TooLarge {
        what: String,
        bytes: u64,
        limit: u64,
    },

    #[error("{what}: shapes do not fit: {detail}")]
    Shape { what: &'static str, detail: String },

    #[error("the GPU kernel `{kernel}` failed: {detail}")]
    Kernel {
        kernel: &'static str,
        detail: String,
    },

    #[error("the GPU device is gone: {0}")]
    DeviceLost(String),

    #[error("reading a result back from the GPU failed: {0}")]
    Readback(String),
}

impl From<GpuError> for crate::error::VizError {
    fn from(e: GpuError) -> Self {
        crate::error::VizError::Gpu(e.to_string())
    }
}
