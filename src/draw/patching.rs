//! Activation patching's two grids (`analysis::patching`): for each head (layer x head), and
//! for the stream entering each layer at each token (layer x token), the share of the logit
//! difference between the two answers that putting sentence A's values into sentence B's run
//! restores: 1 (red) restores A's answer, 0 (white) changes nothing, below 0 (blue) pushes
//! further toward B's.

use ndarray::Array2;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::colors::Scale;
use super::heatmap::{draw_heatmap, Heatmap};
use super::prediction::token_label;
use super::view::Drawn;
use super::Canvas;
use crate::analysis::patching::PatchGrid;
use crate::error::Result;

/// Which grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchChart {
    Heads,
    Stream,
}

/// Draws one grid of `grid`.
pub fn draw_patch_grid<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    grid: &PatchGrid,
    chart: PatchChart,
    vector: bool,
) -> Result<Drawn> {
    let (rows, cols) = match chart {
        PatchChart::Heads => (&grid.heads, grid.heads.first().map_or(0, Vec::len)),
        PatchChart::Stream => (&grid.stream, grid.tokens.len()),
    };
    let m = Array2::from_shape_fn((rows.len(), cols), |(r, c)| rows[r][c]); // (layers, heads or T)
    let row_labels: Vec<String> = (0..rows.len()).map(|l| format!("layer {l}")).collect();
    let col_labels: Vec<String> = match chart {
        PatchChart::Heads => (0..cols).map(|h| format!("head {h}")).collect(),
        // A token that differs between the sentences is labelled with both: "John/Mary".
        PatchChart::Stream => grid
            .tokens
            .iter()
            .zip(&grid.corrupt_tokens)
            .map(|(a, b)| {
                if a == b {
                    token_label(a)
                } else {
                    format!("{}/{}", token_label(a), token_label(b))
                }
            })
            .collect(),
    };
    let largest = m.iter().fold(1.0f32, |acc, v| acc.max(v.abs()));
    let (answer, wrong) = (token_label(&grid.answer), token_label(&grid.wrong));
    let title = match chart {
        PatchChart::Heads => format!("Each head of A put into B: share of “{answer}” − “{wrong}” restored"),
        PatchChart::Stream => format!("The stream of A put into B, a layer and a token at a time: share of “{answer}” − “{wrong}” restored"),
    };
    let drawn = draw_heatmap(
        area,
        m.view(),
        &Heatmap {
            title: &title,
            x_desc: match chart {
                PatchChart::Heads => "head",
                PatchChart::Stream => "token (A/B where they differ)",
            },
            y_desc: match chart {
                PatchChart::Heads => "layer",
                PatchChart::Stream => "entering layer",
            },
            col_labels: &col_labels,
            row_labels: &row_labels,
            scale: Scale::Diverging { limit: largest },
            legend: "share restored",
            vector,
        },
    )?;
    Ok(Drawn::heatmap(
        drawn,
        m.iter().copied().collect(),
        row_labels,
        col_labels,
    ))
}
