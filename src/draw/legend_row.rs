//! A legend laid out in rows in its own strip under a chart, outside the plotting area, so it
//! never covers a bar or a line (the corner legend of `draw_legend` can, when the data reach
//! that corner). The strip wraps onto more rows when the chart is narrow.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{anchored_text, draw_err};
use crate::error::Result;

/// How an entry shows what it names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RowMark {
    /// A filled square (bars, boxes).
    Swatch(RGBColor),
    /// A short line (lines).
    Line(RGBColor),
    /// A short line with a filled dot (a line with markers).
    LineDot(RGBColor),
    /// A filled dot.
    Dot(RGBColor),
    /// A hollow square on a light band (a point where a norm rescales).
    NormMarker(RGBColor),
    /// A thin vertical line (a range).
    Whisker(RGBColor),
}

pub(crate) struct RowEntry {
    pub label: String,
    pub mark: RowMark,
}

impl RowEntry {
    pub fn new(label: impl Into<String>, mark: RowMark) -> Self {
        Self { label: label.into(), mark }
    }
}

const MARK_W: i32 = 18;
const GAP: i32 = 5;
const SPACING: i32 = 16;
const MARGIN: i32 = 8;

fn row_height(font_px: u32) -> i32 {
    (font_px as f32 * 1.5).ceil() as i32
}

/// Where each entry starts, (x, row), for an area `width` pixels wide.
fn layout<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, entries: &[RowEntry], font_px: u32, width: i32) -> Result<Vec<(i32, i32)>> {
    let style = anchored_text(font_px, HPos::Left, VPos::Center);
    let mut places = Vec::with_capacity(entries.len());
    let (mut x, mut row) = (MARGIN, 0);
    for e in entries {
        let text_w = area.estimate_text_size(&e.label, &style).map_err(draw_err)?.0 as i32;
        let w = MARK_W + GAP + text_w;
        if x > MARGIN && x + w > width - MARGIN {
            x = MARGIN;
            row += 1;
        }
        places.push((x, row));
        x += w + SPACING;
    }
    Ok(places)
}

/// Height in pixels the legend needs across the full width of `area`.
pub(crate) fn legend_rows_height<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, entries: &[RowEntry], font_px: u32) -> Result<u32> {
    if entries.is_empty() {
        return Ok(0);
    }
    let width = area.dim_in_pixel().0 as i32;
    let rows = layout(area, entries, font_px, width)?.last().map_or(0, |p| p.1 + 1);
    Ok((rows * row_height(font_px) + 6) as u32)
}

/// Draws the legend across `area` (which `legend_rows_height` sized).
pub(crate) fn draw_legend_rows<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, entries: &[RowEntry], font_px: u32) -> Result<()> {
    let width = area.dim_in_pixel().0 as i32;
    let style = anchored_text(font_px, HPos::Left, VPos::Center);
    let row_h = row_height(font_px);
    for (e, (x, row)) in entries.iter().zip(layout(area, entries, font_px, width)?) {
        let y = 3 + row * row_h + row_h / 2;
        let mid = x + MARK_W / 2;
        match e.mark {
            RowMark::Swatch(c) => area.draw(&Rectangle::new([(mid - 6, y - 6), (mid + 6, y + 6)], c.filled())),
            RowMark::Line(c) => area.draw(&PathElement::new(vec![(x, y), (x + MARK_W, y)], c.stroke_width(2))),
            RowMark::LineDot(c) => area
                .draw(&PathElement::new(vec![(x, y), (x + MARK_W, y)], c.stroke_width(2)))
                .and_then(|_| area.draw(&Circle::new((mid, y), 3, c.filled()))),
            RowMark::Dot(c) => area.draw(&Circle::new((mid, y), 3, c.filled())),
            RowMark::NormMarker(c) => area
                .draw(&Rectangle::new([(mid - 7, y - row_h / 2 + 1), (mid + 7, y + row_h / 2 - 1)], NORM_BAND.filled()))
                .and_then(|_| area.draw(&Rectangle::new([(mid - 4, y - 4), (mid + 4, y + 4)], c.stroke_width(2)))),
            RowMark::Whisker(c) => area.draw(&PathElement::new(vec![(mid, y - 6), (mid, y + 6)], c.stroke_width(1))),
        }
        .map_err(draw_err)?;
        area.draw(&Text::new(e.label.clone(), (x + MARK_W + GAP, y), style.clone())).map_err(draw_err)?;
    }
    Ok(())
}

/// The light band behind the points where a norm rescales the residual stream.
pub(crate) const NORM_BAND: RGBColor = RGBColor(232, 232, 240);

/// An axis tick label with one decimal, or none for whole numbers, never "-0.0".
pub(crate) fn tick(v: f32) -> String {
    let v = if v.abs() < 0.05 { 0.0 } else { v };
    if (v - v.round()).abs() < 1e-6 && v.abs() >= 1.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}
