//! Positional-encoding views: the table itself (position x feature), a few features as waves
//! across positions, and the position-to-position similarity the table implies.

use ndarray::{Array2, ArrayView2, Axis};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::colors::{Scale, CATEGORICAL};
use super::heatmap::{draw_heatmap, Heatmap, HeatmapDrawn};
use super::{draw_err, draw_legend, house_mesh, LegendEntry, LegendMark, FONT};
use crate::error::Result;

/// The table as a heatmap: rows are positions, columns features.
pub fn draw_table<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, table: ArrayView2<f32>, title: &str, vector: bool) -> Result<HeatmapDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let values: Vec<f32> = table.iter().copied().collect();
    let scale = Scale::fit_robust(&values, 0.99);
    draw_heatmap(
        area,
        table,
        &Heatmap { title, x_desc: "feature i", y_desc: "position p", col_labels: &[], row_labels: &[], scale, legend: "value", vector },
    )
}

/// Selected features as curves across positions.
pub fn draw_waves<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, table: ArrayView2<f32>, dims: &[usize], title: &str) -> Result<()> {
    area.fill(&WHITE).map_err(draw_err)?;
    let (positions, d) = table.dim();
    let dims: Vec<usize> = dims.iter().copied().filter(|&i| i < d).collect();
    let (lo, hi) = dims
        .iter()
        .flat_map(|&i| table.column(i).to_vec())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    // The data's own range: sinusoidal features fill [-1, 1], learned ones are much smaller.
    let pad = ((hi - lo) * 0.08).max(1e-3);
    let (lo, hi) = if lo.is_finite() { (lo - pad, hi + pad) } else { (-1.1, 1.1) };
    let small = area.dim_in_pixel().0 < 400;
    let font_px = if small { 10 } else { 13 };
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, font_px + 4))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(44)
        .build_cartesian_2d(0f32..(positions.max(2) - 1) as f32, lo..hi)
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_desc("position p")
        .y_desc("value")
        .draw()
        .map_err(draw_err)?;
    let mut legend = Vec::new();
    for (k, &i) in dims.iter().enumerate() {
        let colour = CATEGORICAL[k % CATEGORICAL.len()];
        chart
            .draw_series(LineSeries::new((0..positions).map(|p| (p as f32, table[[p, i]])), colour.stroke_width(2)))
            .map_err(draw_err)?;
        legend.push(LegendEntry::new(format!("feature {i}"), colour, LegendMark::Line));
    }
    draw_legend(&chart, &legend, SeriesLabelPosition::LowerRight, font_px)?;
    Ok(())
}

/// Cosine similarity between every pair of position vectors: (P, P).
pub fn position_similarity(table: ArrayView2<f32>) -> Array2<f32> {
    let norms = table.map_axis(Axis(1), |r| r.dot(&r).sqrt().max(1e-12)); // (P)
    let unit = &table / &norms.insert_axis(Axis(1)); // (P, d)
    unit.dot(&unit.t()) // (P, P)
}

/// A (P, P) similarity matrix from `position_similarity` as a heatmap.
pub fn draw_similarity<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, similarity: ArrayView2<f32>, title: &str, vector: bool) -> Result<HeatmapDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    draw_heatmap(
        area,
        similarity,
        &Heatmap {
            title,
            x_desc: "position",
            y_desc: "position",
            col_labels: &[],
            row_labels: &[],
            scale: Scale::Diverging { limit: 1.0 },
            legend: "cosine",
            vector,
        },
    )
}
