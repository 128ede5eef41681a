//! A tensor on the GPU: one storage buffer of f32 values, row-major, and its shape.

use super::context::GpuContext;
use super::error::GpuError;

pub struct GpuTensor {
    pub(crate) buffer: wgpu::Buffer,
    shape: Vec<usize>,
}

impl GpuTensor {
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The number of values (the product of the shape).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer's size in bytes: four a value, at least four (WebGPU binds no empty buffer).
    pub(crate) fn bytes(&self) -> u64 {
        self.buffer.size()
    }

    /// Checks a buffer of `values` f32 against the device's binding limit before anything is
    /// allocated, and returns its size in bytes.
    pub(crate) fn checked_bytes(ctx: &GpuContext, values: usize, what: &str) -> Result<u64, GpuError> {
        let bytes = (values.max(1) as u64).checked_mul(4).unwrap_or(u64::MAX);
        if bytes > ctx.max_binding {
            return Err(GpuError::TooLarge { what: what.to_string(), bytes, limit: ctx.max_binding });
        }
        Ok(bytes)
    }

    /// Copies `values` (row-major, `shape`) to a new buffer.
    pub fn upload(ctx: &GpuContext, values: &[f32], shape: &[usize], what: &str) -> Result<Self, GpuError> {
        let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if count != Some(values.len()) {
            return Err(GpuError::Shape { what: "upload", detail: format!("{what}: {} values for shape {shape:?}", values.len()) });
        }
        let bytes = Self::checked_bytes(ctx, values.len(), what)?;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if !values.is_empty() {
            let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            ctx.queue.write_buffer(&buffer, 0, &data);
        }
        Ok(GpuTensor { buffer, shape: shape.to_vec() })
    }

    /// A new buffer for a kernel's output, of `shape` (its values are left as the device
    /// clears them: zero).
    pub(crate) fn output(ctx: &GpuContext, shape: &[usize], what: &str) -> Result<Self, GpuError> {
        let count = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| GpuError::Shape { what: "output", detail: format!("{what}: shape {shape:?} overflows") })?;
        let bytes = Self::checked_bytes(ctx, count, what)?;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(GpuTensor { buffer, shape: shape.to_vec() })
    }
}
