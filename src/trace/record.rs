//! Recorders: the forward pass reports each intermediate value to one. `NoRecorder` keeps
//! nothing (and never builds the tensors, which are produced by closures), `TraceRecorder`
//! keeps everything as a `Trace`.

use ndarray::ArrayD;
use serde::{Deserialize, Serialize};

use super::{describe, NormRecord, Op, Step, Tensor};
use crate::model::config::ModelConfig;

/// Statistics of a norm, per token, with the norm's learned parameters; computed only when
/// someone records them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NormStats {
    pub input_mean: Vec<f32>,
    pub input_std: Vec<f32>,
    pub output_mean: Vec<f32>,
    pub output_std: Vec<f32>,
    pub gamma: Vec<f32>,
    /// Absent for RMSNorm.
    pub beta: Option<Vec<f32>>,
}

pub trait Recorder {
    /// Records the result of `op`. `inputs` name the ops whose latest results it reads.
    fn step<F: FnOnce() -> ArrayD<f32>>(&mut self, op: Op, layer: Option<usize>, inputs: &[Op], make: F);
    /// Records per-token statistics of the norm whose output was just recorded.
    fn norm_stats<F: FnOnce() -> NormStats>(&mut self, layer: Option<usize>, make: F);
}

/// Keeps nothing: the plain, untraced forward pass.
pub struct NoRecorder;

impl Recorder for NoRecorder {
    fn step<F: FnOnce() -> ArrayD<f32>>(&mut self, _: Op, _: Option<usize>, _: &[Op], _: F) {}
    fn norm_stats<F: FnOnce() -> NormStats>(&mut self, _: Option<usize>, _: F) {}
}

/// Keeps every step, described for the stepper.
pub struct TraceRecorder<'c> {
    config: &'c ModelConfig,
    pub steps: Vec<Step>,
    pub norms: Vec<NormRecord>,
}

impl<'c> TraceRecorder<'c> {
    pub fn new(config: &'c ModelConfig) -> Self {
        Self { config, steps: Vec::new(), norms: Vec::new() }
    }

    fn latest_name(&self, op: Op) -> Option<String> {
        self.steps.iter().rev().find(|s| s.op == op).map(|s| s.name.clone())
    }
}

impl Recorder for TraceRecorder<'_> {
    fn step<F: FnOnce() -> ArrayD<f32>>(&mut self, op: Op, layer: Option<usize>, inputs: &[Op], make: F) {
        let array = make();
        let text = describe(op, layer, self.config);
        let inputs = inputs.iter().filter_map(|&o| self.latest_name(o)).collect();
        let shape = array.shape().to_vec();
        let data = if array.is_standard_layout() {
            array.into_raw_vec_and_offset().0
        } else {
            array.iter().copied().collect()
        };
        self.steps.push(Step {
            op,
            layer,
            name: text.name,
            title: text.title,
            equation: text.equation,
            explanation: text.explanation,
            axes: text.axes,
            inputs,
            tensor: Tensor { shape, data },
        });
    }

    fn norm_stats<F: FnOnce() -> NormStats>(&mut self, layer: Option<usize>, make: F) {
        let stats = make();
        let step = self.steps.last().map(|s| s.name.clone()).unwrap_or_default();
        self.norms.push(NormRecord { step, layer, stats });
    }
}
