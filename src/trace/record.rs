//! Recorders: the forward pass reports each intermediate value to one. `NoRecorder` keeps
//! nothing (and never builds the tensors, which are produced by closures), `TraceRecorder`
//! keeps every step as a `Trace`: the values of most, and for the large ones that are cheap
//! to compute again from earlier steps, how to compute them.

use std::collections::HashSet;

use ndarray::{ArrayD, ArrayViewD};

use super::{
    step_axes, step_name, NormRecord, NormRows, NormStats, Op, Recorder, Step, Tensor, TensorData,
};
use crate::model::config::ModelConfig;
use crate::tensor::row_major;

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
    pub fn views(names: impl IntoIterator<Item = String>) -> Self {
        let mut names: HashSet<String> = names.into_iter().collect();
        names.extend(
            [Op::Tokenize, Op::Unembed, Op::NextTokenProbabilities].map(|op| step_name(op, None)),
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
    /// The first token the pass computes (`Recorder::pass_starts_at`): after a cached start
    /// the steps hold only the new tokens' rows, so derived steps keep their values.
    first: usize,
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
            first: 0,
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
        let name = step_name(op, layer);
        if let Readback::Steps(names) = &self.readback {
            if names.contains(&name) {
                tensor.data.read_with_pass();
            } else {
                tensor.data.read_later();
            }
        }
        let inputs = inputs.iter().filter_map(|&o| self.latest_name(o)).collect();
        self.steps.push(Step {
            op,
            layer,
            name,
            axes: step_axes(op, self.config),
            inputs,
            tensor,
        });
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
        let Some(sources) = sources.filter(|_| self.first == 0) else {
            return self.step(op, layer, inputs, make); // nothing to derive from (or only the new rows): keep the values
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

    fn pass_starts_at(&mut self, first: usize) {
        self.first = first;
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
