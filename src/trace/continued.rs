//! `ContinuedRecorder`: the trace of a pass through the KV cache on any backend, a GPU's
//! included. The pass computes only the tokens after the cached ones; each step of the trace
//! is the earlier trace's first rows then the pass's new rows, joined when read
//! (`TensorData::joined`), so neither part need have come back from the device yet. Steps
//! derived from others (scores, mask, head outputs) are derived from the joined ones, over
//! every token, as a pass from the start derives them.
//!
//! (The CPU's page path continues its traces with `LayeredRecorder`, which keeps less and
//! computes a layer again on read; on a GPU that would compute those steps on the CPU. It
//! joins its kept steps with `join` too, then keeps each as one array.)

use ndarray::{ArrayD, ArrayViewD};

use super::{
    NormRecord, NormRows, NormStats, Op, Readback, Recorder, Step, Tensor, TensorData, Trace,
    TraceRecorder,
};
use crate::model::config::ModelConfig;
use crate::tensor::token_axis;

pub struct ContinuedRecorder<'a> {
    inner: TraceRecorder<'a>,
    /// The earlier trace and how many of its first tokens this pass did not compute again.
    prefix: Option<(&'a Trace, usize)>,
    /// Tokens in the whole trace: the prefix's and the new ones.
    total: usize,
}

impl<'a> ContinuedRecorder<'a> {
    /// A recorder for a pass over `total` tokens, continuing the first `rows` tokens of
    /// `prefix` (a trace of the same model, recorded so too or from the start) when given;
    /// the device brings back with the pass what `readback` names.
    pub fn new(
        config: &'a ModelConfig,
        readback: Readback,
        prefix: Option<(&'a Trace, usize)>,
        total: usize,
    ) -> Self {
        ContinuedRecorder {
            inner: TraceRecorder::with_readback(config, readback),
            prefix,
            total,
        }
    }

    /// The steps and norms, each norm's statistics the earlier trace's first rows then the
    /// new ones. Called after the pass has ended (a GPU's after its readback).
    pub fn into_parts(self) -> (Vec<Step>, Vec<NormRecord>) {
        let (steps, mut norms) = self.inner.into_parts();
        if let Some((trace, p)) = self.prefix {
            for (norm, old) in norms.iter_mut().zip(&trace.norms) {
                join_stats(&old.stats, p, &mut norm.stats);
            }
        }
        (steps, norms)
    }
}

/// Whether `op`'s result has a row per token. A causal model's traced pass computes the last
/// position's logits only (`Logits::Last`), and its next-token probabilities are one row.
fn has_token_rows(op: Op) -> bool {
    !matches!(op, Op::Unembed | Op::NextTokenProbabilities)
}

/// A norm's statistics: the earlier trace's first `p` tokens' (`old`), then the new ones.
pub(super) fn join_stats(old: &NormStats, p: usize, new: &mut NormStats) {
    let join = |old: &[f32], new: &mut Vec<f32>| {
        *new = old[..p].iter().chain(new.iter()).copied().collect()
    };
    join(&old.input_mean, &mut new.input_mean);
    join(&old.input_std, &mut new.input_std);
    join(&old.output_mean, &mut new.output_mean);
    join(&old.output_std, &mut new.output_std);
}

/// The earlier trace's first `p` rows of `op`'s result, then `new`'s rows (a join, read
/// lazily: neither part need have come back from a device yet). The one way a continued
/// pass's step is joined to its earlier trace's.
pub(super) fn join(
    prefix: Option<(&Trace, usize)>,
    op: Op,
    layer: Option<usize>,
    new: Tensor,
) -> Tensor {
    let Some((trace, p)) = prefix.filter(|_| has_token_rows(op)) else {
        return new;
    };
    let old = &trace
        .find(op, layer)
        .expect("the earlier trace is of the same model")
        .tensor;
    let axis = token_axis(new.shape.len());
    let mut shape = new.shape.clone();
    shape[axis] += p;
    let mut parts = old.data.first_rows(&old.shape, p);
    let rows = new.shape[axis];
    parts.push(super::RowsPart {
        data: new.data,
        shape: new.shape,
        rows: 0..rows,
    });
    Tensor {
        data: TensorData::joined(parts, shape.clone()),
        shape,
    }
}

impl Recorder for ContinuedRecorder<'_> {
    fn step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        make: F,
    ) {
        let tensor = join(self.prefix, op, layer, make());
        self.inner.push(op, layer, inputs, tensor);
    }

    fn derived_step<F, D>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        shape: &[usize],
        make: F,
        derive: D,
    ) where
        F: FnOnce() -> Tensor,
        D: Fn(&[ArrayViewD<f32>]) -> ArrayD<f32> + Send + Sync + 'static,
    {
        // Derived from the joined inputs: every token's rows.
        let mut shape = shape.to_vec();
        if has_token_rows(op) {
            let axis = token_axis(shape.len());
            shape[axis] = self.total;
        }
        let prefix = self.prefix;
        self.inner.derived_step(
            op,
            layer,
            inputs,
            &shape,
            || join(prefix, op, layer, make()),
            derive,
        );
    }

    fn unchanged_step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        input: Op,
        make: F,
    ) {
        let prefix = self.prefix;
        self.inner
            .unchanged_step(op, layer, input, || join(prefix, op, layer, make()));
    }

    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, layer: Option<usize>, make: F) {
        self.inner.norm_stats(layer, make);
    }

    /// Its steps hold every token (the earlier trace's rows ahead of the new ones), so steps
    /// are derived from them however many tokens the pass took from the cache.
    fn pass_starts_at(&mut self, _first: usize) {}
}
