//! A compiled compute pipeline and how it is dispatched: binding 0 is a small uniform block of
//! the kernel's sizes and settings, bindings 1, 2, ... its tensors in the order the WGSL
//! declares them.

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::error::GpuError;
use super::tensor::GpuTensor;

/// WebGPU's guaranteed limit on workgroups along one dimension of a dispatch.
const MAX_WORKGROUPS_PER_DIMENSION: u32 = 65_535;

pub(crate) struct Kernel {
    name: &'static str,
    pipeline: wgpu::ComputePipeline,
}

/// One uniform value: sizes and flags as u32, scales and epsilons as f32 (both 4 bytes).
#[derive(Clone, Copy)]
pub(crate) enum Param {
    U(u32),
    F(f32),
}

impl Kernel {
    pub(crate) async fn compile(ctx: &GpuContext, name: &'static str, source: &'static str) -> Result<Self, GpuError> {
        ctx.check()?;
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(name),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline = ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(name),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        if let Some(e) = scope.pop().await {
            return Err(GpuError::Kernel { kernel: name, detail: e.to_string() });
        }
        Ok(Kernel { name, pipeline })
    }

    /// Runs the kernel once over `workgroups`, reading and writing `tensors`.
    pub(crate) async fn dispatch(&self, ctx: &GpuContext, params: &[Param], tensors: &[&GpuTensor], workgroups: [u32; 3]) -> Result<(), GpuError> {
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
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let uniform = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(self.name),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
        for (i, t) in tensors.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry { binding: i as u32 + 1, resource: t.buffer.as_entire_binding() });
        }
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(self.name),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(self.name) });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(self.name), timestamp_writes: None });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        }
        ctx.queue.submit([encoder.finish()]);
        if let Some(e) = scope.pop().await {
            return Err(GpuError::Kernel { kernel: self.name, detail: e.to_string() });
        }
        ctx.check()
    }
}

/// `n` workgroups (one a row, say) laid out as (x, y) within the per-dimension limit; a kernel
/// finds its index as `id.x + id.y * num_workgroups.x` and skips indices past `n`.
pub(crate) fn grid(n: usize, what: &'static str) -> Result<[u32; 3], GpuError> {
    let x = n.clamp(1, MAX_WORKGROUPS_PER_DIMENSION as usize);
    let y = n.div_ceil(x).max(1);
    if y > MAX_WORKGROUPS_PER_DIMENSION as usize {
        return Err(GpuError::Shape { what, detail: format!("{n} workgroups is more than one dispatch holds") });
    }
    Ok([x as u32, y as u32, 1])
}

/// A size as the u32 a kernel reads, or a shape error past 2^32 - 1.
pub(crate) fn size(n: usize, what: &'static str) -> Result<u32, GpuError> {
    u32::try_from(n).map_err(|_| GpuError::Shape { what, detail: format!("{n} does not fit a 32-bit index") })
}

/// Every kernel but the dense layer's weights reads and writes f32.
pub(crate) fn require_f32(tensors: &[&GpuTensor], what: &'static str) -> Result<(), GpuError> {
    match tensors.iter().find(|t| t.dtype() != super::tensor::GpuDtype::F32) {
        Some(t) => Err(GpuError::Shape { what, detail: format!("a {:?} tensor where f32 is read", t.dtype()) }),
        None => Ok(()),
    }
}
