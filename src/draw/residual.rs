//! The residual stream: how long each token's vector is after embedding and after every
//! attention and feed-forward sublayer, and how much each sublayer wrote into it.

use ndarray::Axis;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::colors::CATEGORICAL;
use super::{category_labels, draw_err, draw_legend, house_mesh, short_label, LegendEntry, LegendMark, FONT};
use crate::error::Result;
use crate::trace::Trace;

/// L2 norm of each row: (T, d) -> (T).
fn row_norms(m: ndarray::ArrayView2<f32>) -> Vec<f32> {
    m.map_axis(Axis(1), |r| r.dot(&r).sqrt()).to_vec()
}

pub fn draw_residual<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, trace: &Trace) -> Result<()> {
    area.fill(&WHITE).map_err(draw_err)?;
    let (w, h) = area.dim_in_pixel();
    let font_px = if w < 500 { 10 } else { 13 };
    let (top, bottom) = area.split_vertically((h as f32 * 0.55) as u32);
    let stream = trace.residual_stream();
    let writes = trace.sublayer_writes();
    let labels: Vec<String> = stream.iter().map(|p| p.label.clone()).collect();
    let norms: Vec<Vec<f32>> = stream.iter().map(|p| row_norms(p.vectors)).collect(); // (points, T)
    let t = trace.len();
    let max = norms.iter().flatten().copied().fold(0f32, f32::max) * 1.08;
    let n = labels.len();
    let x_label = category_labels(labels.clone(), w, font_px);
    let mut chart = ChartBuilder::on(&top)
        .caption("Residual stream: length of each token's vector", (FONT, font_px + 4))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(48)
        .build_cartesian_2d(-0.3f32..(n as f32 - 0.7), 0f32..max.max(1e-3))
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_labels(n)
        .x_label_formatter(&x_label)
        .y_desc("‖x‖ (L2 norm)")
        .draw()
        .map_err(draw_err)?;
    let tokens = trace.token_texts();
    let mut legend = Vec::new();
    for tok in 0..t {
        let colour = CATEGORICAL[tok % CATEGORICAL.len()];
        chart
            .draw_series(LineSeries::new((0..n).map(|p| (p as f32, norms[p][tok])), colour.stroke_width(2)))
            .map_err(draw_err)?;
        if tok < 8 {
            legend.push(LegendEntry::new(short_label(&tokens[tok], 10), colour, LegendMark::Line));
        }
    }
    draw_legend(&chart, &legend, SeriesLabelPosition::UpperLeft, font_px)?;

    // Mean over tokens of the length of what each sublayer added.
    let added: Vec<(String, f32)> = writes
        .iter()
        .map(|p| (p.label.clone(), row_norms(p.vectors).iter().sum::<f32>() / t as f32))
        .collect();
    let m = added.len();
    let top_val = added.iter().map(|a| a.1).fold(0f32, f32::max) * 1.1;
    let bar_label = category_labels(added.iter().map(|a| a.0.clone()).collect(), w, font_px);
    let mut chart = ChartBuilder::on(&bottom)
        .caption("What each sublayer added (mean ‖output‖ over tokens)", (FONT, font_px + 2))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(48)
        .build_cartesian_2d(-0.5f32..(m as f32 - 0.5), 0f32..top_val.max(1e-3))
        .map_err(draw_err)?;
    house_mesh(&mut chart.configure_mesh(), font_px)
        .x_labels(m)
        .x_label_formatter(&bar_label)
        .draw()
        .map_err(draw_err)?;
    chart
        .draw_series(added.iter().enumerate().map(|(i, (label, v))| {
            let colour = if label.ends_with("attn") { CATEGORICAL[0] } else { CATEGORICAL[1] };
            Rectangle::new([(i as f32 - 0.35, 0.0), (i as f32 + 0.35, *v)], colour.filled())
        }))
        .map_err(draw_err)?;
    Ok(())
}
