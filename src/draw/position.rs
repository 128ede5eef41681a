//! Positional-encoding views: a table as a position x feature heatmap, a few of its features
//! as waves across positions, and the position-to-position similarity it implies. Each is
//! drawn for the model's own table and for the notes' sinusoidal one.

use ndarray::{Array2, ArrayView2, Axis};
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

use super::colors::{Scale, CATEGORICAL};
use super::furniture::{
    draw_legend_rows, fitting_title, legend_rows_height, tick_format, RowEntry, RowMark,
};
use super::heatmap::{draw_heatmap, Heatmap, HeatmapDrawn};
use super::Canvas;
use super::{draw_err, house_mesh, FONT};
use crate::error::{Result, VizError};

/// The table as a heatmap: rows are positions, columns features.
pub fn draw_table<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    table: ArrayView2<f32>,
    title: &str,
    vector: bool,
) -> Result<HeatmapDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let values: Vec<f32> = table.iter().copied().collect();
    let scale = Scale::fit_robust(&values, 0.99);
    draw_heatmap(
        area,
        table,
        &Heatmap {
            title,
            x_desc: "feature i",
            y_desc: "position p",
            col_labels: &[],
            row_labels: &[],
            scale,
            legend: "value",
            vector,
        },
    )
}

/// What a wave chart plotted: each chosen feature's value at every position.
#[derive(Debug, Clone, Serialize)]
pub struct WavesDrawn {
    pub title: String,
    pub positions: usize,
    pub series: Vec<WaveDrawn>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WaveDrawn {
    pub dim: usize,
    pub label: String,
    /// The feature's value at positions 0, 1, ...
    pub values: Vec<f32>,
}

/// Checks that every chosen feature exists: a typed error instead of a silently shorter plot.
pub fn check_dims(dims: &[usize], d_model: usize) -> Result<()> {
    match dims.iter().find(|&&i| i >= d_model) {
        Some(bad) => Err(VizError::Draw(format!(
            "feature {bad} does not exist: this model has features 0 to {}",
            d_model - 1
        ))),
        None if dims.is_empty() => {
            Err(VizError::Draw("choose at least one feature to plot".into()))
        }
        None => Ok(()),
    }
}

/// The legend of sinusoidal feature `dim` of a `d_model`-wide table: sin or cos, and its
/// period in positions, 2 pi 10000^(2i/d).
pub fn sinusoidal_label(dim: usize, d_model: usize) -> String {
    let pair = (dim - dim % 2) as f64;
    let period = std::f64::consts::TAU * 10000f64.powf(pair / d_model as f64);
    let wave = if dim % 2 == 0 { "sin" } else { "cos" };
    if period < 100.0 {
        format!("dim {dim}: {wave}, period {period:.1}")
    } else {
        format!("dim {dim}: {wave}, period {period:.0}")
    }
}

/// Selected features (columns of `table`) as curves across positions, with the legend in a
/// row under the plot.
pub fn draw_waves<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    table: ArrayView2<f32>,
    dims: &[usize],
    titles: &[&str],
    label: impl Fn(usize) -> String,
) -> Result<WavesDrawn> {
    area.fill(&WHITE).map_err(draw_err)?;
    let (positions, d) = table.dim();
    check_dims(dims, d)?;
    let (lo, hi) = dims
        .iter()
        .flat_map(|&i| table.column(i).to_vec())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    // The data's own range: sinusoidal features fill [-1, 1], learned ones are much smaller.
    let pad = ((hi - lo) * 0.08).max(1e-3);
    let (lo, hi) = if lo.is_finite() {
        (lo - pad, hi + pad)
    } else {
        (-1.1, 1.1)
    };
    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 400 { 10 } else { 12 };
    let colours: Vec<RGBColor> = (0..dims.len())
        .map(|k| CATEGORICAL[k % CATEGORICAL.len()])
        .collect();
    let legend: Vec<RowEntry> = dims
        .iter()
        .zip(&colours)
        .map(|(&i, &c)| RowEntry::new(label(i), RowMark::Line(c)))
        .collect();
    let legend_h = legend_rows_height(area, &legend, font_px)?;
    let (plot_area, legend_area) = area.split_vertically(h as i32 - legend_h as i32);
    draw_legend_rows(&legend_area, &legend, font_px)?;
    // The longest of `titles` that fits.
    let title = fitting_title(area, font_px + 3, titles);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&title, (FONT, font_px + 3))
        .margin(8)
        .margin_right(14)
        .x_label_area_size(font_px * 3 + 8)
        .y_label_area_size(font_px * 3 + 16)
        .build_cartesian_2d(0f32..(positions.max(2) - 1) as f32, lo..hi)
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_desc("position p")
        .y_desc("value")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&tick_format(lo, hi))
        .draw()
        .map_err(draw_err)?;
    // A dot at every position while they are far enough apart: the table has values only at
    // whole positions, the lines just join them.
    let dots = w as usize / positions.max(1) >= 6;
    let mut series = Vec::new();
    for (k, &i) in dims.iter().enumerate() {
        let values: Vec<f32> = table.column(i).to_vec();
        chart
            .draw_series(LineSeries::new(
                values.iter().enumerate().map(|(p, &v)| (p as f32, v)),
                colours[k].stroke_width(2),
            ))
            .map_err(draw_err)?;
        if dots {
            chart
                .draw_series(
                    values
                        .iter()
                        .enumerate()
                        .map(|(p, &v)| Circle::new((p as f32, v), 2, colours[k].filled())),
                )
                .map_err(draw_err)?;
        }
        series.push(WaveDrawn {
            dim: i,
            label: legend[k].label.clone(),
            values,
        });
    }
    Ok(WavesDrawn {
        title,
        positions,
        series,
    })
}

/// Cosine similarity between every pair of position vectors: (P, P).
pub fn position_similarity(table: ArrayView2<f32>) -> Array2<f32> {
    let norms = table.map_axis(Axis(1), |r| r.dot(&r).sqrt().max(1e-12)); // (P)
    let unit = &table / &norms.insert_axis(Axis(1)); // (P, d)
    unit.dot(&unit.t()) // (P, P)
}

/// A (P, P) similarity matrix from `position_similarity` as a heatmap.
pub fn draw_similarity<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    similarity: ArrayView2<f32>,
    title: &str,
    vector: bool,
) -> Result<HeatmapDrawn> {
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
