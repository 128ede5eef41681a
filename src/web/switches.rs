//! Parts of the model switched off in the page (`analysis::ablation`): which ones, every part
//! the model has for the page's picker, and the next-token probabilities with and without
//! them. The pass itself (`Viz::set_text`) draws the changed model while any is off.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::js::{js_err, to_js};
use super::viz::Viz;
use crate::analysis::ablation::{Part, Switch};
use crate::analysis::attribution::part_tokens;
use crate::error::VizError;
use crate::model::config::Position;
use crate::model::ModelConfig;
use crate::tensor::top_ids;

/// A part the page can switch off, as its picker lists it.
#[derive(Serialize)]
struct Switchable {
    #[serde(flatten)]
    part: Part,
    label: String,
}

/// How the page names a part.
pub fn part_label(part: &Part) -> String {
    match part {
        Part::Head { layer, head } => format!("layer {layer} head {head}"),
        Part::CrossHead { layer, head } => format!("layer {layer} cross-attention head {head}"),
        Part::Ffn { layer } => format!("layer {layer} feed-forward"),
        Part::Position => "positional encoding".into(),
        Part::Mask => "causal mask".into(),
    }
}

/// Every part of a model of `c` that can be switched off, in the order of the pass.
fn parts_of(c: &ModelConfig) -> Vec<Part> {
    let mut parts = Vec::new();
    if c.position != Position::None {
        parts.push(Part::Position);
    }
    if c.causal {
        parts.push(Part::Mask);
    }
    for layer in 0..c.n_layers {
        parts.extend((0..c.n_heads).map(|head| Part::Head { layer, head }));
        if c.is_encoder_decoder() {
            parts.extend((0..c.n_heads).map(|head| Part::CrossHead { layer, head }));
        }
        parts.push(Part::Ffn { layer });
    }
    parts
}

/// One row of the comparison: a token and its probability with the parts on and off.
#[derive(Serialize)]
struct Row {
    token: String,
    intact: f32,
    changed: f32,
}

#[derive(Serialize)]
struct SwitchedPrediction {
    /// What is off, as the page names it.
    off: Vec<String>,
    rows: Vec<Row>,
}

#[wasm_bindgen]
impl Viz {
    /// Switches parts off (`[{part: "head", layer, head, fill: "zero" | "mean"}, ...]`, parts
    /// as `switchable_parts` lists them); none switches every part back on. The next
    /// `set_text` computes the pass again. A part the model does not have is refused with
    /// a message and nothing changes.
    pub fn set_switches(&mut self, switches: JsValue) -> Result<(), JsError> {
        let switches: Vec<Switch> = serde_wasm_bindgen::from_value(switches)
            .map_err(|e| JsError::new(&format!("parts to switch off: {e}")))?;
        let parts = parts_of(&self.model.config);
        if let Some(s) = switches.iter().find(|s| !parts.contains(&s.part)) {
            return Err(js_err(VizError::BadEdit(format!(
                "{} has no {}",
                self.model.config.name,
                part_label(&s.part)
            ))));
        }
        self.switches = switches;
        self.recompute_next();
        Ok(())
    }

    /// Every part this model can switch off, in the order of the pass: `[{part, layer?,
    /// head?, label}]`.
    pub fn switchable_parts(&self) -> Result<JsValue, JsError> {
        let parts: Vec<Switchable> = parts_of(&self.model.config)
            .into_iter()
            .map(|part| Switchable {
                label: part_label(&part),
                part,
            })
            .collect();
        to_js(&parts)
    }

    /// The next token's probabilities as trained and with the parts switched off, for the
    /// `top` most likely tokens of either, most likely as trained first: `{off, rows:
    /// [{token, intact, changed}]}`. Nothing is off: no rows.
    pub fn switched_off_prediction(&self, top: usize) -> Result<JsValue, JsError> {
        let off = self.switches.iter().map(|s| part_label(&s.part)).collect();
        let (Some(intact), Ok(changed)) = (self.intact.as_ref(), self.current()) else {
            return to_js(&SwitchedPrediction { off, rows: vec![] });
        };
        let before = intact.next_token_probabilities().map_err(js_err)?.to_vec(); // (vocab)
        let after = changed.next_token_probabilities().map_err(js_err)?.to_vec(); // (vocab)
        let mut ids = top_ids(&before, top);
        for id in top_ids(&after, top) {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let rows = ids
            .into_iter()
            .map(|id| Row {
                token: self
                    .model
                    .tokenizer
                    .token_text(id)
                    .unwrap_or("")
                    .to_string(),
                intact: before[id as usize],
                changed: after[id as usize],
            })
            .collect();
        to_js(&SwitchedPrediction { off, rows })
    }

    /// The tokens a head, cross-attention head or feed-forward layer (`{part, layer, head?}`)
    /// pushes up and down most at the last token, `top` of each, on the pass the page shows:
    /// `{exact, promoted: [{token, logit}], suppressed: [...], note}`
    /// (`analysis::attribution::part_tokens`).
    pub fn part_tokens(&self, part: JsValue, top: usize) -> Result<JsValue, JsError> {
        let part: Part = serde_wasm_bindgen::from_value(part)
            .map_err(|e| JsError::new(&format!("a part: {e}")))?;
        if !matches!(
            part,
            Part::Head { .. } | Part::CrossHead { .. } | Part::Ffn { .. }
        ) || !parts_of(&self.model.config).contains(&part)
        {
            return Err(js_err(VizError::BadEdit(format!(
                "{} has no {} that writes into the stream",
                self.model.config.name,
                part_label(&part)
            ))));
        }
        let trace = self.current()?;
        let tokens =
            part_tokens(&self.model, trace, part, top.min(50), &self.switches).map_err(js_err)?;
        to_js(&tokens)
    }
}
