//! Layer-norm statistics: each token's mean and standard deviation before and after one
//! norm, and the learned gamma and beta of that norm across features.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::colors::CATEGORICAL;
use super::{category_labels, draw_err, draw_legend, house_mesh, short_label, LegendEntry, LegendMark, FONT};
use crate::error::Result;
use crate::trace::NormRecord;

fn range(values: impl Iterator<Item = f32>) -> (f32, f32) {
    let (lo, hi) = values.fold((0f32, 0f32), |(a, b), v| (a.min(v), b.max(v)));
    let pad = ((hi - lo) * 0.08).max(0.05);
    (lo - pad, hi + pad)
}

pub fn draw_norm<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, rec: &NormRecord, tokens: &[String], title: &str) -> Result<()> {
    area.fill(&WHITE).map_err(draw_err)?;
    let (w, h) = area.dim_in_pixel();
    let small = w < 500;
    let font_px = if small { 10 } else { 13 };
    let (top, bottom) = area.split_vertically((h as f32 * 0.58) as u32);
    let t = tokens.len();
    let series: [(&str, &Vec<f32>, usize); 4] = [
        ("input mean", &rec.stats.input_mean, 0),
        ("input std", &rec.stats.input_std, 1),
        ("output mean", &rec.stats.output_mean, 2),
        ("output std", &rec.stats.output_std, 3),
    ];
    let (lo, hi) = range(series.iter().flat_map(|(_, v, _)| v.iter().copied()));
    let label = category_labels(tokens.iter().map(|s| short_label(s, 7)).collect(), w, font_px);
    let mut chart = ChartBuilder::on(&top)
        .caption(title, (FONT, font_px + 4))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(48)
        .build_cartesian_2d(-0.5f32..t as f32 - 0.5, lo..hi)
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_labels(t.min(200))
        .x_label_formatter(&label)
        .y_desc("per-token statistic")
        .draw()
        .map_err(draw_err)?;
    let bar_w = 0.8 / 4.0;
    let mut legend = Vec::new();
    for (k, (name, values, c)) in series.iter().enumerate() {
        let colour = CATEGORICAL[*c];
        let offset = -0.4 + bar_w * k as f32;
        chart
            .draw_series(values.iter().enumerate().map(|(i, &v)| {
                let x0 = i as f32 + offset;
                Rectangle::new([(x0, 0.0), (x0 + bar_w * 0.9, v)], colour.filled())
            }))
            .map_err(draw_err)?;
        legend.push(LegendEntry::new(*name, colour, LegendMark::Swatch));
    }
    draw_legend(&chart, &legend, SeriesLabelPosition::UpperRight, font_px)?;

    let d = rec.stats.gamma.len();
    let beta = rec.stats.beta.clone().unwrap_or_default();
    let (lo, hi) = range(rec.stats.gamma.iter().chain(beta.iter()).copied());
    let mut chart = ChartBuilder::on(&bottom)
        .caption(if rec.stats.beta.is_some() { "learned gamma (scale) and beta (shift) per feature" } else { "learned gamma (scale) per feature" }, (FONT, font_px + 2))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(48)
        .build_cartesian_2d(0f32..d as f32, lo..hi)
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_desc("feature")
        .draw()
        .map_err(draw_err)?;
    let mut legend = Vec::new();
    for (name, values, c) in [("gamma", &rec.stats.gamma, 0usize), ("beta", &beta, 5)] {
        if values.is_empty() {
            continue;
        }
        let colour = CATEGORICAL[c];
        chart
            .draw_series(LineSeries::new(values.iter().enumerate().map(|(i, &v)| (i as f32, v)), colour.stroke_width(1)))
            .map_err(draw_err)?;
        legend.push(LegendEntry::new(name, colour, LegendMark::Line));
    }
    draw_legend(&chart, &legend, SeriesLabelPosition::UpperRight, font_px)?;
    Ok(())
}
