//! Layer-norm statistics: each token's mean and standard deviation before and after one
//! norm, and the learned gamma and beta of that norm across features.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::colors::CATEGORICAL;
use super::{draw_err, short_label, FONT};
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
        ("input mean", &rec.input_mean, 0),
        ("input std", &rec.input_std, 1),
        ("output mean", &rec.output_mean, 2),
        ("output std", &rec.output_std, 3),
    ];
    let (lo, hi) = range(series.iter().flat_map(|(_, v, _)| v.iter().copied()));
    let step = (t as f32 / ((w as f32 - 60.0) / (font_px as f32 * 5.0)).max(1.0)).ceil().max(1.0) as usize;
    let label = |x: &f32| {
        let i = x.round() as usize;
        if (x - x.round()).abs() > 1e-3 || i >= t || i % step != 0 { String::new() } else { short_label(&tokens[i], 7) }
    };
    let mut chart = ChartBuilder::on(&top)
        .caption(title, (FONT, font_px + 4))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(48)
        .build_cartesian_2d(-0.5f32..t as f32 - 0.5, lo..hi)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_labels(t.min(200))
        .x_label_formatter(&label)
        .label_style((FONT, font_px))
        .y_desc("per-token statistic")
        .axis_desc_style((FONT, font_px + 1))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(draw_err)?;
    let bar_w = 0.8 / 4.0;
    for (k, (name, values, c)) in series.iter().enumerate() {
        let colour = CATEGORICAL[*c];
        let offset = -0.4 + bar_w * k as f32;
        chart
            .draw_series(values.iter().enumerate().map(|(i, &v)| {
                let x0 = i as f32 + offset;
                Rectangle::new([(x0, 0.0), (x0 + bar_w * 0.9, v)], colour.filled())
            }))
            .map_err(draw_err)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, font_px))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(draw_err)?;

    let d = rec.gamma.len();
    let beta = rec.beta.clone().unwrap_or_default();
    let (lo, hi) = range(rec.gamma.iter().chain(beta.iter()).copied());
    let mut chart = ChartBuilder::on(&bottom)
        .caption(if rec.beta.is_some() { "learned gamma (scale) and beta (shift) per feature" } else { "learned gamma (scale) per feature" }, (FONT, font_px + 2))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(48)
        .build_cartesian_2d(0f32..d as f32, lo..hi)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc("feature")
        .label_style((FONT, font_px))
        .axis_desc_style((FONT, font_px + 1))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(draw_err)?;
    for (name, values, c) in [("gamma", &rec.gamma, 0usize), ("beta", &beta, 5)] {
        if values.is_empty() {
            continue;
        }
        let colour = CATEGORICAL[c];
        chart
            .draw_series(LineSeries::new(values.iter().enumerate().map(|(i, &v)| (i as f32, v)), colour.stroke_width(1)))
            .map_err(draw_err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, font_px))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(draw_err)?;
    Ok(())
}
