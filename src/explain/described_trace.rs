//! A trace with each step's texts beside its values: what `transformer-viz trace --full`
//! writes, so a reader of the JSON has the stepper's words and equations too.

use serde::Serialize;

use super::step_text;
use crate::model::config::ModelConfig;
use crate::tensor::Tensor;
use crate::tokenize::{TokenInfo, Truncation};
use crate::trace::{NormRecord, Op, Step, Trace};

/// `Trace`'s fields in its order, each step with its texts.
#[derive(Serialize)]
pub struct DescribedTrace<'a> {
    model: &'a str,
    config: &'a ModelConfig,
    text: &'a str,
    tokens: &'a [TokenInfo],
    truncated: &'a Option<Truncation>,
    steps: Vec<DescribedStep<'a>>,
    norms: &'a [NormRecord],
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<Box<DescribedTrace<'a>>>,
}

/// `Step`'s fields with the texts after its name.
#[derive(Serialize)]
struct DescribedStep<'a> {
    op: Op,
    layer: Option<usize>,
    name: &'a str,
    title: String,
    equation: String,
    explanation: String,
    axes: &'a [String],
    inputs: &'a [String],
    tensor: &'a Tensor,
}

impl<'a> DescribedTrace<'a> {
    pub fn new(trace: &'a Trace) -> Self {
        let steps = trace
            .steps
            .iter()
            .map(|s: &'a Step| {
                let text = step_text(s, &trace.config);
                DescribedStep {
                    op: s.op,
                    layer: s.layer,
                    name: &s.name,
                    title: text.title,
                    equation: text.equation,
                    explanation: text.explanation,
                    axes: &s.axes,
                    inputs: &s.inputs,
                    tensor: &s.tensor,
                }
            })
            .collect();
        Self {
            model: &trace.model,
            config: &trace.config,
            text: &trace.text,
            tokens: &trace.tokens,
            truncated: &trace.truncated,
            steps,
            norms: &trace.norms,
            source: trace.source.as_deref().map(|s| Box::new(Self::new(s))),
        }
    }
}
