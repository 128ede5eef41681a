//! The trace: every intermediate value of one forward pass, as an ordered list of named
//! steps. The stepper walks it in order; every view reads from it through typed accessors.

mod continued;
mod difference;
mod layered;
mod naming;
mod record;

pub use crate::model::record::{NoRecorder, NormRows, NormStats, Op, Recorder};
pub use crate::tensor::{token_axis, RowsPart};
pub use crate::tensor::{Fill, ReadLog, Recipe, Tensor, TensorData};
pub use crate::tokenize::{TokenInfo, Truncation};
pub use continued::ContinuedRecorder;
pub use difference::Difference;
pub use layered::LayeredRecorder;
pub use naming::{step_axes, step_name};
pub use record::{Readback, TraceRecorder};

use ndarray::{ArrayView1, ArrayView2, ArrayView3};
use serde::{Deserialize, Serialize};

use crate::error::{Result, VizError};
use crate::model::config::{ModelConfig, NormPlace};

/// One operation of the forward pass with its result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub op: Op,
    /// The layer the step belongs to; `None` for embedding and output steps.
    pub layer: Option<usize>,
    /// A stable dotted name such as `layer0.attention` (`step_name`); its title, equation
    /// and explanation: `explain::step_text`.
    pub name: String,
    /// The meaning of each axis of `tensor`, e.g. `["head", "query", "key"]`.
    pub axes: Vec<String>,
    /// Names of the steps whose results this step reads.
    pub inputs: Vec<String>,
    pub tensor: Tensor,
}

/// One normalisation: which step holds its output, and its per-token statistics.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NormRecord {
    /// The name of the step that holds the norm's output.
    pub step: String,
    pub layer: Option<usize>,
    #[serde(flatten)]
    pub stats: NormStats,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trace {
    pub model: String,
    pub config: ModelConfig,
    pub text: String,
    pub tokens: Vec<TokenInfo>,
    pub truncated: Option<Truncation>,
    pub steps: Vec<Step>,
    pub norms: Vec<NormRecord>,
    /// An encoder-decoder's decoder pass carries the encoder's pass over the source here (its
    /// tokens are the source's, its config `ModelConfig::encoder_config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Box<Trace>>,
}

/// One point of the residual stream: its label and the (T, d_model) vectors there.
pub struct StreamPoint<'a> {
    pub label: String,
    pub vectors: ArrayView2<'a, f32>,
}

/// Before an encoder step's name where a name may be of either pass of an encoder-decoder
/// (`Trace::named_steps`, `Readback::of_source`).
pub const SOURCE_STEP: &str = "source/";

impl Trace {
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn step(&self, name: &str) -> Result<&Step> {
        self.steps
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| VizError::NoSuchStep(name.into()))
    }

    /// Every step with the name it is known by across the whole trace: this pass's steps by
    /// their names, then an encoder-decoder's encoder steps (`source`) by theirs behind
    /// `SOURCE_STEP`.
    pub fn named_steps(&self) -> impl Iterator<Item = (String, &Step)> {
        let encoder = self.source.iter().flat_map(|s| {
            s.steps
                .iter()
                .map(|step| (format!("{SOURCE_STEP}{}", step.name), step))
        });
        self.steps
            .iter()
            .map(|s| (s.name.clone(), s))
            .chain(encoder)
    }

    /// True while some of the pass's values (an encoder's pass's included) are still on a
    /// device: a GPU pass's readback brought back what the views on screen read.
    pub fn awaits_device(&self) -> bool {
        self.steps.iter().any(|s| s.tensor.data.awaits_device())
            || self.source.as_ref().is_some_and(|s| s.awaits_device())
    }

    pub fn find(&self, op: Op, layer: Option<usize>) -> Option<&Step> {
        self.steps.iter().find(|s| s.op == op && s.layer == layer)
    }

    fn layer_step(&self, op: Op, layer: usize) -> Result<&Step> {
        self.find(op, Some(layer))
            .ok_or_else(|| VizError::NoSuchStep(format!("{op:?} of layer {layer}")))
    }

    fn check_head(&self, layer: usize, head: usize) -> Result<()> {
        if layer >= self.config.n_layers || head >= self.config.n_heads {
            return Err(VizError::OutOfRange {
                layer,
                head,
                layers: self.config.n_layers,
                heads: self.config.n_heads,
            });
        }
        Ok(())
    }

    /// Softmax attention weights of one head: (T, T), rows are queries, columns keys.
    pub fn attention(&self, layer: usize, head: usize) -> Result<ArrayView2<'_, f32>> {
        self.check_head(layer, head)?;
        Ok(self
            .layer_step(Op::Softmax, layer)?
            .tensor
            .view3()?
            .index_axis_move(ndarray::Axis(0), head))
    }

    /// All heads of one layer: (heads, T, T).
    pub fn attention_layer(&self, layer: usize) -> Result<ArrayView3<'_, f32>> {
        self.check_head(layer, 0)?;
        self.layer_step(Op::Softmax, layer)?.tensor.view3()
    }

    /// Cross-attention weights of one head of an encoder-decoder's decoder layer: (T, S), rows
    /// are target tokens, columns source tokens.
    pub fn cross_attention(&self, layer: usize, head: usize) -> Result<ArrayView2<'_, f32>> {
        self.check_head(layer, head)?;
        Ok(self
            .cross_attention_layer(layer)?
            .index_axis_move(ndarray::Axis(0), head))
    }

    /// All heads' cross-attention of one layer: (heads, T, S).
    pub fn cross_attention_layer(&self, layer: usize) -> Result<ArrayView3<'_, f32>> {
        self.check_head(layer, 0)?;
        self.find(Op::CrossSoftmax, Some(layer))
            .ok_or(VizError::NoCrossAttention)?
            .tensor
            .view3()
    }

    /// Scaled scores before the mask: (T, T).
    pub fn scores(&self, layer: usize, head: usize) -> Result<ArrayView2<'_, f32>> {
        self.check_head(layer, head)?;
        Ok(self
            .layer_step(Op::Scores, layer)?
            .tensor
            .view3()?
            .index_axis_move(ndarray::Axis(0), head))
    }

    /// The positional encoding added to the embeddings, (T, d_model), if the model adds one.
    pub fn position_encoding(&self) -> Option<ArrayView2<'_, f32>> {
        self.find(Op::PositionEncoding, None)
            .and_then(|s| s.tensor.view2().ok())
    }

    /// Final hidden states (T, d_model): the output of the last layer, after the final norm
    /// for pre-LN models.
    pub fn final_hidden(&self) -> Result<ArrayView2<'_, f32>> {
        let step = match self.config.norm_place {
            NormPlace::Pre => self.find(Op::FinalNorm, None),
            NormPlace::Post => self.find(Op::FfnNorm, Some(self.config.n_layers - 1)),
        };
        step.ok_or_else(|| VizError::NoSuchStep("final hidden state".into()))?
            .tensor
            .view2()
    }

    /// The residual stream entering layer `layer`, (T, d_model): the embedding's output (after
    /// its norm, if any) for layer 0, the layer before's output otherwise.
    pub fn stream_into(&self, layer: usize) -> Result<ArrayView2<'_, f32>> {
        let step = match layer {
            0 => self
                .find(Op::EmbeddingNorm, None)
                .or_else(|| self.find(Op::AddPosition, None))
                .or_else(|| self.find(Op::TokenEmbedding, None)),
            l if l <= self.config.n_layers => match self.config.norm_place {
                NormPlace::Post => self.find(Op::FfnNorm, Some(l - 1)),
                NormPlace::Pre => self.find(Op::FfnResidual, Some(l - 1)),
            },
            _ => None,
        };
        step.ok_or_else(|| VizError::NoSuchStep(format!("the stream into layer {layer}")))?
            .tensor
            .view2()
    }

    /// The residual stream after embedding and after each attention and FFN sublayer.
    /// For post-LN models the stream is the normalised sum, for pre-LN the raw sum.
    pub fn residual_stream(&self) -> Vec<StreamPoint<'_>> {
        let mut points = Vec::new();
        let embed = self
            .find(Op::EmbeddingNorm, None)
            .or_else(|| self.find(Op::AddPosition, None));
        let embed = embed.or_else(|| self.find(Op::TokenEmbedding, None));
        if let Some(step) = embed {
            if let Ok(v) = step.tensor.view2() {
                points.push(StreamPoint {
                    label: "embedding".into(),
                    vectors: v,
                });
            }
        }
        let (after_attn, after_cross, after_ffn) = match self.config.norm_place {
            NormPlace::Post => (Op::AttentionNorm, Op::CrossNorm, Op::FfnNorm),
            NormPlace::Pre => (Op::AttentionResidual, Op::CrossResidual, Op::FfnResidual),
        };
        for layer in 0..self.config.n_layers {
            for (op, what) in [
                (after_attn, "attn"),
                (after_cross, "cross"),
                (after_ffn, "ffn"),
            ] {
                if let Some(v) = self
                    .find(op, Some(layer))
                    .and_then(|s| s.tensor.view2().ok())
                {
                    points.push(StreamPoint {
                        label: format!("L{layer} {what}"),
                        vectors: v,
                    });
                }
            }
        }
        points
    }

    /// What each sublayer wrote into the stream, (T, d_model): attention output projections
    /// and FFN outputs, labelled like `residual_stream`.
    pub fn sublayer_writes(&self) -> Vec<StreamPoint<'_>> {
        let mut points = Vec::new();
        for layer in 0..self.config.n_layers {
            for (op, what) in [
                (Op::OutputProjection, "attn"),
                (Op::CrossOutput, "cross"),
                (Op::FfnDown, "ffn"),
            ] {
                if let Some(v) = self
                    .find(op, Some(layer))
                    .and_then(|s| s.tensor.view2().ok())
                {
                    points.push(StreamPoint {
                        label: format!("L{layer} {what}"),
                        vectors: v,
                    });
                }
            }
        }
        points
    }

    /// The norms of a layer (attention norm first), or the embedding/final norms for `None`.
    pub fn norms_of(&self, layer: Option<usize>) -> Vec<&NormRecord> {
        self.norms.iter().filter(|n| n.layer == layer).collect()
    }

    /// The vectors norm `index` of `norms` read and the ones it wrote (after gamma and beta),
    /// both (T, d_model), with the op of its step (which norm of the block it is).
    pub fn norm_input_output(
        &self,
        index: usize,
    ) -> Result<(Op, ArrayView2<'_, f32>, ArrayView2<'_, f32>)> {
        let rec = self
            .norms
            .get(index)
            .ok_or_else(|| VizError::NoSuchStep(format!("norm {index}")))?;
        let output = self.step(&rec.step)?;
        let input = output
            .inputs
            .first()
            .ok_or_else(|| VizError::NoSuchStep(format!("the input of {}", rec.step)))?;
        Ok((
            output.op,
            self.step(input)?.tensor.view2()?,
            output.tensor.view2()?,
        ))
    }

    /// Next-token probabilities at the last position, if the model has a head.
    pub fn next_token_probabilities(&self) -> Result<ArrayView1<'_, f32>> {
        self.find(Op::NextTokenProbabilities, None)
            .ok_or(VizError::NoLmHead)?
            .tensor
            .view1()
    }

    /// Bytes of step values in memory now: kept values, and computed ones that were read;
    /// storage shared by several steps counts once.
    pub fn bytes_in_memory(&self) -> usize {
        let mut seen = std::collections::HashSet::new();
        self.steps
            .iter()
            .filter(|s| s.tensor.data.is_in_memory() && seen.insert(s.tensor.data.storage_id()))
            .map(|s| s.tensor.shape.iter().product::<usize>() * std::mem::size_of::<f32>())
            .sum()
    }

    /// Token strings, for axis labels.
    pub fn token_texts(&self) -> Vec<String> {
        self.tokens.iter().map(|t| t.text.clone()).collect()
    }
}
