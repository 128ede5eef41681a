//! What surrounds the plots of the line and bar charts: a legend laid out in rows in its own
//! strip under the chart, outside the plotting area, so it never covers a bar or a line (a
//! legend in a corner of the plot can, when the data reach that corner); titles that wrap or
//! shorten to fit a phone; tick labels with as many decimals as the axis needs.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{anchored_text, draw_err, Canvas};
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
        Self {
            label: label.into(),
            mark,
        }
    }
}

const MARK_W: i32 = 18;
const GAP: i32 = 5;
const SPACING: i32 = 16;
const MARGIN: i32 = 8;

fn row_height(font_px: u32) -> i32 {
    (font_px as f32 * 1.4).ceil() as i32
}

/// Where each entry starts, (x, row), for an area `width` pixels wide.
fn layout<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    entries: &[RowEntry],
    font_px: u32,
    width: i32,
) -> Result<Vec<(i32, i32)>> {
    let style = anchored_text(font_px, HPos::Left, VPos::Center);
    let mut places = Vec::with_capacity(entries.len());
    let (mut x, mut row) = (MARGIN, 0);
    for e in entries {
        let text_w = area
            .estimate_text_size(&e.label, &style)
            .map_err(draw_err)?
            .0 as i32;
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
pub(crate) fn legend_rows_height<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    entries: &[RowEntry],
    font_px: u32,
) -> Result<u32> {
    if entries.is_empty() {
        return Ok(0);
    }
    let width = area.dim_in_pixel().0 as i32;
    let rows = layout(area, entries, font_px, width)?
        .last()
        .map_or(0, |p| p.1 + 1);
    Ok((rows * row_height(font_px) + 6) as u32)
}

/// Draws the legend across `area` (which `legend_rows_height` sized).
pub(crate) fn draw_legend_rows<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    entries: &[RowEntry],
    font_px: u32,
) -> Result<()> {
    let width = area.dim_in_pixel().0 as i32;
    let style = anchored_text(font_px, HPos::Left, VPos::Center);
    let row_h = row_height(font_px);
    for (e, (x, row)) in entries.iter().zip(layout(area, entries, font_px, width)?) {
        let y = 3 + row * row_h + row_h / 2;
        let mid = x + MARK_W / 2;
        match e.mark {
            RowMark::Swatch(c) => area.draw(&Rectangle::new(
                [(mid - 6, y - 6), (mid + 6, y + 6)],
                c.filled(),
            )),
            RowMark::Line(c) => area.draw(&PathElement::new(
                vec![(x, y), (x + MARK_W, y)],
                c.stroke_width(2),
            )),
            RowMark::LineDot(c) => area
                .draw(&PathElement::new(
                    vec![(x, y), (x + MARK_W, y)],
                    c.stroke_width(2),
                ))
                .and_then(|_| area.draw(&Circle::new((mid, y), 3, c.filled()))),
            RowMark::Dot(c) => area.draw(&Circle::new((mid, y), 3, c.filled())),
            RowMark::NormMarker(c) => area
                .draw(&Rectangle::new(
                    [(mid - 7, y - row_h / 2 + 1), (mid + 7, y + row_h / 2 - 1)],
                    NORM_BAND.filled(),
                ))
                .and_then(|_| {
                    area.draw(&Rectangle::new(
                        [(mid - 4, y - 4), (mid + 4, y + 4)],
                        c.stroke_width(2),
                    ))
                }),
            RowMark::Whisker(c) => area.draw(&PathElement::new(
                vec![(mid, y - 6), (mid, y + 6)],
                c.stroke_width(1),
            )),
        }
        .map_err(draw_err)?;
        area.draw(&Text::new(
            e.label.clone(),
            (x + MARK_W + GAP, y),
            style.clone(),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// The light band behind the points where a norm rescales the residual stream.
pub(crate) const NORM_BAND: RGBColor = RGBColor(232, 232, 240);

/// Tick labels for an axis from `lo` to `hi`: as many decimals as its ~10 ticks need, whole
/// numbers without decimals, and never "-0.0".
pub(crate) fn tick_format(lo: f32, hi: f32) -> impl Fn(&f32) -> String {
    let step = ((hi - lo).abs() / 10.0).max(1e-6);
    let decimals = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
    move |v: &f32| {
        let v = if v.abs() < step * 1e-3 { 0.0 } else { *v };
        if (v - v.round()).abs() < step * 1e-3 {
            format!("{v:.0}")
        } else {
            format!("{v:.decimals$}")
        }
    }
}

/// The first of `titles` (longest first) that fits across `area` at `font_px`.
pub(crate) fn fitting_title<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    font_px: u32,
    titles: &[&str],
) -> String {
    let style = anchored_text(font_px, HPos::Left, VPos::Top);
    let room = area.dim_in_pixel().0 as i32 - 24;
    let fits = |t: &str| {
        area.estimate_text_size(t, &style)
            .map(|(w, _)| (w as i32) <= room)
            .unwrap_or(true)
    };
    titles
        .iter()
        .find(|t| fits(t))
        .or(titles.last())
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Lines of text wrapped at spaces to the width of an area, each with its font size.
pub(crate) struct TextBlock {
    lines: Vec<(String, u32)>,
}

impl TextBlock {
    /// Wraps each of `parts` (text, font size) to `area`'s width, less margins.
    pub fn wrap<DB: Canvas>(area: &DrawingArea<DB, Shift>, parts: &[(&str, u32)]) -> Result<Self> {
        let room = area.dim_in_pixel().0 as i32 - 2 * MARGIN;
        let mut lines = Vec::new();
        for &(text, font_px) in parts {
            let style = anchored_text(font_px, HPos::Left, VPos::Top);
            let mut line = String::new();
            for word in text.split(' ') {
                let candidate = if line.is_empty() {
                    word.to_string()
                } else {
                    format!("{line} {word}")
                };
                let w = area
                    .estimate_text_size(&candidate, &style)
                    .map_err(draw_err)?
                    .0 as i32;
                if w > room && !line.is_empty() {
                    lines.push((std::mem::take(&mut line), font_px));
                    line = word.to_string();
                } else {
                    line = candidate;
                }
            }
            lines.push((line, font_px));
        }
        Ok(Self { lines })
    }

    pub fn height(&self) -> i32 {
        self.lines.iter().map(|(_, f)| row_height(*f)).sum::<i32>() + 6
    }

    /// Draws the lines from the top of `area`, left-aligned or centred.
    pub fn draw<DB: Canvas>(&self, area: &DrawingArea<DB, Shift>, centred: bool) -> Result<()> {
        let mut y = 4;
        let x = if centred {
            area.dim_in_pixel().0 as i32 / 2
        } else {
            MARGIN
        };
        let h = if centred { HPos::Center } else { HPos::Left };
        for (text, font_px) in &self.lines {
            area.draw(&Text::new(
                text.clone(),
                (x, y),
                anchored_text(*font_px, h, VPos::Top),
            ))
            .map_err(draw_err)?;
            y += row_height(*font_px);
        }
        Ok(())
    }
}
