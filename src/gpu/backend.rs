//! The forward pass's arithmetic on the GPU: `model::backend::Backend` over this module's
//! kernels. Each weight is uploaded the first time a pass reads it and kept for the backend's
//! life (one model's: the backend holds its weights, so they cannot change or move under it).
//! Every operation's result is read back, since the trace keeps every intermediate, except the
//! attention scores, which the trace computes again when read: `attend` runs scores, mask,
//! softmax and weighted values on the device and reads back the weights and head outputs
//! together. Each readback is awaited, never waited for, so the same pass runs in a browser.
//!
//! A failed kernel, upload or readback does not break the pass: that operation and every
//! later one run on the CPU, and `failure` says why, for the status line.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;

use ndarray::{Array, Array2, Array3, ArrayView2, ArrayView3, Dimension};

use super::context::GpuContext;
use super::error::GpuError;
use super::tensor::GpuTensor;
use crate::model::backend::{Backend, Cpu};
use crate::model::config::{Activation, NormKind};
use crate::model::linear::Linear;
use crate::model::matrix::Matrix;
use crate::model::weights::{NormWeights, Weights};

pub struct GpuBackend {
    ctx: GpuContext,
    /// Uploaded weights by the address of the CPU array they copy (stable while `_weights`
    /// is held).
    uploaded: RefCell<HashMap<usize, Rc<GpuTensor>>>,
    failure: RefCell<Option<GpuError>>,
    /// Held, never read: the arrays `uploaded` is keyed by cannot be freed or moved.
    _weights: Arc<Weights>,
}

impl GpuBackend {
    /// A backend for the model whose weights are `weights` (only they may be passed to it).
    pub fn new(ctx: GpuContext, weights: &Arc<Weights>) -> Self {
        GpuBackend { ctx, uploaded: RefCell::new(HashMap::new()), failure: RefCell::new(None), _weights: weights.clone() }
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Destroys the device, as a driver reset or `device.destroy()` in a page would: every
    /// later operation fails on the GPU and runs on the CPU.
    pub fn lose_device(&self) {
        self.ctx.device.destroy();
    }

    /// The bytes of weights uploaded so far (each weight once, as stored on the GPU: f32
    /// values or a GGUF file's blocks).
    pub fn weight_bytes(&self) -> u64 {
        self.uploaded.borrow().values().map(|t| t.bytes()).sum()
    }

    /// Why the GPU stopped computing and the CPU took over, if it did.
    pub fn failure(&self) -> Option<GpuError> {
        self.failure.borrow().clone()
    }

    /// Runs `on_gpu` unless the GPU has failed before; on its first error, remembers it.
    /// `None` tells the caller to compute on the CPU.
    async fn attempt<T>(&self, on_gpu: impl Future<Output = Result<T, GpuError>>) -> Option<T> {
        if self.failure.borrow().is_some() {
            return None;
        }
        match on_gpu.await {
            Ok(value) => Some(value),
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                None
            }
        }
    }

    /// The GPU copy of the weight known by `key`, made by `make_upload` on first use.
    fn cached(&self, key: usize, make_upload: impl FnOnce() -> Result<GpuTensor, GpuError>) -> Result<Rc<GpuTensor>, GpuError> {
        if let Some(t) = self.uploaded.borrow().get(&key) {
            return Ok(t.clone());
        }
        let t = Rc::new(make_upload()?);
        self.uploaded.borrow_mut().insert(key, t.clone());
        Ok(t)
    }

    /// The GPU copy of an f32 weight, uploading it on first use.
    fn weight<D: Dimension>(&self, key: usize, values: impl FnOnce() -> Array<f32, D>, what: &str) -> Result<Rc<GpuTensor>, GpuError> {
        self.cached(key, || upload(&self.ctx, &values(), what))
    }

    /// A matrix (out, in) on the GPU: f32 values, or a GGUF model's blocks as the file holds
    /// them (the dense kernel dequantizes them as it reads: a Q4_1 model keeps its ~5 bits a
    /// value on the GPU instead of widening to 32).
    fn matrix(&self, m: &Matrix) -> Result<Rc<GpuTensor>, GpuError> {
        let key = m as *const Matrix as usize;
        match m {
            Matrix::Dense(values) => self.weight(key, || values.clone(), "weight"),
            Matrix::Quantized(q) => self.cached(key, || GpuTensor::upload_blocks(&self.ctx, q.kind(), q.bytes(), [q.rows(), q.cols()], q.name())),
        }
    }

    fn vector(&self, v: &ndarray::Array1<f32>, what: &str) -> Result<Rc<GpuTensor>, GpuError> {
        self.weight(v.as_ptr() as usize, || v.clone(), what)
    }

    async fn read2(&self, t: &GpuTensor) -> Result<Array2<f32>, GpuError> {
        shaped(t, self.ctx.read(t).await?)
    }

    async fn read3(&self, t: &GpuTensor) -> Result<Array3<f32>, GpuError> {
        shaped(t, self.ctx.read(t).await?)
    }
}

fn upload<D: Dimension>(ctx: &GpuContext, a: &Array<f32, D>, what: &str) -> Result<GpuTensor, GpuError> {
    let standard = a.as_standard_layout();
    let values = standard.as_slice().expect("standard layout is contiguous");
    GpuTensor::upload(ctx, values, a.shape(), what)
}

/// `values` read back from `t`, as an array of `t`'s shape and of `D`'s rank.
fn shaped<D: Dimension>(t: &GpuTensor, values: Vec<f32>) -> Result<Array<f32, D>, GpuError> {
    let array = ndarray::ArrayD::from_shape_vec(t.shape().to_vec(), values).map_err(|e| GpuError::Readback(e.to_string()))?;
    array.into_dimensionality::<D>().map_err(|e| GpuError::Readback(e.to_string()))
}

impl Backend for GpuBackend {
    fn name(&self) -> String {
        match self.failure() {
            None => format!("gpu ({})", self.ctx.adapter_description()),
            Some(e) => format!("cpu (the GPU failed: {e})"),
        }
    }

    async fn linear(&self, x: ArrayView2<'_, f32>, layer: &Linear) -> Array2<f32> {
        let on_gpu = async {
            let w = self.matrix(&layer.weight)?;
            let b = layer.bias.as_ref().map(|b| self.vector(b, "bias")).transpose()?;
            let gx = upload(&self.ctx, &x.to_owned(), "activations")?;
            let y = super::dense(&self.ctx, &gx, &w, b.as_deref()).await?;
            self.read2(&y).await // (T, out)
        };
        match self.attempt(on_gpu).await {
            Some(y) => y,
            None => Cpu.linear(x, layer).await,
        }
    }

    async fn unembed(&self, x: ArrayView2<'_, f32>, u: &Matrix) -> Array2<f32> {
        let on_gpu = async {
            let w = self.matrix(u)?;
            let gx = upload(&self.ctx, &x.to_owned(), "activations")?;
            let y = super::dense(&self.ctx, &gx, &w, None).await?;
            self.read2(&y).await // (T, vocab)
        };
        match self.attempt(on_gpu).await {
            Some(y) => y,
            None => Cpu.unembed(x, u).await,
        }
    }

    async fn norm(&self, kind: NormKind, w: &NormWeights, x: ArrayView2<'_, f32>, eps: f32) -> Array2<f32> {
        let on_gpu = async {
            let gamma = self.vector(&w.gamma, "gamma")?;
            let beta = w.beta.as_ref().map(|b| self.vector(b, "beta")).transpose()?;
            let gx = upload(&self.ctx, &x.to_owned(), "activations")?;
            let out = super::layer_norm(&self.ctx, kind, &gx, &gamma, beta.as_deref(), eps).await?;
            self.read2(&out.y).await // (T, d)
        };
        match self.attempt(on_gpu).await {
            Some(y) => y,
            None => Cpu.norm(kind, w, x, eps).await,
        }
    }

    async fn scores(&self, q: ArrayView3<'_, f32>, k: ArrayView3<'_, f32>, group: usize, scale: f32) -> Array3<f32> {
        let on_gpu = async {
            if q.dim().0 != k.dim().0 * group {
                return Err(GpuError::Shape { what: "scores", detail: format!("{} query heads, {} key heads, groups of {group}", q.dim().0, k.dim().0) });
            }
            let (gq, gk) = (upload(&self.ctx, &q.to_owned(), "queries")?, upload(&self.ctx, &k.to_owned(), "keys")?);
            // The mask is a step of its own in the trace: the kernel leaves it out here.
            let s = super::attention_scores(&self.ctx, &gq, &gk, scale, false, 0).await?;
            self.read3(&s).await // (heads, Tq, Tk)
        };
        match self.attempt(on_gpu).await {
            Some(s) => s,
            None => Cpu.scores(q, k, group, scale).await,
        }
    }

    async fn softmax(&self, scores: &mut Array3<f32>) {
        let on_gpu = async {
            let gs = upload(&self.ctx, scores, "scores")?;
            let w = super::softmax_rows(&self.ctx, &gs).await?;
            self.read3(&w).await // (heads, Tq, Tk)
        };
        match self.attempt(on_gpu).await {
            Some(weights) => *scores = weights,
            None => Cpu.softmax(scores).await,
        }
    }

    async fn weighted_values(&self, weights: ArrayView3<'_, f32>, v: ArrayView3<'_, f32>, group: usize) -> Array3<f32> {
        let on_gpu = async {
            let (gw, gv) = (upload(&self.ctx, &weights.to_owned(), "weights")?, upload(&self.ctx, &v.to_owned(), "values")?);
            let out = super::weighted_values(&self.ctx, &gw, &gv).await?;
            self.read3(&out).await // (heads, Tq, hd)
        };
        match self.attempt(on_gpu).await {
            Some(out) => out,
            None => Cpu.weighted_values(weights, v, group).await,
        }
    }

    async fn pointwise(&self, hidden: &mut Array2<f32>, activation: Activation) {
        let on_gpu = async {
            let gh = upload(&self.ctx, hidden, "activations")?;
            let y = super::activation(&self.ctx, activation, &gh).await?;
            self.read2(&y).await // (T, d_ff)
        };
        match self.attempt(on_gpu).await {
            Some(y) => *hidden = y,
            None => Cpu.pointwise(hidden, activation).await,
        }
    }

    async fn gate(&self, up: &mut Array2<f32>, gate: ArrayView2<'_, f32>) {
        let on_gpu = async {
            let (gu, gg) = (upload(&self.ctx, up, "up projection")?, upload(&self.ctx, &gate.to_owned(), "gate projection")?);
            let y = super::swiglu_gate(&self.ctx, &gu, &gg).await?;
            self.read2(&y).await // (T, d_ff)
        };
        match self.attempt(on_gpu).await {
            Some(y) => *up = y,
            None => Cpu.gate(up, gate).await,
        }
    }

    /// Scores, mask, softmax and weighted values as three kernels in a row: the scores and the
    /// weights stay on the device between them (uploaded once: q, k and v; read back: the
    /// weights, which the trace keeps, and the head outputs), where the operations one by one
    /// would read back and upload the scores and weights in between.
    async fn attend(&self, q: ArrayView3<'_, f32>, k: ArrayView3<'_, f32>, v: ArrayView3<'_, f32>, group: usize, scale: f32, causal: Option<usize>) -> (Array3<f32>, Array3<f32>) {
        let on_gpu = async {
            if q.dim().0 != k.dim().0 * group {
                return Err(GpuError::Shape { what: "attend", detail: format!("{} query heads, {} key heads, groups of {group}", q.dim().0, k.dim().0) });
            }
            let gq = upload(&self.ctx, &q.to_owned(), "queries")?;
            let gk = upload(&self.ctx, &k.to_owned(), "keys")?;
            let gv = upload(&self.ctx, &v.to_owned(), "values")?;
            let scores = super::attention_scores(&self.ctx, &gq, &gk, scale, causal.is_some(), causal.unwrap_or(0)).await?; // (heads, Tq, Tk), masked
            let weights = super::softmax_rows(&self.ctx, &scores).await?; // (heads, Tq, Tk)
            let out = super::weighted_values(&self.ctx, &weights, &gv).await?; // (heads, Tq, hd)
            let [w, o]: [Vec<f32>; 2] = self.ctx.read_all(&[&weights, &out]).await?.try_into().expect("two tensors read"); // one round trip
            Ok((shaped(&weights, w)?, shaped(&out, o)?))
        };
        match self.attempt(on_gpu).await {
            Some(both) => both,
            None => Cpu.attend(q, k, v, group, scale, causal).await,
        }
    }

    async fn rotary(&self, x: &mut Array3<f32>, base: f32, adjacent_pairs: bool, first: usize) {
        let on_gpu = async {
            let gx = upload(&self.ctx, x, "queries or keys")?;
            let y = super::rotary(&self.ctx, &gx, base, adjacent_pairs, first).await?;
            self.read3(&y).await // (heads, T, hd)
        };
        match self.attempt(on_gpu).await {
            Some(y) => *x = y,
            None => Cpu.rotary(x, base, adjacent_pairs, first).await,
        }
    }
}
