//! A labelled heatmap with a colour bar: attention weights, score matrices, position tables
//! and every matrix the stepper shows.

use ndarray::ArrayView2;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Serialize;

use super::colors::Scale;
use super::pixels::matrix_pixels;
use super::{anchored_text, draw_err, short_label, FONT};
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
    /// One vector rectangle per cell (SVG) instead of one blitted image (canvas, PNG).
    pub vector: bool,
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
    let char_px = |n: usize| n as i32 * font_px as i32 * 62 / 100;
    let longest_row = spec.row_labels.iter().map(|s| s.chars().count().min(max_chars)).max().unwrap_or(rows.to_string().len()).max(2);
    let mut chart = ChartBuilder::on(&main)
        .caption(spec.title, (FONT, font_px + 4))
        .margin(6)
        .x_label_area_size(font_px * 3 + 10)
        .y_label_area_size(char_px(longest_row) as u32 + font_px + 18)
        .build_cartesian_2d(0f32..cols.max(1) as f32, 0f32..rows.max(1) as f32)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_desc(spec.x_desc)
        .y_desc(spec.y_desc)
        .axis_desc_style((FONT, font_px + 1))
        .draw()
        .map_err(draw_err)?;
    let (px, py) = chart.plotting_area().get_pixel_range();
    let (pw, ph) = (px.end - px.start, py.end - py.start);
    if spec.vector {
        chart
            .draw_series(m.indexed_iter().map(|((r, c), &v)| {
                let y = (rows - 1 - r) as f32;
                Rectangle::new([(c as f32, y), (c as f32 + 1.0, y + 1.0)], spec.scale.color(v).filled())
            }))
            .map_err(draw_err)?;
    } else {
        let plot = chart.plotting_area().strip_coord_spec();
        plot.draw(&matrix_pixels(m, spec.scale, (0, 0), pw.max(1) as u32, ph.max(1) as u32)).map_err(draw_err)?;
    }
    // Labels at cell centres, thinned so that they never overlap.
    let (ox, oy) = area.get_base_pixel();
    let widest_col = spec.col_labels.iter().map(|s| s.chars().count().min(max_chars)).max().unwrap_or(cols.to_string().len()).max(2);
    let x_step = label_step(cols, pw, char_px(widest_col) + 8);
    let y_step = label_step(rows, ph, font_px as i32 + 2);
    let label = |labels: &[String], i: usize| labels.get(i).map(|s| short_label(s, max_chars)).unwrap_or_else(|| i.to_string());
    for c in (0..cols).step_by(x_step) {
        let (x, y) = chart.backend_coord(&(c as f32 + 0.5, 0.0));
        area.draw(&Text::new(label(spec.col_labels, c), (x - ox, y - oy + 4), anchored_text(font_px, HPos::Center, VPos::Top))).map_err(draw_err)?;
    }
    for r in (0..rows).step_by(y_step) {
        let (x, y) = chart.backend_coord(&(0.0, (rows - r) as f32 - 0.5));
        area.draw(&Text::new(label(spec.row_labels, r), (x - ox - 5, y - oy), anchored_text(font_px, HPos::Right, VPos::Center))).map_err(draw_err)?;
    }
    draw_colour_bar(&bar, spec.scale, spec.legend, font_px)?;
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
