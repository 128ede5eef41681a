//! Every head of every layer as one grid (layers down, heads across), each cell coloured by
//! how strongly the head follows one pattern on the current text: the previous token, the
//! first token, induction (the token after the last occurrence of the current one), the
//! earlier copy of the current token, or a pronoun's antecedent. A
//! click on a cell opens that head (`Drawn.geometry` maps the click to layer and head).

use ndarray::Array2;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use plotters::style::text_anchor::{HPos, VPos};

use super::colors::{ink_on, Scale};
use super::heatmap::{draw_heatmap, Geometry, Heatmap, HeatmapDrawn};
use super::{anchored_text, Canvas};
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
    let labelled = scores.is_some();
    let grid = scores.unwrap_or_else(|| Array2::zeros((layers, heads))); // (layers, heads)
    let scale = Scale::Sequential { min: 0.0, max: 1.0 };
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
            scale,
            legend: "score",
            vector,
        },
    )?;
    if labelled {
        write_scores(area, &drawn.geometry, &grid, scale)?;
    }
    Ok((drawn, grid))
}

/// Text height of a cell's score, as a share of the cell's height.
const SCORE_TEXT_OF_CELL: f64 = 0.4;
/// Largest and smallest score text: below the smallest (SmolLM2's 30 layers) the cells stay
/// unlabelled and their scores are in the hover.
const SCORE_TEXT_PX: (f64, f64) = (10.0, 22.0);

/// Each cell's score written in it, two decimals, in black or white by the cell's colour, so a
/// projector's back row reads the grid without hovering.
fn write_scores<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    geometry: &Geometry,
    grid: &Array2<f32>, // (layers, heads)
    scale: Scale,
) -> Result<()> {
    let cell_w = geometry.width as f64 / geometry.cols as f64;
    let cell_h = geometry.height as f64 / geometry.rows as f64;
    // "0.00" is about 2.3 text heights wide; keep a margin either side.
    let px = (cell_h * SCORE_TEXT_OF_CELL)
        .min(cell_w / 3.0)
        .min(SCORE_TEXT_PX.1);
    if px < SCORE_TEXT_PX.0 {
        return Ok(());
    }
    for ((layer, head), &score) in grid.indexed_iter() {
        let x = geometry.left as f64 + (head as f64 + 0.5) * cell_w;
        let y = geometry.top as f64 + (layer as f64 + 0.5) * cell_h;
        let ink = ink_on(scale.color(score));
        let style = anchored_text(px as u32, HPos::Center, VPos::Center).color(&ink);
        area.draw(&Text::new(
            format!("{score:.2}"),
            (x.round() as i32, y.round() as i32),
            style,
        ))
        .map_err(super::draw_err)?;
    }
    Ok(())
}
