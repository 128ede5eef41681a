//! A compiled compute pipeline and how it is dispatched: binding 0 is a small uniform block of
//! the kernel's sizes and settings, bindings 1, 2, ... its tensors in the order the WGSL
//! declares them.

use super::context::{GpuContext, Kernel};
use super::error::GpuError;
use super::tensor::GpuTensor;

/// WebGPU's guaranteed limit on workgroups along one dimension of a dispatch.
const MAX_WORKGROUPS_PER_DIMENSION: u32 = 65_535;

/// One uniform value: sizes and flags as u32, scales and epsilons as f32 (both 4 bytes).
#[derive(Clone, Copy)]
pub(crate) enum Param {
    U(u32),
    F(f32),
}

impl Kernel {
    /// Records one run of the kernel over `workgroups`, reading and writing `tensors`, for the
    /// next submission (`GpuContext::flush`, which a readback does first). Nothing waits for
    /// it: an error is caught by the caller's error scope (one for each pass: waiting for a
    /// scope after every dispatch would be a round trip to the device each) or else marks the
    /// context broken.
    pub(crate) fn dispatch(
        &self,
        ctx: &GpuContext,
        params: &[Param],
        tensors: &[&GpuTensor],
        workgroups: [u32; 3],
    ) -> Result<(), GpuError> {
        if workgroups.iter().any(|&n| n > MAX_WORKGROUPS_PER_DIMENSION) {
            return Err(GpuError::Shape { what: self.name, detail: format!("{workgroups:?} workgroups exceed {MAX_WORKGROUPS_PER_DIMENSION} along one dimension") });
        }
        // A uniform block is a whole number of 16-byte rows.
        let mut bytes: Vec<u8> = params
            .iter()
            .flat_map(|p| match *p {
                Param::U(v) => v.to_le_bytes(),
                Param::F(v) => v.to_le_bytes(),
            })
            .collect();
        bytes.resize(bytes.len().div_ceil(16).max(1) * 16, 0);
        ctx.check()?;
        // Written through the queue, as every upload is (a buffer mapped at creation cannot
        // be made on a destroyed device).
        let uniform = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(self.name),
            size: bytes.len() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ctx.queue.write_buffer(&uniform, 0, &bytes);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: uniform.as_entire_binding(),
        }];
        for (i, t) in tensors.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: t.buffer.as_entire_binding(),
            });
        }
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(self.name),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        ctx.record(|encoder| {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(self.name),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        });
        ctx.check()
    }
}

/// `n` workgroups (one a row, say) laid out as (x, y) within the per-dimension limit; a kernel
/// finds its index as `id.x + id.y * num_workgroups.x` and skips indices past `n`.
pub(crate) fn grid(n: usize, what: &'static str) -> Result<[u32; 3], GpuError> {
    let x = n.clamp(1, MAX_WORKGROUPS_PER_DIMENSION as usize);
    let y = n.div_ceil(x).max(1);
    if y > MAX_WORKGROUPS_PER_DIMENSION as usize {
        return Err(GpuError::Shape {
            what,
            detail: format!("{n} workgroups is more than one dispatch holds"),
        });
    }
    Ok([x as u32, y as u32, 1])
}

/// A size as the u32 a kernel reads, or a shape error past 2^32 - 1.
pub(crate) fn size(n: usize, what: &'static str) -> Result<u32, GpuError> {
    u32::try_from(n).map_err(|_| GpuError::Shape {
        what,
        detail: format!("{n} does not fit a 32-bit index"),
    })
}

/// Every kernel but the dense layer's weights reads and writes f32.
pub(crate) fn require_f32(tensors: &[&GpuTensor], what: &'static str) -> Result<(), GpuError> {
    match tensors
        .iter()
        .find(|t| t.dtype() != super::tensor::GpuDtype::F32)
    {
        Some(t) => Err(GpuError::Shape {
            what,
            detail: format!("a {:?} tensor where f32 is read", t.dtype()),
        }),
        None => Ok(()),
    }
}
