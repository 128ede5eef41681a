//! `Cpu`: the reference backend every other is checked against: this crate's ndarray and
//! WebAssembly SIMD code, each product shared among the threads there are
//! (`model::threads`). The arithmetic itself lives with the concept it computes (attention,
//! feed-forward, norm, position); this file only answers the `Backend` trait with it.

use ndarray::{concatenate, s, Array2, Array3, Axis};

use super::attention::{
    apply_causal_mask_from, merge_heads, scaled_scores, softmax_heads, split_heads, weighted_values,
};
use super::backend::Backend;
use super::config::{Activation, NormKind};
use super::edits::Overwrite;
use super::ffn::{activated, gated};
use super::linear::Linear;
use super::matrix::Matrix;
use super::norm::{self, row_mean_std};
use super::position::apply_rotary_from;
use super::weights::NormWeights;
use crate::tensor::Tensor;

/// The CPU: the reference every other backend is checked against.
pub struct Cpu;

impl Backend for Cpu {
    fn values_at_once(&self) -> bool {
        true
    }

    type Rows = Array2<f32>;
    type Heads = Array3<f32>;

    fn name(&self) -> String {
        "cpu".into()
    }

    fn rows(&self, x: Array2<f32>) -> Array2<f32> {
        x
    }

    fn linear(&self, x: &Array2<f32>, layer: &Linear) -> Array2<f32> {
        layer.forward(x.view()) // (T, out)
    }

    fn unembed(&self, x: &Array2<f32>, u: &Matrix) -> Array2<f32> {
        u.multiply_rows(x.view(), 0, u.rows()) // (T, vocab)
    }

    fn last_row(&self, x: &Array2<f32>) -> Array2<f32> {
        x.slice(s![x.nrows().saturating_sub(1).., ..]).to_owned() // (1, d)
    }

    fn norm(&self, kind: NormKind, w: &NormWeights, x: &Array2<f32>, eps: f32) -> Array2<f32> {
        norm::apply(kind, w, x.view(), eps) // (T, d)
    }

    fn row_stats(&self, x: &Array2<f32>, y: &Array2<f32>) -> Array2<f32> {
        let (input_mean, input_std) = row_mean_std(x.view()); // (T), (T)
        let (output_mean, output_std) = row_mean_std(y.view()); // (T), (T)
        let columns = [&input_mean, &input_std, &output_mean, &output_std];
        Array2::from_shape_fn((x.nrows(), 4), |(i, k)| columns[k][i]) // (T, 4), row-major
    }

    fn add(&self, mut x: Array2<f32>, y: &Array2<f32>) -> Array2<f32> {
        x += y; // (T, d)
        x
    }

    fn overwrite_rows(&self, mut x: Array2<f32>, overwrite: &Overwrite) -> Array2<f32> {
        overwrite.apply(x.as_slice_mut().expect("the pass's rows are contiguous")); // (T, d)
        x
    }

    fn overwrite_heads(&self, mut x: Array3<f32>, overwrite: &Overwrite) -> Array3<f32> {
        overwrite.apply(x.as_slice_mut().expect("the pass's heads are contiguous")); // (heads, T, hd)
        x
    }

    fn split_heads(&self, x: Array2<f32>, heads: usize, head_dim: usize) -> Array3<f32> {
        split_heads(x, heads, head_dim) // (heads, T, hd)
    }

    fn merge_heads(&self, x: Array3<f32>) -> Array2<f32> {
        merge_heads(x) // (T, heads * hd)
    }

    fn scores(
        &self,
        q: &Array3<f32>,
        k: &Array3<f32>,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> Array3<f32> {
        let mut scores = scaled_scores(q.view(), k.view(), group, scale); // (heads, Tq, Tk)
        if let Some(first) = causal {
            apply_causal_mask_from(&mut scores, first);
        }
        scores
    }

    fn mask(&self, mut scores: Array3<f32>, first: usize) -> Array3<f32> {
        apply_causal_mask_from(&mut scores, first); // (heads, Tq, Tk)
        scores
    }

    fn attend(
        &self,
        q: &Array3<f32>,
        k: &Array3<f32>,
        v: &Array3<f32>,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> (Array3<f32>, Array3<f32>) {
        let mut weights = self.scores(q, k, group, scale, causal); // (heads, Tq, Tk)
        softmax_heads(&mut weights); // (heads, Tq, Tk), rows sum to 1
        let out = weighted_values(weights.view(), v.view(), group); // (heads, Tq, hd)
        (weights, out)
    }

    fn pointwise(&self, hidden: &Array2<f32>, activation: Activation) -> Array2<f32> {
        activated(hidden.view(), activation) // (T, d_ff)
    }

    fn gate(&self, up: &Array2<f32>, gate: &Array2<f32>) -> Array2<f32> {
        gated(up.view(), gate.view()) // (T, d_ff)
    }

    fn rotary(
        &self,
        mut x: Array3<f32>,
        base: f32,
        adjacent_pairs: bool,
        first: usize,
    ) -> Array3<f32> {
        apply_rotary_from(&mut x, base, adjacent_pairs, first); // (heads, T, hd)
        x
    }

    fn append_tokens(&self, cached: &Array3<f32>, new: &Array3<f32>) -> Array3<f32> {
        concatenate(Axis(1), &[cached.view(), new.view()]).expect("same heads and width")
        // (kv, P + n, hd)
    }

    fn first_tokens(&self, x: &Array3<f32>, n: usize) -> Array3<f32> {
        x.slice(s![.., ..n, ..]).to_owned() // (kv, n, hd)
    }

    fn trace_rows(&self, x: &Array2<f32>) -> Tensor {
        Tensor::from_array(x.clone().into_dyn())
    }

    fn trace_heads(&self, x: &Array3<f32>) -> Tensor {
        Tensor::from_array(x.clone().into_dyn())
    }

    fn rows_into_trace(&self, x: Array2<f32>) -> Tensor {
        Tensor::from_array(x.into_dyn())
    }

    fn heads_into_trace(&self, x: Array3<f32>) -> Tensor {
        Tensor::from_array(x.into_dyn())
    }

    async fn finish(&self) -> bool {
        true
    }
}
