//! An encoder-decoder's cross-attention of one head: target tokens down (the decoder's
//! queries), source tokens across (the encoder's keys). For the reversal model a head that
//! does the task draws the anti-diagonal: the t-th letter written reads the t-th from the end.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::colors::Scale;
use super::draw_err;
use super::heatmap::{draw_heatmap, Heatmap, HeatmapDrawn};
use super::Canvas;
use crate::error::{Result, VizError};
use crate::trace::Trace;

/// The (T, S) weights of `head` in decoder layer `layer`, as a heatmap.
pub fn draw_cross_attention<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    trace: &Trace,
    layer: usize,
    head: usize,
    vector: bool,
) -> Result<HeatmapDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let weights = trace.cross_attention(layer, head)?; // (T, S)
    let source = trace
        .source
        .as_ref()
        .ok_or(VizError::NoCrossAttention)?
        .token_texts();
    let target = trace.token_texts();
    let title = format!("Cross-attention, decoder layer {layer}, head {head}");
    draw_heatmap(
        area,
        weights,
        &Heatmap {
            title: &title,
            x_desc: "source token (the encoder's keys)",
            y_desc: "target token (the decoder's queries)",
            col_labels: &source,
            row_labels: &target,
            scale: Scale::Sequential { min: 0.0, max: 1.0 },
            legend: "weight",
            vector,
        },
    )
}
