//! One GPU device and its queue, the kernels compiled for it, and the two ways data crosses
//! between CPU and GPU: `GpuTensor::upload` and the asynchronous `GpuContext::read`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::error::GpuError;

pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    /// The largest storage buffer a kernel may bind, in bytes.
    pub(crate) max_binding: u64,
    /// Compiled pipelines by kernel name: each WGSL file is compiled once per device.
    kernels: Mutex<HashMap<&'static str, Arc<Kernel>>>,
    /// The commands recorded since the last submission: a pass's kernels and copies go to the
    /// device in one submission (`flush`), not one each.
    recording: Mutex<Option<wgpu::CommandEncoder>>,
    /// The first error no scope caught (wgpu's default is to panic on it), or the device's
    /// loss: once set, every operation fails with it and the caller falls back to the CPU.
    broken: Arc<Mutex<Option<String>>>,
}

impl GpuContext {
    /// The first adapter wgpu offers (a discrete GPU before an integrated one before a
    /// software one) and a device with the adapter's own buffer limits, so that a large
    /// unembedding fits where the hardware allows it.
    pub async fn new() -> Result<Self, GpuError> {
        // A browser without WebGPU (no `navigator.gpu`, or no adapter behind it).
        #[cfg(target_arch = "wasm32")]
        if !wgpu::util::is_browser_webgpu_supported().await {
            return Err(GpuError::NoAdapter(
                "this browser offers no WebGPU adapter".into(),
            ));
        }
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let offered = adapter.limits();
        let required_limits = wgpu::Limits {
            max_storage_buffer_binding_size: offered.max_storage_buffer_binding_size,
            max_buffer_size: offered.max_buffer_size,
            ..wgpu::Limits::defaults()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("transformer-viz"),
                required_limits,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::DeviceRequest(e.to_string()))?;
        let max_binding = offered
            .max_storage_buffer_binding_size
            .min(offered.max_buffer_size);
        let broken = Arc::new(Mutex::new(None::<String>));
        let record = |sink: &Arc<Mutex<Option<String>>>, message: String| {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(message);
        };
        let sink = broken.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| record(&sink, e.to_string())));
        let sink = broken.clone();
        device.set_device_lost_callback(move |reason, message| {
            record(
                &sink,
                format!("the device was lost ({reason:?}): {message}"),
            )
        });
        Ok(GpuContext {
            device,
            queue,
            info: adapter.get_info(),
            max_binding,
            kernels: Mutex::new(HashMap::new()),
            recording: Mutex::new(None),
            broken,
        })
    }

    /// The adapter's name and API, as the status line shows them ("llvmpipe (LLVM 19.1.7,
    /// 256 bits) on Vulkan", a software adapter).
    pub fn adapter_description(&self) -> String {
        let kind = match self.info.device_type {
            wgpu::DeviceType::Cpu => ", a software adapter",
            _ => "",
        };
        let name = if self.info.name.is_empty() {
            "an unnamed adapter"
        } else {
            self.info.name.as_str()
        };
        format!("{name} on {:?}{kind}", self.info.backend)
    }

    /// Whether the adapter runs on the CPU (lavapipe, SwiftShader): its speed says nothing
    /// about a real GPU's.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Fails once the device is lost or an uncaught error has happened.
    pub(crate) fn check(&self) -> Result<(), GpuError> {
        match self
            .broken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            Some(message) => Err(GpuError::DeviceLost(message.clone())),
            None => Ok(()),
        }
    }

    /// The kernel compiled from `source`, compiling it the first time it is asked for.
    pub(crate) fn kernel(
        &self,
        name: &'static str,
        source: &'static str,
    ) -> Result<Arc<Kernel>, GpuError> {
        if let Some(k) = self
            .kernels
            .lock()
            .expect("no kernel compile panics")
            .get(name)
        {
            return Ok(k.clone());
        }
        let k = Arc::new(Kernel::compile(self, name, source)?);
        self.kernels
            .lock()
            .expect("no kernel compile panics")
            .insert(name, k.clone());
        Ok(k)
    }

    /// Records commands (a kernel's run, a copy) for the next submission.
    pub(crate) fn record(&self, commands: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        let encoder = recording.get_or_insert_with(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("pass"),
                })
        });
        commands(encoder);
    }

    /// Submits the commands recorded so far. Uploads (`queue.write_buffer`) made before it
    /// reach the device first, as WebGPU orders them; every buffer is written once, before
    /// the commands that read it are recorded.
    pub(crate) fn flush(&self) {
        // Submitted under the lock: commands recorded later (on another thread, say a test's)
        // must reach the queue after these, which may compute what they read.
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(encoder) = recording.take() {
            self.queue.submit([encoder.finish()]);
        }
    }
}

/// A compiled compute pipeline (dispatched by `kernel.rs`).
pub(crate) struct Kernel {
    pub(super) name: &'static str,
    pub(super) pipeline: wgpu::ComputePipeline,
}

impl Kernel {
    /// Compiles `source`. A compilation error is caught by the error scope the caller has
    /// pushed (`GpuBackend` pushes one for each pass), or else marks the context broken.
    pub(crate) fn compile(
        ctx: &GpuContext,
        name: &'static str,
        source: &'static str,
    ) -> Result<Self, GpuError> {
        ctx.check()?;
        let module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        Ok(Kernel { name, pipeline })
    }
}
