//! Recorders: the forward pass reports each intermediate value to one. `NoRecorder` keeps
//! nothing (and never builds the tensors, which are produced by closures), `TraceRecorder`
//! keeps every step as a `Trace`: the values of most, and for the large ones that are cheap
//! to compute again from earlier steps, how to compute them.

use std::collections::HashSet;

use ndarray::{ArrayD, ArrayViewD};
use serde::{Deserialize, Serialize};

use super::{describe, NormRecord, Op, Step, Tensor, TensorData};
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

impl NormStats {
    /// The statistics of `rows` (T, 4): each row's input mean and standard deviation, then
    /// its output's.
    fn from_rows(rows: &Tensor, gamma: Vec<f32>, beta: Option<Vec<f32>>) -> Self {
        let column = |c: usize| {
            rows.data
                .chunks_exact(4)
                .map(|r| r[c])
                .collect::<Vec<f32>>()
        };
        NormStats {
            input_mean: column(0),
            input_std: column(1),
            output_mean: column(2),
            output_std: column(3),
            gamma,
            beta,
        }
    }
}

/// What a norm's statistics are read from: `rows` (T, 4), each row's input mean and standard
/// deviation then its output's (a GPU's arrive with the pass's readback), and the norm's
/// learned parameters.
pub struct NormRows {
    pub rows: Tensor,
    pub gamma: Vec<f32>,
    /// Absent for RMSNorm.
    pub beta: Option<Vec<f32>>,
}

impl NormRows {
    pub fn stats(self) -> NormStats {
        NormStats::from_rows(&self.rows, self.gamma, self.beta)
    }
}

/// The recorder's side of a pass: each step's values come from `make`, called only by a
/// recorder that keeps them. They are a `Tensor`, whose data a GPU fills after the pass (its
/// one readback): a recorder reads no values before the pass has ended, except on the CPU.
pub trait Recorder {
    /// Records the result of `op`. `inputs` name the ops whose latest results it reads.
    fn step<F: FnOnce() -> Tensor>(&mut self, op: Op, layer: Option<usize>, inputs: &[Op], make: F);

    /// Records the result of `op`, of `shape`, which `derive` computes again from the latest
    /// results of `inputs` (in that order). `derive` must be the computation the pass ran, so
    /// that it gives the same numbers; a recorder may keep `make()` or `derive` instead.
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
        let _ = (shape, derive);
        self.step(op, layer, inputs, make);
    }

    /// Records the result of `op`, which is exactly the latest result of `input` (the mask of
    /// a model that hides nothing).
    fn unchanged_step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        input: Op,
        make: F,
    ) {
        self.step(op, layer, &[input], make);
    }

    /// Records per-token statistics of the norm whose output was just recorded.
    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, layer: Option<usize>, make: F);

    /// Says that layer `layer` begins, reading the latest result of `input` (the residual
    /// stream): a recorder that computes a layer's steps again on read starts from there.
    fn layer_input(&mut self, layer: usize, input: Op) {
        let _ = (layer, input);
    }

    /// True when the latest results this recorder holds cover every token even in a pass
    /// through a KV cache (it puts an earlier trace's rows ahead of the new ones): steps can
    /// then be derived from them (`derived_step`) after a cached start too.
    fn holds_every_token(&self) -> bool {
        false
    }
}

/// Keeps nothing: the plain, untraced forward pass.
pub struct NoRecorder;

impl Recorder for NoRecorder {
    fn step<F: FnOnce() -> Tensor>(&mut self, _: Op, _: Option<usize>, _: &[Op], _: F) {}
    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, _: Option<usize>, _: F) {}
}

/// Which of a pass's values a device's readback brings back with the pass (a GPU keeps the
/// pass's tensors on the device until its end). The CPU computes every value where it is
/// read, so this changes nothing there.
#[derive(Debug, Clone, Default)]
pub enum Readback {
    /// Every value the trace keeps.
    #[default]
    Everything,
    /// The steps of these names (a derived one's sources with it) and every norm's
    /// statistics; the other steps' values stay on the device until asked for
    /// (`GpuBackend::read_rest`), and read as zeros until then (`TensorData::awaits_device`).
    Steps(HashSet<String>),
}

impl Readback {
    /// The steps `names` (what the views on screen read) and those read without drawing: the
    /// tokens, the logits and the next-token probabilities (the prediction and generation).
    pub fn views(names: impl IntoIterator<Item = String>, config: &ModelConfig) -> Self {
        let mut names: HashSet<String> = names.into_iter().collect();
        names.extend(
            [Op::Tokenize, Op::Unembed, Op::NextTokenProbabilities]
                .map(|op| describe(op, None, config).name),
        );
        Readback::Steps(names)
    }

    /// What an encoder-decoder's encoder pass brings back: the names behind `SOURCE_STEP`
    /// (`Trace::named_steps`), without it.
    pub fn of_source(&self) -> Self {
        match self {
            Readback::Everything => Readback::Everything,
            Readback::Steps(names) => Readback::Steps(
                names
                    .iter()
                    .filter_map(|n| n.strip_prefix(super::SOURCE_STEP))
                    .map(str::to_string)
                    .collect(),
            ),
        }
    }
}

/// Keeps every step, described for the stepper.
pub struct TraceRecorder<'c> {
    config: &'c ModelConfig,
    pub steps: Vec<Step>,
    norms: Vec<NormRecord>,
    /// Norms whose statistics a device has not read back yet, by their index in `norms`.
    norms_later: Vec<(usize, NormRows)>,
    readback: Readback,
}

impl<'c> TraceRecorder<'c> {
    pub fn new(config: &'c ModelConfig) -> Self {
        Self::with_readback(config, Readback::Everything)
    }

    /// A recorder whose device values come back with the pass as `readback` says.
    pub fn with_readback(config: &'c ModelConfig, readback: Readback) -> Self {
        Self {
            config,
            steps: Vec::new(),
            norms: Vec::new(),
            norms_later: Vec::new(),
            readback,
        }
    }

    /// The steps and norms recorded. Called after the pass has ended (a GPU's after its
    /// readback: the norms' statistics are read from the values it brought back).
    pub fn into_parts(mut self) -> (Vec<Step>, Vec<NormRecord>) {
        for (i, rows) in self.norms_later.drain(..) {
            self.norms[i].stats = rows.stats();
        }
        (self.steps, self.norms)
    }

    /// Records a norm's statistics as they are.
    pub(crate) fn push_norm(&mut self, layer: Option<usize>, stats: NormStats) {
        let step = self
            .steps
            .last()
            .map(|s| s.name.clone())
            .unwrap_or_default();
        self.norms.push(NormRecord { step, layer, stats });
    }

    pub(crate) fn latest(&self, op: Op) -> Option<&Step> {
        self.steps.iter().rev().find(|s| s.op == op)
    }

    fn latest_name(&self, op: Op) -> Option<String> {
        self.latest(op).map(|s| s.name.clone())
    }

    pub(crate) fn push(&mut self, op: Op, layer: Option<usize>, inputs: &[Op], tensor: Tensor) {
        let text = describe(op, layer, self.config);
        if let Readback::Steps(names) = &self.readback {
            if names.contains(&text.name) {
                tensor.data.read_with_pass();
            } else {
                tensor.data.read_later();
            }
        }
        let inputs = inputs.iter().filter_map(|&o| self.latest_name(o)).collect();
        self.steps.push(Step {
            op,
            layer,
            name: text.name,
            title: text.title,
            equation: text.equation,
            explanation: text.explanation,
            axes: text.axes,
            inputs,
            tensor,
        });
    }
}

/// Row-major values of an array in any layout.
pub(crate) fn row_major(array: ArrayD<f32>) -> Vec<f32> {
    if array.is_standard_layout() {
        array.into_raw_vec_and_offset().0
    } else {
        array.iter().copied().collect()
    }
}

impl Recorder for TraceRecorder<'_> {
    fn step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        make: F,
    ) {
        self.push(op, layer, inputs, make());
    }

    /// Keeps `derive` and handles to its inputs' values, not the values.
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
        let sources: Option<Vec<Tensor>> = inputs
            .iter()
            .map(|&o| self.latest(o).map(|s| s.tensor.clone()))
            .collect();
        let Some(sources) = sources else {
            return self.step(op, layer, inputs, make); // nothing to derive from: keep the values
        };
        let data = sources.iter().map(|t| t.data.clone()).collect();
        let recipe = Box::new(move || {
            let views: Vec<ArrayViewD<f32>> = sources.iter().map(Tensor::view).collect();
            row_major(derive(&views))
        });
        self.push(
            op,
            layer,
            inputs,
            Tensor {
                shape: shape.to_vec(),
                data: TensorData::derived(recipe, data),
            },
        );
    }

    /// Shares the storage of `input`'s result.
    fn unchanged_step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        input: Op,
        make: F,
    ) {
        match self.latest(input).map(|s| s.tensor.clone()) {
            Some(tensor) => self.push(op, layer, &[input], tensor),
            None => self.step(op, layer, &[input], make),
        }
    }

    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, layer: Option<usize>, make: F) {
        let rows = make();
        if rows.rows.data.is_in_memory() {
            self.push_norm(layer, rows.stats());
        } else {
            // A device's values, read back when the pass ends: `into_parts` reads them.
            let empty = NormStats {
                input_mean: vec![],
                input_std: vec![],
                output_mean: vec![],
                output_std: vec![],
                gamma: vec![],
                beta: None,
            };
            self.push_norm(layer, empty);
            self.norms_later.push((self.norms.len() - 1, rows));
        }
    }
}
