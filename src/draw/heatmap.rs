//! A labelled heatmap with a colour bar: attention weights, score matrices, position tables
//! and every matrix the stepper shows.

use ndarray::ArrayView2;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

use super::colors::Scale;
use super::{draw_err, short_label, FONT};
use crate::error::Result;

/// Where the cells landed in pixels, so the page can map a mouse position to a cell.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Geometry {
    pub left: i32,
    pub top: i32,
    pub width: i32,
    pub height: i32,
    pub rows: usize,
    pub cols: usize,
}

pub struct Heatmap<'a> {
    pub title: &'a str,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// One label per column / row; empty means numbered.
    pub col_labels: &'a [String],
    pub row_labels: &'a [String],
    pub scale: Scale,
    /// Legend caption next to the colour bar.
    pub legend: &'a str,
}

/// Label every k-th row/column so the labels never overlap.
fn label_step(count: usize, pixels: i32, min_px: i32) -> usize {
    let fit = (pixels / min_px.max(1)).max(1) as usize;
    count.div_ceil(fit).max(1)
}

pub fn draw_heatmap<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, m: ArrayView2<f32>, spec: &Heatmap) -> Result<Geometry> {
    let (rows, cols) = m.dim();
    let (w, _) = area.dim_in_pixel();
    let small = w < 360;
    let bar_width = if small { 48 } else { 70 };
    let (main, bar) = area.split_horizontally(w.saturating_sub(bar_width));
    let font_px = if small { 10 } else { 13 };
    let max_chars = if small { 6 } else { 9 };
    let longest = spec.row_labels.iter().map(|s| s.chars().count().min(max_chars)).max().unwrap_or(3).max(3) as u32;
    let y_label_area = longest * font_px * 62 / 100 + 12;
    let mut chart = ChartBuilder::on(&main)
        .caption(spec.title, (FONT, font_px + 4))
        .margin(6)
        .x_label_area_size(font_px * 3 + 8)
        .y_label_area_size(y_label_area + font_px + 10)
        .build_cartesian_2d((0..cols as i32).into_segmented(), (0..rows as i32).into_segmented())
        .map_err(draw_err)?;
    let (px, py) = chart.plotting_area().get_pixel_range();
    let (pw, ph) = (px.end - px.start, py.end - py.start);
    // Horizontal labels, thinned so that they never overlap.
    let widest_col = spec.col_labels.iter().map(|s| s.chars().count().min(max_chars)).max().unwrap_or(cols.to_string().len()).max(2) as i32;
    let x_step = label_step(cols, pw, widest_col * font_px as i32 * 62 / 100 + 6);
    let y_step = label_step(rows, ph, font_px as i32 + 2);
    let col_label = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) if *i >= 0 && (*i as usize) < cols && *i as usize % x_step == 0 => {
            spec.col_labels.get(*i as usize).map(|s| short_label(s, max_chars)).unwrap_or_else(|| i.to_string())
        }
        _ => String::new(),
    };
    let row_label = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(y) if *y >= 0 && (*y as usize) < rows => {
            let i = rows - 1 - *y as usize;
            if i % y_step != 0 {
                return String::new();
            }
            spec.row_labels.get(i).map(|s| short_label(s, max_chars)).unwrap_or_else(|| i.to_string())
        }
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(spec.x_desc)
        .y_desc(spec.y_desc)
        .x_labels(cols + 1)
        .y_labels(rows + 1)
        .x_label_formatter(&col_label)
        .y_label_formatter(&row_label)
        .label_style((FONT, font_px))
        .axis_desc_style((FONT, font_px + 1))
        .draw()
        .map_err(draw_err)?;
    chart
        .draw_series(m.indexed_iter().map(|((r, c), &v)| {
            let y = (rows - 1 - r) as i32;
            let c = c as i32;
            Rectangle::new(
                [(SegmentValue::Exact(c), SegmentValue::Exact(y)), (SegmentValue::Exact(c + 1), SegmentValue::Exact(y + 1))],
                spec.scale.color(v).filled(),
            )
        }))
        .map_err(draw_err)?;
    draw_colour_bar(&bar, spec.scale, spec.legend, font_px)?;
    let (ox, oy) = area.get_base_pixel();
    Ok(Geometry { left: px.start - ox, top: py.start - oy, width: pw, height: ph, rows, cols })
}

/// A vertical gradient with its range, on the right of a heatmap.
pub fn draw_colour_bar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, scale: Scale, legend: &str, font_px: u32) -> Result<()> {
    let (lo, hi) = scale.range();
    let (_, h) = area.dim_in_pixel();
    let top = 40i32;
    let bottom = h as i32 - 60;
    if bottom <= top + 10 {
        return Ok(());
    }
    let steps = 64;
    for s in 0..steps {
        let t0 = s as f32 / steps as f32;
        let v = hi - (hi - lo) * (t0 + 0.5 / steps as f32);
        let y0 = top + ((bottom - top) as f32 * t0) as i32;
        let y1 = top + ((bottom - top) as f32 * (t0 + 1.0 / steps as f32)).ceil() as i32;
        area.draw(&Rectangle::new([(8, y0), (22, y1)], scale.color(v).filled())).map_err(draw_err)?;
    }
    let style = TextStyle::from((FONT, font_px).into_font()).color(&BLACK);
    let fmt = |v: f32| if v.abs() >= 100.0 || (v != 0.0 && v.abs() < 0.01) { format!("{v:.1e}") } else { format!("{v:.2}") };
    area.draw(&Text::new(fmt(hi), (26, top - 4), style.clone())).map_err(draw_err)?;
    area.draw(&Text::new(fmt(lo), (26, bottom - 10), style.clone())).map_err(draw_err)?;
    area.draw(&Text::new(legend.to_string(), (4, bottom + 12), style)).map_err(draw_err)?;
    Ok(())
}
