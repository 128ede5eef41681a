//! The forward pass's arithmetic on the GPU: `model::backend::Backend` over this module's
//! kernels. Each weight is uploaded the first time a pass reads it and kept for the backend's
//! life (one model's: the backend borrows its weights, so they cannot change under it).
//! Every operation's result is read back, since the trace keeps every intermediate.
//!
//! A failed kernel, upload or readback does not break the pass: that operation and every
//! later one run on the CPU, and `failure` says why, for the status line.

use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::rc::Rc;

use ndarray::{Array, Array2, Array3, ArrayView2, ArrayView3, Dimension, Ix2, Ix3};

use super::context::GpuContext;
use super::error::GpuError;
use super::tensor::GpuTensor;
use crate::model::backend::{Backend, Cpu};
use crate::model::config::{Activation, NormKind};
use crate::model::linear::Linear;
use crate::model::matrix::Matrix;
use crate::model::weights::{NormWeights, Weights};

pub struct GpuBackend<'w> {
    ctx: GpuContext,
    /// Uploaded weights by the address of the CPU array they copy (stable while `'w` lasts).
    uploaded: RefCell<HashMap<usize, Rc<GpuTensor>>>,
    failure: RefCell<Option<GpuError>>,
    weights: PhantomData<&'w Weights>,
}

impl<'w> GpuBackend<'w> {
    /// A backend for the model whose weights are `_weights` (only they may be passed to it).
    pub fn new(ctx: GpuContext, _weights: &'w Weights) -> Self {
        GpuBackend { ctx, uploaded: RefCell::new(HashMap::new()), failure: RefCell::new(None), weights: PhantomData }
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Destroys the device, as a driver reset or `device.destroy()` in a page would: every
    /// later operation fails on the GPU and runs on the CPU.
    pub fn lose_device(&self) {
        self.ctx.device.destroy();
    }

    /// Why the GPU stopped computing and the CPU took over, if it did.
    pub fn failure(&self) -> Option<GpuError> {
        self.failure.borrow().clone()
    }

    /// Runs `on_gpu`; on its first error, remembers it and runs `on_cpu` from then on.
    fn either<T>(&self, on_gpu: impl FnOnce() -> Result<T, GpuError>, on_cpu: impl FnOnce() -> T) -> T {
        if self.failure.borrow().is_some() {
            return on_cpu();
        }
        match on_gpu() {
            Ok(value) => value,
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                on_cpu()
            }
        }
    }

    /// The GPU copy of a weight, uploading it on first use.
    fn weight<D: Dimension>(&self, key: usize, values: impl FnOnce() -> Array<f32, D>, what: &str) -> Result<Rc<GpuTensor>, GpuError> {
        if let Some(t) = self.uploaded.borrow().get(&key) {
            return Ok(t.clone());
        }
        let values = values();
        let t = Rc::new(upload(&self.ctx, &values, what)?);
        self.uploaded.borrow_mut().insert(key, t.clone());
        Ok(t)
    }

    /// A matrix (out, in) as f32 on the GPU (quantized GGUF blocks are widened on the CPU, once).
    fn matrix(&self, m: &Matrix) -> Result<Rc<GpuTensor>, GpuError> {
        let key = m as *const Matrix as usize;
        self.weight(key, || m.to_dense(), "weight")
    }

    fn vector(&self, v: &ndarray::Array1<f32>, what: &str) -> Result<Rc<GpuTensor>, GpuError> {
        self.weight(v.as_ptr() as usize, || v.clone(), what)
    }

    fn run<T>(&self, future: impl std::future::Future<Output = Result<T, GpuError>>) -> Result<T, GpuError> {
        pollster::block_on(future)
    }

    fn read2(&self, t: &GpuTensor) -> Result<Array2<f32>, GpuError> {
        read(&self.ctx, t)?.into_dimensionality::<Ix2>().map_err(|e| GpuError::Readback(e.to_string()))
    }

    fn read3(&self, t: &GpuTensor) -> Result<Array3<f32>, GpuError> {
        read(&self.ctx, t)?.into_dimensionality::<Ix3>().map_err(|e| GpuError::Readback(e.to_string()))
    }
}

fn upload<D: Dimension>(ctx: &GpuContext, a: &Array<f32, D>, what: &str) -> Result<GpuTensor, GpuError> {
    let standard = a.as_standard_layout();
    let values = standard.as_slice().expect("standard layout is contiguous");
    GpuTensor::upload(ctx, values, a.shape(), what)
}

fn read(ctx: &GpuContext, t: &GpuTensor) -> Result<ndarray::ArrayD<f32>, GpuError> {
    let values = pollster::block_on(ctx.read(t))?;
    ndarray::ArrayD::from_shape_vec(t.shape().to_vec(), values).map_err(|e| GpuError::Readback(e.to_string()))
}

impl Backend for GpuBackend<'_> {
    fn name(&self) -> String {
        match self.failure() {
            None => format!("gpu ({})", self.ctx.adapter_description()),
            Some(e) => format!("cpu (the GPU failed: {e})"),
        }
    }

    fn linear(&self, x: ArrayView2<f32>, layer: &Linear) -> Array2<f32> {
        self.either(
            || {
                let w = self.matrix(&layer.weight)?;
                let b = layer.bias.as_ref().map(|b| self.vector(b, "bias")).transpose()?;
                let gx = upload(&self.ctx, &x.to_owned(), "activations")?;
                let y = self.run(super::dense(&self.ctx, &gx, &w, b.as_deref()))?;
                self.read2(&y) // (T, out)
            },
            || Cpu.linear(x, layer),
        )
    }

    fn unembed(&self, x: ArrayView2<f32>, u: &Matrix) -> Array2<f32> {
        self.either(
            || {
                let w = self.matrix(u)?;
                let gx = upload(&self.ctx, &x.to_owned(), "activations")?;
                let y = self.run(super::dense(&self.ctx, &gx, &w, None))?;
                self.read2(&y) // (T, vocab)
            },
            || Cpu.unembed(x, u),
        )
    }

    fn norm(&self, kind: NormKind, w: &NormWeights, x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
        self.either(
            || {
                let gamma = self.vector(&w.gamma, "gamma")?;
                let beta = w.beta.as_ref().map(|b| self.vector(b, "beta")).transpose()?;
                let gx = upload(&self.ctx, &x.to_owned(), "activations")?;
                let out = self.run(super::layer_norm(&self.ctx, kind, &gx, &gamma, beta.as_deref(), eps))?;
                self.read2(&out.y) // (T, d)
            },
            || Cpu.norm(kind, w, x, eps),
        )
    }

    fn scores(&self, q: ArrayView3<f32>, k: ArrayView3<f32>, group: usize, scale: f32) -> Array3<f32> {
        self.either(
            || {
                let (gq, gk) = (upload(&self.ctx, &q.to_owned(), "queries")?, upload(&self.ctx, &k.to_owned(), "keys")?);
                if q.dim().0 != k.dim().0 * group {
                    return Err(GpuError::Shape { what: "scores", detail: format!("{} query heads, {} key heads, groups of {group}", q.dim().0, k.dim().0) });
                }
                // The mask is a step of its own in the trace: the kernel leaves it out here.
                let s = self.run(super::attention_scores(&self.ctx, &gq, &gk, scale, false, 0))?;
                self.read3(&s) // (heads, Tq, Tk)
            },
            || Cpu.scores(q, k, group, scale),
        )
    }

    fn softmax(&self, scores: &mut Array3<f32>) {
        let done = self.either(
            || {
                let gs = upload(&self.ctx, scores, "scores")?;
                let w = self.run(super::softmax_rows(&self.ctx, &gs))?;
                self.read3(&w).map(Some) // (heads, Tq, Tk)
            },
            || None,
        );
        match done {
            Some(weights) => *scores = weights,
            None => Cpu.softmax(scores),
        }
    }

    fn weighted_values(&self, weights: ArrayView3<f32>, v: ArrayView3<f32>, group: usize) -> Array3<f32> {
        self.either(
            || {
                let (gw, gv) = (upload(&self.ctx, &weights.to_owned(), "weights")?, upload(&self.ctx, &v.to_owned(), "values")?);
                let out = self.run(super::weighted_values(&self.ctx, &gw, &gv))?;
                self.read3(&out) // (heads, Tq, hd)
            },
            || Cpu.weighted_values(weights, v, group),
        )
    }

    fn pointwise(&self, hidden: &mut Array2<f32>, activation: Activation) {
        let done = self.either(
            || {
                let gh = upload(&self.ctx, hidden, "activations")?;
                let y = self.run(super::activation(&self.ctx, activation, &gh))?;
                self.read2(&y).map(Some) // (T, d_ff)
            },
            || None,
        );
        match done {
            Some(y) => *hidden = y,
            None => Cpu.pointwise(hidden, activation),
        }
    }

    fn rotary(&self, x: &mut Array3<f32>, base: f32, adjacent_pairs: bool, first: usize) {
        let done = self.either(
            || {
                let gx = upload(&self.ctx, x, "queries or keys")?;
                let y = self.run(super::rotary(&self.ctx, &gx, base, adjacent_pairs, first))?;
                self.read3(&y).map(Some) // (heads, T, hd)
            },
            || None,
        );
        match done {
            Some(y) => *x = y,
            None => Cpu.rotary(x, base, adjacent_pairs, first),
        }
    }
}
