//! Two sentences side by side: the same head's weights on sentence A and sentence B, and
//! their difference A − B as a diverging heatmap, so a class can see what one changed word
//! does to a head ("...because it was too tired" against "...too wide").

use ndarray::Array2;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

use super::attention::draw_token_matrix;
use super::colors::Scale;
use super::patching::{draw_patch_grid, PatchChart};
use super::view::Drawn;
use super::Canvas;
use super::{anchored_text, draw_err};
use crate::analysis::patching::PatchGrid;
use crate::error::Result;
use crate::trace::Trace;

/// Which sentence of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sentence {
    A,
    B,
}

/// The compare charts, named like `View`s.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CompareView {
    /// One head's weights on sentence A or B.
    CompareHead {
        which: Sentence,
        layer: usize,
        head: usize,
    },
    /// A − B for one head, cell by cell, when both sentences have as many tokens.
    CompareDifference { layer: usize, head: usize },
    /// Patching A into B (`analysis::patching`): each head's share of the logit difference
    /// between `answer` and `wrong` (one token each; default: each sentence's most likely next
    /// token) restored.
    PatchHeads {
        #[serde(default)]
        answer: Option<String>,
        #[serde(default)]
        wrong: Option<String>,
    },
    /// The current pass with parts switched off minus the pass as trained, for one head
    /// (`b` is the intact pass): what switching the parts off did to that head's attention.
    OffDifference { layer: usize, head: usize },
    /// The same for the stream entering each layer at each token.
    PatchStream {
        #[serde(default)]
        answer: Option<String>,
        #[serde(default)]
        wrong: Option<String>,
    },
}

impl CompareView {
    /// The answers a patching chart measures, if it is one.
    pub fn patch_answers(&self) -> Option<(Option<&str>, Option<&str>)> {
        match self {
            CompareView::PatchHeads { answer, wrong }
            | CompareView::PatchStream { answer, wrong } => {
                Some((answer.as_deref(), wrong.as_deref()))
            }
            _ => None,
        }
    }
}

/// What a patching chart shows: the grid (or why there is none), or how far the sweep that
/// computes it has come.
pub enum PatchShown<'a> {
    Grid(&'a Result<PatchGrid>),
    Running { done: usize, total: usize },
}

/// Draws a compare chart; `b` is `None` until a second sentence is typed, and then the chart
/// says so in words instead of staying blank. A patching chart draws `patch`, the grid of A
/// put into B (or says why there is none).
pub fn draw_compare_view<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    a: &Trace,
    b: Option<&Trace>,
    view: &CompareView,
    vector: bool,
    patch: Option<PatchShown>,
) -> Result<Drawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let Some(b) = b else {
        let why = match view {
            CompareView::OffDifference { .. } => {
                "Nothing is switched off: the model as trained is all there is."
            }
            _ => "Type a second sentence to compare it with the first.",
        };
        message(area, &[why])?;
        let mut drawn = Drawn::plain();
        (drawn.width, drawn.height) = area.dim_in_pixel();
        return Ok(drawn);
    };
    let mut drawn = match *view {
        CompareView::CompareHead { which, layer, head } => {
            let (trace, name) = if which == Sentence::A {
                (a, "A")
            } else {
                (b, "B")
            };
            draw_sentence_head(area, trace, name, layer, head, vector)
        }
        CompareView::CompareDifference { layer, head } => {
            draw_difference(area, a, b, layer, head, vector, ("A", "B"))
        }
        CompareView::OffDifference { layer, head } => draw_difference(
            area,
            a,
            b,
            layer,
            head,
            vector,
            ("switched off", "as trained"),
        ),
        CompareView::PatchHeads { .. } | CompareView::PatchStream { .. } => {
            let chart = match view {
                CompareView::PatchHeads { .. } => PatchChart::Heads,
                _ => PatchChart::Stream,
            };
            match patch {
                Some(PatchShown::Grid(Ok(grid))) => draw_patch_grid(area, grid, chart, vector),
                Some(PatchShown::Running { done, total }) => {
                    let progress = format!("{done} of {total} patches made so far.");
                    message(area, &["Patching sentence A into B:", &progress])?;
                    Ok(Drawn {
                        note: Some(progress),
                        ..Drawn::plain()
                    })
                }
                Some(PatchShown::Grid(Err(e))) => {
                    let why = e.to_string();
                    message(area, &["No patching for these two sentences:", &why])?;
                    Ok(Drawn {
                        note: Some(why),
                        ..Drawn::plain()
                    })
                }
                None => {
                    message(area, &["Patching was not computed."])?;
                    Ok(Drawn::plain())
                }
            }
        }
    }?;
    // The size every box is given in (the page maps the mouse with it).
    (drawn.width, drawn.height) = area.dim_in_pixel();
    Ok(drawn)
}

/// One head's weights on sentence `name`.
fn draw_sentence_head<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    name: &str,
    layer: usize,
    head: usize,
    vector: bool,
) -> Result<Drawn> {
    let weights = trace.attention(layer, head)?; // (T, T)
    let labels = trace.token_texts();
    let title = format!("Sentence {name}: layer {layer}, head {head}");
    let drawn = draw_token_matrix(
        area,
        weights,
        &labels,
        &title,
        Scale::Sequential { min: 0.0, max: 1.0 },
        "weight",
        vector,
    )?;
    Ok(Drawn::heatmap(
        drawn,
        weights.iter().copied().collect(),
        labels.clone(),
        labels,
    ))
}

/// A − B for one head, cell by cell, or why there is none; `names` are what A and B are called.
fn draw_difference<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    a: &Trace,
    b: &Trace,
    layer: usize,
    head: usize,
    vector: bool,
    names: (&str, &str),
) -> Result<Drawn> {
    if a.len() != b.len() {
        // Position i holds different words in the two sentences: a cell-by-cell
        // difference would compare unrelated tokens, so none is drawn.
        message(
            area,
            &[
                &format!(
                    "Sentence A has {} tokens and sentence B {}.",
                    a.len(),
                    b.len()
                ),
                "Their positions do not line up, so no difference is drawn.",
                "Swap one word for another that is one token too",
                "(tired → wide) to see A − B.",
            ],
        )?;
        return Ok(Drawn {
            note: Some(format!(
                "different token counts ({} and {}): no difference",
                a.len(),
                b.len()
            )),
            ..Drawn::plain()
        });
    }
    let (wa, wb) = (a.attention(layer, head)?, b.attention(layer, head)?); // (T, T) each
    let difference: Array2<f32> = &wa - &wb; // (T, T)

    // A token that differs between the sentences is labelled with both: "tired/wide".
    let labels: Vec<String> = a
        .tokens
        .iter()
        .zip(&b.tokens)
        .map(|(x, y)| {
            if x.text == y.text {
                x.text.clone()
            } else {
                format!("{}/{}", x.text, y.text)
            }
        })
        .collect();
    let largest = difference.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let title = format!("{} − {}: layer {layer}, head {head}", names.0, names.1);
    // Scaled to the largest change, so small shifts stay visible; the colour bar gives the numbers.
    let scale = Scale::Diverging {
        limit: largest.max(0.01),
    };
    let drawn = draw_token_matrix(
        area,
        difference.view(),
        &labels,
        &title,
        scale,
        &format!("{} − {}", names.0, names.1),
        vector,
    )?;
    Ok(Drawn::heatmap(
        drawn,
        difference.iter().copied().collect(),
        labels.clone(),
        labels,
    ))
}

/// A few centred lines of text on an otherwise empty chart.
fn message<DB: Canvas>(area: &DrawingArea<DB, Shift>, lines: &[&str]) -> Result<()> {
    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 400 { 12 } else { 15 };
    let line_h = font_px as i32 * 3 / 2;
    let y0 = h as i32 / 2 - line_h * lines.len() as i32 / 2;
    for (i, line) in lines.iter().enumerate() {
        area.draw(&Text::new(
            line.to_string(),
            (w as i32 / 2, y0 + line_h * i as i32),
            anchored_text(font_px, HPos::Center, VPos::Center),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}
