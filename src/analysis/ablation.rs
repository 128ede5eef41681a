//! Switching parts of the model off to see what they do: a head or a feed-forward layer
//! replaced by zeros (off) or by its mean over the sentence (what it writes about no token in
//! particular), the positional encoding left out, the causal mask lifted. The replacement
//! values come from the intact pass's trace; the pass itself makes the change
//! (`model::edits`), so every view of the changed trace shows it.

use ndarray::Axis;
use serde::{Deserialize, Serialize};

use super::prediction::{prediction, NextToken};
use crate::error::{Result, VizError};
use crate::model::edits::{Edits, Replacement, Site, With};
use crate::model::record::Op;
use crate::trace::Trace;
use crate::transformer::{PassRequest, Transformer};

/// A part of the model that can be switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum Part {
    Head {
        layer: usize,
        head: usize,
    },
    /// An encoder-decoder's cross-attention head.
    CrossHead {
        layer: usize,
        head: usize,
    },
    Ffn {
        layer: usize,
    },
    /// The positional encoding (added or rotary).
    Position,
    /// The causal mask: every token sees the later ones too.
    Mask,
}

/// What replaces a head's or a feed-forward layer's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// Zeros: the part writes nothing.
    #[default]
    Zero,
    /// Its mean over the sentence's tokens: the part writes the same at every token.
    Mean,
}

/// One part switched off, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Switch {
    #[serde(flatten)]
    pub part: Part,
    #[serde(default)]
    pub fill: Fill,
}

impl Switch {
    pub fn zero(part: Part) -> Self {
        Switch {
            part,
            fill: Fill::Zero,
        }
    }
}

/// The pass's changes for `switches`, their means read from `intact` (the model's pass on the
/// same text without them).
pub fn edits_for(intact: &Trace, switches: &[Switch]) -> Result<Edits> {
    let mut edits = Edits::default();
    for s in switches {
        let (site, op, layer) = match s.part {
            Part::Position => {
                edits.without_position = true;
                continue;
            }
            Part::Mask => {
                if !intact.config.causal {
                    return Err(VizError::BadEdit(format!(
                        "{} has no causal mask: every token already sees every other",
                        intact.config.name
                    )));
                }
                edits.without_mask = true;
                continue;
            }
            Part::Head { layer, head } => (Site::Head { layer, head }, Op::WeightedSum, layer),
            Part::CrossHead { layer, head } => {
                (Site::CrossHead { layer, head }, Op::CrossWeightedSum, layer)
            }
            Part::Ffn { layer } => (Site::Ffn { layer }, Op::FfnDown, layer),
        };
        let with = match s.fill {
            Fill::Zero => With::Zeros,
            Fill::Mean => With::EveryToken(mean_output(intact, op, layer, s.part)?),
        };
        edits.replacements.push(Replacement { site, with });
    }
    edits.check(&intact.config, intact.len())?;
    Ok(edits)
}

/// The mean over the tokens of a head's output (head_dim values) or a layer's feed-forward
/// output (d_model values), as the intact pass computed it.
fn mean_output(intact: &Trace, op: Op, layer: usize, part: Part) -> Result<Vec<f32>> {
    let missing = || VizError::BadEdit(format!("the model has no {part:?}"));
    if layer >= intact.config.n_layers {
        return Err(missing());
    }
    let step = intact.find(op, Some(layer)).ok_or_else(missing)?;
    let mean = match part {
        Part::Head { head, .. } | Part::CrossHead { head, .. } => {
            let heads = step.tensor.view3()?; // (heads, T, hd)
            if head >= heads.dim().0 {
                return Err(missing());
            }
            heads.index_axis(Axis(0), head).mean_axis(Axis(0)) // (hd)
        }
        _ => step.tensor.view2()?.mean_axis(Axis(0)), // (d)
    };
    mean.map(|m| m.to_vec()).ok_or_else(missing)
}

/// The intact and the changed pass over a text.
pub struct Ablated {
    pub intact: Trace,
    pub changed: Trace,
}

/// Runs `model` on `text` as trained and with `switches` off (on the CPU).
pub fn ablate(model: &Transformer, text: &str, switches: &[Switch]) -> Result<Ablated> {
    let intact = model.trace(text)?;
    let edits = edits_for(&intact, switches)?;
    let changed = crate::model::backend::on_cpu(model.pass(
        &crate::model::cpu::Cpu,
        PassRequest::text(text).editing(&edits),
    ))?
    .into_trace();
    Ok(Ablated { intact, changed })
}

/// What `transformer-viz ablate` prints: the text's tokens and the most likely next tokens,
/// intact and with the parts switched off.
#[derive(Debug, Clone, Serialize)]
pub struct AblatedPrediction {
    pub tokens: Vec<String>,
    pub intact: Vec<NextToken>,
    pub next: Vec<NextToken>,
}

pub fn ablated_prediction(
    model: &Transformer,
    text: &str,
    switches: &[Switch],
    top: usize,
) -> Result<AblatedPrediction> {
    let Ablated { intact, changed } = ablate(model, text, switches)?;
    let before = prediction(model, &intact, top)?;
    let after = prediction(model, &changed, top)?;
    Ok(AblatedPrediction {
        tokens: before.tokens,
        intact: before.next,
        next: after.next,
    })
}

/// Parses "L:H" (a head, both counted from 0).
pub fn parse_head(text: &str) -> Result<Part> {
    let bad = || VizError::BadEdit(format!("`{text}` is not a head: write layer:head, as 1:3"));
    let (l, h) = text.trim().split_once(':').ok_or_else(bad)?;
    Ok(Part::Head {
        layer: l.trim().parse().map_err(|_| bad())?,
        head: h.trim().parse().map_err(|_| bad())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_written_layer_colon_head() {
        assert_eq!(parse_head("1:3").unwrap(), Part::Head { layer: 1, head: 3 });
        assert_eq!(
            parse_head(" 0 : 2 ").unwrap(),
            Part::Head { layer: 0, head: 2 }
        );
        for bad in ["1", "a:b", "1:", ":2", "-1:0"] {
            assert!(
                matches!(parse_head(bad), Err(VizError::BadEdit(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_switch_reads_and_writes_as_json() {
        let s = Switch {
            part: Part::Head { layer: 1, head: 2 },
            fill: Fill::Mean,
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#"{"part":"head","layer":1,"head":2,"fill":"mean"}"#);
        assert_eq!(serde_json::from_str::<Switch>(&json).unwrap(), s);
        let bare: Switch = serde_json::from_str(r#"{"part":"position"}"#).unwrap();
        assert_eq!(bare, Switch::zero(Part::Position));
    }
}
