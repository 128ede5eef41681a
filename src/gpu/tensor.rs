//! A tensor on the GPU: one storage buffer of values, row-major, its shape and the values'
//! type: f32, or for weights f16 (two to a 32-bit word; half the upload and the memory) or a
//! GGUF file's blocks as they lie in the file (Q8_0, Q4_1: the dense kernel dequantizes them
//! as it reads them, so a 4-bit model stays about 4-bit on the GPU).

use super::context::GpuContext;
use super::error::GpuError;
use crate::model::quantized::{GgmlType, QK};

/// How a tensor's values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuDtype {
    F32,
    /// IEEE half precision, two a word, the first in the low 16 bits (WGSL's `unpack2x16float`).
    F16,
    /// GGUF Q8_0 blocks of 32 values (34 bytes: an f16 scale, 32 signed bytes), back to back.
    Q8_0,
    /// GGUF Q4_1 blocks of 32 values (20 bytes: f16 scale and minimum, 16 bytes of nibbles).
    Q4_1,
}

pub struct GpuTensor {
    pub(crate) buffer: wgpu::Buffer,
    shape: Vec<usize>,
    dtype: GpuDtype,
}

impl GpuTensor {
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> GpuDtype {
        self.dtype
    }

    /// The number of values (the product of the shape).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer's size in bytes: four an f32 value or a pair of f16 ones, at least four
    /// (WebGPU binds no empty buffer).
    pub(crate) fn bytes(&self) -> u64 {
        self.buffer.size()
    }

    /// Checks a buffer of `words` 32-bit words against the device's binding limit before
    /// anything is allocated, and returns its size in bytes.
    pub(crate) fn checked_bytes(
        ctx: &GpuContext,
        words: usize,
        what: &str,
    ) -> Result<u64, GpuError> {
        let bytes = (words.max(1) as u64).saturating_mul(4);
        if bytes > ctx.max_binding {
            return Err(GpuError::TooLarge {
                what: what.to_string(),
                bytes,
                limit: ctx.max_binding,
            });
        }
        Ok(bytes)
    }

    /// Copies `values` (row-major, `shape`) to a new buffer.
    pub fn upload(
        ctx: &GpuContext,
        values: &[f32],
        shape: &[usize],
        what: &str,
    ) -> Result<Self, GpuError> {
        Self::check_count(values.len(), shape, what)?;
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Self::from_bytes(ctx, &data, shape, GpuDtype::F32, what)
    }

    /// Copies f16 `values` (row-major, `shape`) to a new buffer, two a word.
    pub fn upload_f16(
        ctx: &GpuContext,
        values: &[half::f16],
        shape: &[usize],
        what: &str,
    ) -> Result<Self, GpuError> {
        Self::check_count(values.len(), shape, what)?;
        let mut data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        data.resize(data.len().div_ceil(4) * 4, 0);
        Self::from_bytes(ctx, &data, shape, GpuDtype::F16, what)
    }

    /// Copies a matrix of `shape` (rows, cols) stored as GGUF `kind` blocks (`bytes`, row after
    /// row, as in the file) to a new buffer, unchanged. Each row must be whole blocks.
    pub fn upload_blocks(
        ctx: &GpuContext,
        kind: GgmlType,
        bytes: &[u8],
        shape: [usize; 2],
        what: &str,
    ) -> Result<Self, GpuError> {
        let dtype = match kind {
            GgmlType::Q8_0 => GpuDtype::Q8_0,
            GgmlType::Q4_1 => GpuDtype::Q4_1,
            other => {
                return Err(GpuError::Shape {
                    what: "upload",
                    detail: format!(
                        "{what}: {} is not a block format the GPU reads",
                        other.name()
                    ),
                })
            }
        };
        let [rows, cols] = shape;
        let expected = rows.checked_mul(cols).and_then(|n| kind.bytes_for(n));
        if cols % QK != 0 || expected != Some(bytes.len()) {
            return Err(GpuError::Shape {
                what: "upload",
                detail: format!("{what}: {} bytes of {} blocks for a ({rows}, {cols}) matrix (rows of whole {QK}-value blocks)", bytes.len(), kind.name()),
            });
        }
        let mut data = bytes.to_vec();
        data.resize(data.len().div_ceil(4) * 4, 0); // Q8_0's 34-byte blocks need not end on a word
        Self::from_bytes(ctx, &data, &shape, dtype, what)
    }

    fn check_count(values: usize, shape: &[usize], what: &str) -> Result<(), GpuError> {
        let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if count != Some(values) {
            return Err(GpuError::Shape {
                what: "upload",
                detail: format!("{what}: {values} values for shape {shape:?}"),
            });
        }
        Ok(())
    }

    fn from_bytes(
        ctx: &GpuContext,
        data: &[u8],
        shape: &[usize],
        dtype: GpuDtype,
        what: &str,
    ) -> Result<Self, GpuError> {
        let bytes = Self::checked_bytes(ctx, data.len().div_ceil(4), what)?;
        ctx.check()?;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if !data.is_empty() {
            ctx.queue.write_buffer(&buffer, 0, data);
        }
        ctx.check()?;
        Ok(GpuTensor {
            buffer,
            shape: shape.to_vec(),
            dtype,
        })
    }

    /// Rows `lo..hi` of a (rows, width) tensor, copied on the device: (hi - lo, width).
    pub(crate) fn slice_rows(
        &self,
        ctx: &GpuContext,
        lo: usize,
        hi: usize,
    ) -> Result<Self, GpuError> {
        let &[rows, width] = self.shape() else {
            return Err(GpuError::Shape {
                what: "rows",
                detail: format!("{:?} is not (rows, width)", self.shape()),
            });
        };
        if lo > hi || hi > rows || self.dtype != GpuDtype::F32 {
            return Err(GpuError::Shape {
                what: "rows",
                detail: format!("rows {lo}..{hi} of {:?}", self.shape()),
            });
        }
        let out = Self::output(ctx, &[hi - lo, width], "rows")?;
        let bytes = ((hi - lo) * width * 4) as u64;
        if bytes > 0 {
            ctx.record(|encoder| {
                encoder.copy_buffer_to_buffer(
                    &self.buffer,
                    (lo * width * 4) as u64,
                    &out.buffer,
                    0,
                    bytes,
                )
            });
        }
        ctx.check()?;
        Ok(out)
    }

    /// `first` (heads, P, w) then `then` (heads, n, w) along the middle axis, copied on the
    /// device: (heads, P + n, w), as a KV cache grows.
    pub(crate) fn join_middle(
        ctx: &GpuContext,
        first: &Self,
        then: &Self,
    ) -> Result<Self, GpuError> {
        let (&[heads, p, w], &[heads2, n, w2]) = (first.shape(), then.shape()) else {
            return Err(GpuError::Shape {
                what: "join",
                detail: format!(
                    "{:?} and {:?} must be (heads, T, width)",
                    first.shape(),
                    then.shape()
                ),
            });
        };
        if heads != heads2 || w != w2 || first.dtype != GpuDtype::F32 || then.dtype != GpuDtype::F32
        {
            return Err(GpuError::Shape {
                what: "join",
                detail: format!("{:?} then {:?}", first.shape(), then.shape()),
            });
        }
        let out = Self::output(ctx, &[heads, p + n, w], "joined")?;
        let (a, b) = ((p * w * 4) as u64, (n * w * 4) as u64); // one head's bytes in each
        ctx.record(|encoder| {
            for h in 0..heads as u64 {
                if a > 0 {
                    encoder.copy_buffer_to_buffer(
                        &first.buffer,
                        h * a,
                        &out.buffer,
                        h * (a + b),
                        a,
                    );
                }
                if b > 0 {
                    encoder.copy_buffer_to_buffer(
                        &then.buffer,
                        h * b,
                        &out.buffer,
                        h * (a + b) + a,
                        b,
                    );
                }
            }
        });
        ctx.check()?;
        Ok(out)
    }

    /// The first `n` of (heads, P, w) along the middle axis, copied on the device:
    /// (heads, n, w), as a KV cache forgets the tokens after a change.
    pub(crate) fn first_middle(&self, ctx: &GpuContext, n: usize) -> Result<Self, GpuError> {
        let &[heads, p, w] = self.shape() else {
            return Err(GpuError::Shape {
                what: "first tokens",
                detail: format!("{:?} is not (heads, T, width)", self.shape()),
            });
        };
        if n > p || self.dtype != GpuDtype::F32 {
            return Err(GpuError::Shape {
                what: "first tokens",
                detail: format!("{n} tokens of {:?}", self.shape()),
            });
        }
        let out = Self::output(ctx, &[heads, n, w], "first tokens")?;
        let (from, to) = ((p * w * 4) as u64, (n * w * 4) as u64); // one head's bytes in each
        if to > 0 {
            ctx.record(|encoder| {
                for h in 0..heads as u64 {
                    encoder.copy_buffer_to_buffer(&self.buffer, h * from, &out.buffer, h * to, to);
                }
            });
        }
        ctx.check()?;
        Ok(out)
    }

    /// A new buffer for a kernel's output, of `shape` (its values are left as the device
    /// clears them: zero).
    pub(crate) fn output(ctx: &GpuContext, shape: &[usize], what: &str) -> Result<Self, GpuError> {
        let count = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| GpuError::Shape {
                what: "output",
                detail: format!("{what}: shape {shape:?} overflows"),
            })?;
        let bytes = Self::checked_bytes(ctx, count, what)?;
        let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(GpuTensor {
            buffer,
            shape: shape.to_vec(),
            dtype: GpuDtype::F32,
        })
    }
}

/// The readback: how a tensor's values cross back from the device to the CPU (here, beside
/// the tensor, so that the context below knows nothing of tensors).
impl GpuContext {
    /// Copies a tensor back to the CPU. Asynchronous, as WebGPU requires; natively this waits
    /// for the device to finish.
    pub async fn read(&self, t: &GpuTensor) -> Result<Vec<f32>, GpuError> {
        Ok(self.read_all(&[t]).await?.pop().expect("one tensor read"))
    }

    /// Copies tensors back to the CPU in one submission and one wait: each readback is a round
    /// trip to the device (in a browser, to its GPU process), so tensors needed together are
    /// read together.
    pub async fn read_all(&self, tensors: &[&GpuTensor]) -> Result<Vec<Vec<f32>>, GpuError> {
        self.check()?;
        if let Some(t) = tensors.iter().find(|t| t.dtype() != GpuDtype::F32) {
            return Err(GpuError::Readback(format!(
                "only f32 tensors are read back, not {:?} weights",
                t.dtype()
            )));
        }
        let staging: Vec<wgpu::Buffer> = tensors
            .iter()
            .map(|t| {
                let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("readback"),
                    size: t.bytes(),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                self.record(|encoder| {
                    encoder.copy_buffer_to_buffer(&t.buffer, 0, &buffer, 0, t.bytes())
                });
                buffer
            })
            .collect();
        // The commands that compute the tensors and the copies out, in one submission.
        self.flush();
        let receivers: Vec<_> = staging
            .iter()
            .map(|buffer| {
                let (sender, receiver) = futures_channel::oneshot::channel();
                buffer
                    .slice(..)
                    .map_async(wgpu::MapMode::Read, move |result| {
                        let _ = sender.send(result);
                    });
                receiver
            })
            .collect();
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        let mut all = Vec::with_capacity(tensors.len());
        for ((receiver, buffer), t) in receivers.into_iter().zip(&staging).zip(tensors) {
            receiver
                .await
                .map_err(|_| {
                    GpuError::Readback("the device was lost before the copy finished".into())
                })?
                .map_err(|e| GpuError::Readback(e.to_string()))?;
            let values = {
                let view = buffer
                    .slice(..)
                    .get_mapped_range()
                    .map_err(|e| GpuError::Readback(e.to_string()))?;
                let mut values: Vec<f32> = view
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                values.truncate(t.len());
                values
            };
            buffer.unmap();
            all.push(values);
        }
        self.check()?;
        Ok(all)
    }
}
