//! The forward pass's arithmetic on the GPU: `model::backend::Backend` over this module's
//! kernels. Each weight is uploaded the first time a pass reads it and kept for the backend's
//! life (one model's: the backend holds its weights, so they cannot change or move under it).
//!
//! A pass stays on the device: every operation reads the buffers earlier ones wrote, and
//! nothing waits for the device until `finish`. That reads back, in one submission, what the
//! recorder asked for (a traced pass: the steps the trace keeps; an untraced one: only its
//! output), and pops the pass's one error scope.
//!
//! A failed kernel, upload or readback, or a lost device, does not break the pass: from then
//! on the operations are skipped (their tensors are "dead", of the right shape), `finish`
//! says the pass failed, and the caller computes it again on the CPU; `failure` says why,
//! for the status line, and every later pass goes to the CPU at once.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use ndarray::{Array, Array2, Dimension};

use super::context::GpuContext;
use super::error::GpuError;
use super::tensor::GpuTensor;
use crate::model::backend::{Backend, Shaped};
use crate::model::config::{Activation, NormKind};
use crate::model::edits::Overwrite;
use crate::model::linear::Linear;
use crate::model::matrix::Matrix;
use crate::model::weights::{NormWeights, Weights};
use crate::tensor::{Fill, Tensor, TensorData};

/// A tensor of a pass on the GPU: its buffer, or none once the GPU has failed (the shape is
/// kept, so that the pass's shapes stay right while it runs to its end).
#[derive(Clone)]
pub struct GpuValue {
    shape: Vec<usize>,
    buffer: Option<Rc<GpuTensor>>,
    /// A norm's output carries its rows' statistics (T, 4), which the norm kernel wrote.
    stats: Option<Rc<GpuTensor>>,
}

impl Shaped for GpuValue {
    fn dims(&self) -> &[usize] {
        &self.shape
    }
}

pub struct GpuBackend {
    ctx: GpuContext,
    /// Uploaded weights by the address of the CPU array they copy (stable while `_weights`
    /// is held).
    uploaded: RefCell<HashMap<usize, Rc<GpuTensor>>>,
    failure: RefCell<Option<GpuError>>,
    /// The pass's error scope: pushed by its first operation, popped by `finish`.
    scope: RefCell<Option<wgpu::ErrorScopeGuard>>,
    /// The tensors a recorder asked for since the last `finish`, and where their values go.
    pending: RefCell<Vec<(Rc<GpuTensor>, Fill)>>,
    /// The last pass's tensors that its readback left on the device (`Fill::is_later`),
    /// until `read_rest` reads them or the next pass replaces them.
    rest: RefCell<Vec<(Rc<GpuTensor>, Fill)>>,
    /// The next `finish` adds its pass's rest to `rest` instead of replacing it
    /// (`Backend::keep_last_pass_rest`).
    keep_rest: Cell<bool>,
    /// Held, never read: the arrays `uploaded` is keyed by cannot be freed or moved.
    _weights: Arc<Weights>,
}

impl GpuBackend {
    /// A backend for the model whose weights are `weights` (only they may be passed to it).
    pub fn new(ctx: GpuContext, weights: &Arc<Weights>) -> Self {
        GpuBackend {
            ctx,
            uploaded: RefCell::new(HashMap::new()),
            failure: RefCell::new(None),
            scope: RefCell::new(None),
            pending: RefCell::new(Vec::new()),
            rest: RefCell::new(Vec::new()),
            keep_rest: Cell::new(false),
            _weights: weights.clone(),
        }
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

    /// Remembers the first failure (later ones follow from it).
    fn fail(&self, e: GpuError) {
        self.failure.borrow_mut().get_or_insert(e);
    }

    /// The tensor of `shape` that `op` computes from `inputs`' buffers, or a dead one when
    /// the GPU has failed (before, or in `op`).
    fn run(
        &self,
        shape: Vec<usize>,
        inputs: &[&GpuValue],
        op: impl FnOnce(&[&GpuTensor]) -> Result<GpuTensor, GpuError>,
    ) -> GpuValue {
        let dead = |shape| GpuValue {
            shape,
            buffer: None,
            stats: None,
        };
        if self.failure.borrow().is_some() {
            return dead(shape);
        }
        let Some(buffers) = inputs
            .iter()
            .map(|v| v.buffer.as_deref())
            .collect::<Option<Vec<&GpuTensor>>>()
        else {
            self.fail(GpuError::Readback("a tensor of this pass was lost".into()));
            return dead(shape);
        };
        if self.scope.borrow().is_none() {
            *self.scope.borrow_mut() = Some(
                self.ctx
                    .device
                    .push_error_scope(wgpu::ErrorFilter::Validation),
            );
        }
        match op(&buffers) {
            Ok(t) if t.shape() == shape.as_slice() => GpuValue {
                shape,
                buffer: Some(Rc::new(t)),
                stats: None,
            },
            Ok(t) => {
                self.fail(GpuError::Shape {
                    what: "pass",
                    detail: format!(
                        "a kernel wrote {:?} where the pass expects {shape:?}",
                        t.shape()
                    ),
                });
                dead(shape)
            }
            Err(e) => {
                self.fail(e);
                dead(shape)
            }
        }
    }

    /// A recorder's handle on `v`'s values, filled by `finish`.
    fn trace(&self, v: &GpuValue) -> Tensor {
        let (data, fill) = TensorData::filled_later(v.shape.iter().product());
        if let Some(buffer) = &v.buffer {
            self.pending.borrow_mut().push((buffer.clone(), fill));
        }
        Tensor {
            shape: v.shape.clone(),
            data,
        }
    }

    /// The GPU copy of the weight known by `key`, made by `make_upload` on first use.
    fn cached(
        &self,
        key: usize,
        make_upload: impl FnOnce() -> Result<GpuTensor, GpuError>,
    ) -> Result<Rc<GpuTensor>, GpuError> {
        if let Some(t) = self.uploaded.borrow().get(&key) {
            return Ok(t.clone());
        }
        let t = Rc::new(make_upload()?);
        self.uploaded.borrow_mut().insert(key, t.clone());
        Ok(t)
    }

    /// The GPU copy of an f32 weight, uploading it on first use.
    fn weight<D: Dimension>(
        &self,
        key: usize,
        values: impl FnOnce() -> Array<f32, D>,
        what: &str,
    ) -> Result<Rc<GpuTensor>, GpuError> {
        self.cached(key, || upload(&self.ctx, &values(), what))
    }

    /// A matrix (out, in) on the GPU: f32 values, or a GGUF model's blocks as the file holds
    /// them (the dense kernel dequantizes them as it reads: a Q4_1 model keeps its ~5 bits a
    /// value on the GPU instead of widening to 32).
    fn matrix(&self, m: &Matrix) -> Result<Rc<GpuTensor>, GpuError> {
        let key = m as *const Matrix as usize;
        match m {
            Matrix::Dense(values) => self.weight(key, || values.clone(), "weight"),
            Matrix::Quantized(q) => self.cached(key, || {
                GpuTensor::upload_blocks(
                    &self.ctx,
                    q.kind(),
                    q.bytes(),
                    [q.rows(), q.cols()],
                    q.name(),
                )
            }),
        }
    }

    fn vector(&self, v: &ndarray::Array1<f32>, what: &str) -> Result<Rc<GpuTensor>, GpuError> {
        self.weight(v.as_ptr() as usize, || v.clone(), what)
    }

    /// How many values the last pass left on the device (its recorder's `Readback::Steps`
    /// asked for the others only).
    pub fn values_left(&self) -> usize {
        self.rest.borrow().iter().map(|(_, fill)| fill.len()).sum()
    }

    /// Reads back, in one submission, the values the last pass left on the device: a
    /// promise of true once they are in its trace. False when the GPU has failed (they can
    /// never come back: compute the pass again on the CPU).
    pub async fn read_rest(&self) -> bool {
        let rest = std::mem::take(&mut *self.rest.borrow_mut());
        if self.failure.borrow().is_some() {
            return false;
        }
        if rest.is_empty() {
            return true;
        }
        self.ctx.flush();
        let buffers: Vec<&GpuTensor> = rest.iter().map(|(t, _)| t.as_ref()).collect();
        match self.ctx.read_all(&buffers).await {
            Ok(values) => {
                for ((_, fill), values) in rest.into_iter().zip(values) {
                    fill.fill(values);
                }
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }
}

fn upload<D: Dimension>(
    ctx: &GpuContext,
    a: &Array<f32, D>,
    what: &str,
) -> Result<GpuTensor, GpuError> {
    let standard = a.as_standard_layout();
    let values = standard.as_slice().expect("standard layout is contiguous");
    GpuTensor::upload(ctx, values, a.shape(), what)
}

impl Backend for GpuBackend {
    type Rows = GpuValue;
    type Heads = GpuValue;

    fn name(&self) -> String {
        match self.failure() {
            None => format!("gpu ({})", self.ctx.adapter_description()),
            Some(e) => format!("cpu (the GPU failed: {e})"),
        }
    }

    fn rows(&self, x: Array2<f32>) -> GpuValue {
        self.run(x.shape().to_vec(), &[], |_| {
            upload(&self.ctx, &x, "activations")
        }) // (T, d)
    }

    fn linear(&self, x: &GpuValue, layer: &Linear) -> GpuValue {
        let shape = vec![x.shape[0], layer.out_features()];
        self.run(shape, &[x], |t| {
            let w = self.matrix(&layer.weight)?;
            let b = layer
                .bias
                .as_ref()
                .map(|b| self.vector(b, "bias"))
                .transpose()?;
            super::dense(&self.ctx, t[0], &w, b.as_deref()) // (T, out)
        })
    }

    fn unembed(&self, x: &GpuValue, u: &Matrix) -> GpuValue {
        self.run(vec![x.shape[0], u.rows()], &[x], |t| {
            let w = self.matrix(u)?;
            super::dense(&self.ctx, t[0], &w, None) // (T, vocab)
        })
    }

    fn last_row(&self, x: &GpuValue) -> GpuValue {
        let rows = x.shape[0];
        self.run(vec![rows.min(1), x.shape[1]], &[x], |t| {
            t[0].slice_rows(&self.ctx, rows.saturating_sub(1), rows)
        }) // (1, d)
    }

    fn norm(&self, kind: NormKind, w: &NormWeights, x: &GpuValue, eps: f32) -> GpuValue {
        let stats = RefCell::new(None);
        let mut y = self.run(x.shape.clone(), &[x], |t| {
            let gamma = self.vector(&w.gamma, "gamma")?;
            let beta = w
                .beta
                .as_ref()
                .map(|b| self.vector(b, "beta"))
                .transpose()?;
            let out = super::layer_norm(&self.ctx, kind, t[0], &gamma, beta.as_deref(), eps)?;
            *stats.borrow_mut() = Some(Rc::new(out.stats)); // (T, 4)
            Ok(out.y) // (T, d)
        });
        y.stats = stats.into_inner();
        y
    }

    fn row_stats(&self, x: &GpuValue, y: &GpuValue) -> GpuValue {
        // The norm kernel wrote them beside `y` (a dead `y` has none: the GPU failed).
        if y.stats.is_none() && y.buffer.is_some() {
            self.fail(GpuError::Shape {
                what: "row statistics",
                detail: "asked of a tensor no norm wrote".into(),
            });
        }
        GpuValue {
            shape: vec![x.shape[0], 4],
            buffer: y.stats.clone(),
            stats: None,
        }
    }

    fn add(&self, x: GpuValue, y: &GpuValue) -> GpuValue {
        self.run(x.shape.clone(), &[&x, y], |t| {
            super::residual_add(&self.ctx, t[0], t[1])
        }) // (T, d)
    }

    fn split_heads(&self, x: GpuValue, heads: usize, head_dim: usize) -> GpuValue {
        let t = x.shape[0];
        self.run(vec![heads, t, head_dim], &[&x], |b| {
            super::swap_heads(&self.ctx, b[0], [t, heads, head_dim], &[heads, t, head_dim])
        }) // (heads, T, hd)
    }

    fn merge_heads(&self, x: GpuValue) -> GpuValue {
        let [heads, t, hd] = [x.shape[0], x.shape[1], x.shape[2]];
        self.run(vec![t, heads * hd], &[&x], |b| {
            super::swap_heads(&self.ctx, b[0], [heads, t, hd], &[t, heads * hd])
        }) // (T, heads * hd)
    }

    fn scores(
        &self,
        q: &GpuValue,
        k: &GpuValue,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> GpuValue {
        self.run(vec![q.shape[0], q.shape[1], k.shape[1]], &[q, k], |t| {
            check_groups(q, k, group)?;
            super::attention_scores(
                &self.ctx,
                t[0],
                t[1],
                scale,
                causal.is_some(),
                causal.unwrap_or(0),
            ) // (heads, Tq, Tk)
        })
    }

    fn mask(&self, scores: GpuValue, first: usize) -> GpuValue {
        self.run(scores.shape.clone(), &[&scores], |t| {
            super::causal_mask(&self.ctx, t[0], first)
        }) // (heads, Tq, Tk)
    }

    /// Scores, mask, softmax and weighted values as three kernels in a row.
    fn attend(
        &self,
        q: &GpuValue,
        k: &GpuValue,
        v: &GpuValue,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> (GpuValue, GpuValue) {
        let scores = self.scores(q, k, group, scale, causal); // (heads, Tq, Tk), masked
        let weights = self.run(scores.shape.clone(), &[&scores], |t| {
            super::softmax_rows(&self.ctx, t[0])
        }); // (heads, Tq, Tk)
        let out = self.run(q.shape.clone(), &[&weights, v], |t| {
            super::weighted_values(&self.ctx, t[0], t[1])
        }); // (heads, Tq, hd)
        (weights, out)
    }

    fn pointwise(&self, hidden: &GpuValue, activation: Activation) -> GpuValue {
        self.run(hidden.shape.clone(), &[hidden], |t| {
            super::activation(&self.ctx, activation, t[0])
        }) // (T, d_ff)
    }

    fn gate(&self, up: &GpuValue, gate: &GpuValue) -> GpuValue {
        self.run(up.shape.clone(), &[up, gate], |t| {
            super::swiglu_gate(&self.ctx, t[0], t[1])
        }) // (T, d_ff)
    }

    fn rotary(&self, x: GpuValue, base: f32, adjacent_pairs: bool, first: usize) -> GpuValue {
        self.run(x.shape.clone(), &[&x], |t| {
            super::rotary(&self.ctx, t[0], base, adjacent_pairs, first)
        }) // (heads, T, hd)
    }

    fn overwrite_rows(&self, x: GpuValue, overwrite: &Overwrite) -> GpuValue {
        self.run(x.shape.clone(), &[&x], |t| {
            super::splice(&self.ctx, t[0], overwrite)
        }) // (T, d)
    }

    fn overwrite_heads(&self, x: GpuValue, overwrite: &Overwrite) -> GpuValue {
        self.run(x.shape.clone(), &[&x], |t| {
            super::splice(&self.ctx, t[0], overwrite)
        }) // (heads, T, hd)
    }

    fn append_tokens(&self, cached: &GpuValue, new: &GpuValue) -> GpuValue {
        let shape = vec![
            cached.shape[0],
            cached.shape[1] + new.shape[1],
            cached.shape[2],
        ];
        self.run(shape, &[cached, new], |t| {
            GpuTensor::join_middle(&self.ctx, t[0], t[1])
        }) // (kv, P + n, hd)
    }

    fn first_tokens(&self, x: &GpuValue, n: usize) -> GpuValue {
        self.run(vec![x.shape[0], n, x.shape[2]], &[x], |t| {
            t[0].first_middle(&self.ctx, n)
        }) // (kv, n, hd)
    }

    fn trace_rows(&self, x: &GpuValue) -> Tensor {
        self.trace(x)
    }

    fn trace_heads(&self, x: &GpuValue) -> Tensor {
        self.trace(x)
    }

    fn rows_into_trace(&self, x: GpuValue) -> Tensor {
        self.trace(&x)
    }

    fn heads_into_trace(&self, x: GpuValue) -> Tensor {
        self.trace(&x)
    }

    /// Pops the pass's error scope and reads back every tensor asked for, in one submission,
    /// but those marked to be read later (`rest`, `read_rest`); the values of a failed pass
    /// stay zeros.
    async fn finish(&self) -> bool {
        let (later, pending): (Vec<_>, Vec<_>) = std::mem::take(&mut *self.pending.borrow_mut())
            .into_iter()
            .partition(|(_, fill)| fill.is_later());
        // The last pass's values left on the device give way to this one's, unless they make
        // one trace with it.
        if self.keep_rest.take() {
            let mut rest = self.rest.borrow_mut();
            // Values no trace holds any more (a continued pass's earlier rows, cut) need not
            // come back: their buffers go.
            rest.retain(|(_, fill)| fill.is_wanted());
            rest.extend(later);
        } else {
            *self.rest.borrow_mut() = later;
        }
        // The pass's commands go to the device inside its error scope.
        self.ctx.flush();
        // Popped first (it takes effect at once), awaited after the readback: both answers
        // come from the device in the same round trip.
        let scope = self.scope.borrow_mut().take().map(|scope| scope.pop());
        if self.failure.borrow().is_none() && !pending.is_empty() {
            let buffers: Vec<&GpuTensor> = pending.iter().map(|(t, _)| t.as_ref()).collect();
            match self.ctx.read_all(&buffers).await {
                Ok(values) => {
                    for ((_, fill), values) in pending.into_iter().zip(values) {
                        fill.fill(values);
                    }
                }
                Err(e) => self.fail(e),
            }
        }
        if let Some(scope) = scope {
            if let Some(e) = scope.await {
                self.fail(GpuError::Kernel {
                    kernel: "a pass",
                    detail: e.to_string(),
                });
            }
        }
        let ok = self.failure.borrow().is_none();
        if !ok {
            self.rest.borrow_mut().clear(); // a failed pass's values never come back
        }
        ok
    }

    fn keep_last_pass_rest(&self) {
        self.keep_rest.set(true);
    }
}

/// Query heads must read key heads in whole groups.
fn check_groups(q: &GpuValue, k: &GpuValue, group: usize) -> Result<(), GpuError> {
    if q.shape[0] != k.shape[0] * group {
        return Err(GpuError::Shape {
            what: "attention",
            detail: format!(
                "{} query heads, {} key heads, groups of {group}",
                q.shape[0], k.shape[0]
            ),
        });
    }
    Ok(())
}
