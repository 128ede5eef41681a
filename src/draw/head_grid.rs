//! Every head of every layer as one grid (layers down, heads across), each cell coloured by
//! how strongly the head follows one pattern on the current text: the previous token, the
//! first token, induction (the token after the last occurrence of the current one), the
//! earlier copy of the current token, or a pronoun's antecedent. A
//! click on a cell opens that head (`Drawn.geometry` maps the click to layer and head).

use ndarray::Array2;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::colors::Scale;
use super::heatmap::{draw_heatmap, Heatmap, HeatmapDrawn};
use super::Canvas;
use crate::analysis::heads::head_scores;
use crate::error::Result;
use crate::trace::Trace;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadPattern {
    Previous,
    Induction,
    Duplicate,
    Antecedent,
    First,
}

impl HeadPattern {
    pub(crate) fn words(self) -> &'static str {
        match self {
            HeadPattern::Previous => "previous-token score",
            HeadPattern::Induction => "induction score",
            HeadPattern::Duplicate => "duplicate-token score",
            HeadPattern::Antecedent => "antecedent score",
            HeadPattern::First => "first-token score",
        }
    }
}

/// The (layers, heads) scores of `pattern` on `trace`; `None` for induction or the duplicate
/// token on a text that repeats no token (no head can show it).
pub fn score_grid(trace: &Trace, pattern: HeadPattern) -> Result<Option<Array2<f32>>> {
    let scores = head_scores(trace)?;
    let mut grid = Array2::<f32>::zeros((trace.config.n_layers, trace.config.n_heads)); // (layers, heads)
    for s in scores {
        let score = match pattern {
            HeadPattern::Previous => Some(s.scores.previous),
            HeadPattern::First => Some(s.scores.first),
            HeadPattern::Induction => s.induction,
            HeadPattern::Duplicate => s.duplicate,
            HeadPattern::Antecedent => s.antecedent,
        };
        match score {
            Some(score) => grid[[s.layer, s.head]] = score,
            None => return Ok(None),
        }
    }
    Ok(Some(grid))
}

/// Draws the grid; returns the heatmap's geometry and the (layers, heads) scores.
pub fn draw_head_grid<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    pattern: HeadPattern,
    vector: bool,
) -> Result<(HeatmapDrawn, Array2<f32>)> {
    let scores = score_grid(trace, pattern)?;
    area.fill(&WHITE).map_err(super::draw_err)?;
    let (layers, heads) = (trace.config.n_layers, trace.config.n_heads);
    let title = match &scores {
        Some(_) => format!("Every head's {} (mean attention weight), {layers} layers × {heads} heads", pattern.words()),
        // Drawn empty with the reason, not refused: the student sees what to do.
        None if pattern == HeadPattern::Antecedent => "No pronoun in this text refers to a name or a noun the finder knows (she, he, it, they after Mary, John, the dog…): use “Pronouns”".to_string(),
        None => format!("No token repeats in this text, so no head can show its {}: use “Repeat a random sequence twice”", pattern.words()),
    };
    let grid = scores.unwrap_or_else(|| Array2::zeros((layers, heads))); // (layers, heads)
    let rows: Vec<String> = (0..grid.nrows()).map(|l| format!("L{l}")).collect();
    let cols: Vec<String> = (0..grid.ncols()).map(|h| format!("H{h}")).collect();
    let drawn = draw_heatmap(
        area,
        grid.view(),
        &Heatmap {
            title: &title,
            x_desc: "head",
            y_desc: "layer",
            col_labels: &cols,
            row_labels: &rows,
            scale: Scale::Sequential { min: 0.0, max: 1.0 },
            legend: "score",
            vector,
        },
    )?;
    Ok((drawn, grid))
}
