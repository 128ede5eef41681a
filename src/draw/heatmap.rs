//! A labelled heatmap with a colour bar: attention weights, score matrices, position tables
//! and every matrix the stepper shows.
//!
//! Up to 40 tokens, every row and column carries its token: column labels turn vertical when
//! they do not fit side by side, and the text shrinks (down to 8 px) before any label is
//! dropped. Longer axes label every n-th token and say so in a note under the chart; numbered
//! axes (positions, features) label round numbers. A colour scale narrower than the data says
//! so with triangles at the bar's ends and a note giving the data's true range.

use ndarray::ArrayView2;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::FontTransform;
use serde::Serialize;

use super::colors::{Clipped, Scale};
use super::pixels::{matrix_blocks, matrix_cells, EmbeddedImage};
use super::Canvas;
use super::{anchored_text, draw_err, short_label};
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
    /// SVG output: small matrices as one rectangle a cell, larger ones as one embedded PNG.
    /// Otherwise (canvas, PNG) the cells are one blitted image.
    pub vector: bool,
}

/// One axis label as drawn: the row or column it names and its box in the chart's pixels.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LabelBox {
    pub index: usize,
    pub text: String,
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

/// The labels of both axes, for the page (hovering a label highlights its row or column)
/// and the tests (every token named, no two labels overlapping).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct AxisLabels {
    pub rows: Vec<LabelBox>,
    pub cols: Vec<LabelBox>,
    /// Every `row_step`-th row carries a label (1: all of them); likewise columns.
    pub row_step: usize,
    pub col_step: usize,
    pub row_font_px: u32,
    pub col_font_px: u32,
    /// Column labels written bottom to top.
    pub cols_rotated: bool,
}

/// What `draw_heatmap` drew, beyond the pixels.
#[derive(Debug, Clone)]
pub struct HeatmapDrawn {
    pub geometry: Geometry,
    pub labels: AxisLabels,
    /// Set when the colour scale is narrower than the data.
    pub clipped: Option<Clipped>,
    /// The note written under the chart (labels thinned, colours clipped), if any.
    pub note: Option<String>,
    /// The cells as one image, for an SVG (see `pixels::embed_images`).
    pub image: Option<EmbeddedImage>,
}

/// Label text is never smaller than this.
const MIN_FONT_PX: u32 = 8;
/// Axes with more tokens than this label every n-th one.
const MAX_LABELLED: usize = 40;
/// Up to this many cells an SVG draws one rectangle a cell; beyond, one embedded image.
const MAX_VECTOR_CELLS: usize = 2500;

/// How one axis is labelled: text size and every how many rows/columns.
#[derive(Debug, Clone, Copy)]
struct AxisPlan {
    font: u32,
    step: usize,
}

/// The smallest "round" step (1, 2, 5, 10, 20, 25, 50, ...) that is at least `at_least`.
fn round_step(at_least: usize) -> usize {
    let mut scale = 1;
    loop {
        for s in [1, 2, 5, 10, 20, 25, 50] {
            if s * scale >= at_least {
                return s * scale;
            }
        }
        scale *= 100;
    }
}

/// Labels along an axis of `count` cells of `cell_px` each. `extent(font)` is the room one
/// label needs along the axis. Token axes keep every label while they fit at 8 px or more;
/// numbered axes step by round numbers.
fn plan_axis(
    count: usize,
    cell_px: f32,
    base_font: u32,
    numbered: bool,
    extent: impl Fn(u32) -> f32,
) -> AxisPlan {
    if !numbered && count <= MAX_LABELLED {
        for font in (MIN_FONT_PX..=base_font).rev() {
            if extent(font) <= cell_px {
                return AxisPlan { font, step: 1 };
            }
        }
    }
    let font = if numbered {
        base_font
    } else {
        base_font.min(11)
    };
    let fit = (extent(font) / cell_px.max(0.01)).ceil().max(1.0) as usize;
    let step = if numbered {
        round_step(fit)
    } else {
        fit.max(count.div_ceil(MAX_LABELLED))
    };
    AxisPlan { font, step }
}

/// The positions of the chart's parts, in the area's pixels.
struct Layout {
    left: i32,
    top: i32,
    width: i32,
    height: i32,
    row: AxisPlan,
    col: AxisPlan,
    rotated: bool,
    col_area: i32,
}

/// Text sizes of an axis's labels, measured once at the base font size.
struct LabelTexts {
    texts: Vec<String>,
    widths: Vec<f32>,
    numbered: bool,
    base_font: u32,
}

impl LabelTexts {
    fn widest(&self, font: u32, step: usize) -> f32 {
        self.widths
            .iter()
            .step_by(step.max(1))
            .fold(0.0f32, |a, &w| a.max(w))
            * font as f32
            / self.base_font as f32
    }
}

fn ordinal(n: usize) -> String {
    match (n % 10, n % 100) {
        (1, x) if x != 11 => format!("{n}st"),
        (2, x) if x != 12 => format!("{n}nd"),
        (3, x) if x != 13 => format!("{n}rd"),
        _ => format!("{n}th"),
    }
}

/// A colour-bar number: short, and in scientific form when very large or small.
fn bar_number(v: f32) -> String {
    match v.abs() {
        a if a >= 10_000.0 || (a != 0.0 && a < 0.01) => format!("{v:.1e}"),
        a if a >= 100.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// Draws `m` as `spec` describes and reports where its cells and labels landed.
pub fn draw_heatmap<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    m: ArrayView2<f32>,
    spec: &Heatmap,
) -> Result<HeatmapDrawn> {
    let (rows, cols) = m.dim();
    let values: Vec<f32> = m.iter().copied().collect();
    let clipped = Clipped::of(spec.scale, &values);
    let masked = values.iter().any(|v| !v.is_finite());
    let frame = Frame::of(area, spec, clipped, masked)?;
    let row_texts = label_texts(area, &frame, spec.row_labels, rows)?;
    let col_texts = label_texts(area, &frame, spec.col_labels, cols)?;
    let (l, foot) = fit_layout(area, &frame, &row_texts, &col_texts, clipped)?;

    draw_title(area, &frame, spec.title)?;
    let image = draw_cells(area, m, spec, &l, frame.base)?;
    let labels = AxisLabels {
        rows: draw_row_labels(area, &l, &row_texts)?,
        cols: draw_col_labels(area, &l, &col_texts)?,
        row_step: l.row.step,
        col_step: l.col.step,
        row_font_px: l.row.font,
        col_font_px: l.col.font,
        cols_rotated: l.rotated,
    };
    draw_axis_names(area, &frame, &l, spec)?;
    draw_foot(area, &frame, &foot)?;
    draw_colour_bar(
        area,
        (frame.w - frame.bar_w, l.top, frame.bar_w, l.height),
        spec.scale,
        clipped,
        spec.legend,
        frame.base,
        spec.vector,
    )?;
    Ok(HeatmapDrawn {
        geometry: Geometry {
            left: l.left,
            top: l.top,
            width: l.width,
            height: l.height,
            rows,
            cols,
        },
        labels,
        clipped,
        note: (!foot.is_empty()).then(|| foot.join(" ")),
        image,
    })
}

/// The chart's size and the measures its parts are placed by.
struct Frame {
    w: i32,
    h: i32,
    /// Under 420 px wide: smaller text, shorter labels and notes.
    small: bool,
    /// The labels' text size; the title and axis names are a little larger.
    base: u32,
    margin: i32,
    /// The colour bar's column at the right.
    bar_w: i32,
    title_h: i32,
    /// The room an axis name takes across its axis.
    desc_h: i32,
    /// One line of the note under the chart.
    line_h: i32,
    /// Some cells are masked (not finite): grey, and the note says what grey means.
    masked: bool,
}

impl Frame {
    fn of<DB: Canvas>(
        area: &DrawingArea<DB, Shift>,
        spec: &Heatmap,
        clipped: Option<Clipped>,
        masked: bool,
    ) -> Result<Frame> {
        let (w, h) = area.dim_in_pixel();
        let (w, h) = (w as i32, h as i32);
        let small = w < 420;
        let base = if small { 10u32 } else { 13 };
        Ok(Frame {
            w,
            h,
            small,
            base,
            margin: 6,
            bar_w: bar_width(area, spec.scale, clipped, spec.legend, base)?,
            title_h: (base + 4) as i32 + 10,
            desc_h: (base + 1) as i32 + 8,
            line_h: base as i32 + 4,
            masked,
        })
    }

    fn foot_style(&self) -> TextStyle<'static> {
        anchored_text(self.base - 1, HPos::Left, VPos::Top).color(&RGBColor(60, 60, 60))
    }
}

fn text_width<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
) -> Result<u32> {
    Ok(area.estimate_text_size(text, style).map_err(draw_err)?.0)
}

/// The colour bar's column: the gradient, then its widest number, or the caption under the
/// bar if wider (it starts further left, so 18 px of it fit under the gradient).
fn bar_width<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    scale: Scale,
    clipped: Option<Clipped>,
    legend: &str,
    base: u32,
) -> Result<i32> {
    let style = anchored_text(base, HPos::Left, VPos::Top);
    let mut text_w = text_width(area, legend, &style)? as i32 - 18;
    for (t, _) in &bar_labels(scale, clipped) {
        text_w = text_w.max(text_width(area, t, &style)? as i32);
    }
    Ok(8 + 14 + 4 + text_w + 6)
}

/// An axis's label texts (shortened tokens, or numbers when `labels` is empty), measured.
fn label_texts<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    frame: &Frame,
    labels: &[String],
    count: usize,
) -> Result<LabelTexts> {
    let max_chars = if frame.small { 7 } else { 10 };
    let texts: Vec<String> = (0..count)
        .map(|i| {
            labels
                .get(i)
                .map(|s| short_label(s, max_chars))
                .unwrap_or_else(|| i.to_string())
        })
        .collect();
    let style = anchored_text(frame.base, HPos::Left, VPos::Top);
    let mut widths = Vec::with_capacity(count);
    for t in &texts {
        widths.push(text_width(area, t, &style)? as f32);
    }
    Ok(LabelTexts {
        texts,
        widths,
        numbered: labels.is_empty(),
        base_font: frame.base,
    })
}

/// Where the cells and labels go when the note under the chart takes `foot_lines` lines.
fn layout(
    frame: &Frame,
    row_texts: &LabelTexts,
    col_texts: &LabelTexts,
    foot_lines: i32,
) -> Layout {
    let Frame {
        w,
        h,
        base,
        margin,
        bar_w,
        desc_h,
        ..
    } = *frame;
    let (rows, cols) = (row_texts.texts.len(), col_texts.texts.len());
    let top = margin + frame.title_h;
    let foot_h = foot_lines * frame.line_h;
    let left_of =
        |font: u32, step: usize| margin + desc_h + row_texts.widest(font, step).ceil() as i32 + 8;
    let plot_w = |left: i32| (w - bar_w - left - margin).max(10);
    let width = plot_w(left_of(base, 1));
    let col_px = width as f32 / cols.max(1) as f32;
    // Token columns side by side when every one fits, else written bottom to top.
    let across =
        col_texts.numbered || (cols <= MAX_LABELLED && col_texts.widest(base, 1) + 6.0 <= col_px);
    let col = if across {
        plan_axis(cols, col_px, base, col_texts.numbered, |f| {
            col_texts.widest(f, 1) + 6.0
        })
    } else {
        plan_axis(cols, col_px, base, false, |f| f as f32 + 3.0)
    };
    let col_area = if across {
        col.font as i32 + 8
    } else {
        col_texts.widest(col.font, col.step).ceil() as i32 + 10
    };
    let height = (h - top - col_area - desc_h - foot_h - margin).max(10);
    let row = plan_axis(
        rows,
        height as f32 / rows.max(1) as f32,
        base,
        row_texts.numbered,
        |f| f as f32 + 3.0,
    );
    let left = left_of(row.font, row.step);
    Layout {
        left,
        top,
        width: plot_w(left),
        height,
        row,
        col,
        rotated: !across,
        col_area,
    }
}

/// The note under the chart: which labels are thinned, what the colours clip.
fn notes(
    frame: &Frame,
    l: &Layout,
    row_texts: &LabelTexts,
    col_texts: &LabelTexts,
    clipped: Option<Clipped>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let thinned = [(row_texts, l.row.step), (col_texts, l.col.step)]
        .into_iter()
        .filter(|(t, step)| !t.numbered && *step > 1)
        .map(|(t, step)| (step, t.texts.len()))
        .max();
    if let Some((step, count)) = thinned {
        notes.push(if frame.small {
            format!("Every {} token labelled ({count}).", ordinal(step))
        } else {
            format!(
                "Every {} token is labelled ({count} tokens); hover a cell for its tokens.",
                ordinal(step)
            )
        });
    }
    if frame.masked {
        notes.push(if frame.small {
            "Grey: masked.".to_string()
        } else {
            "Grey cells are masked: a token cannot see the tokens after it (its weight there is exactly 0).".to_string()
        });
    }
    if let Some(c) = clipped {
        let range = format!("from {} to {}", bar_number(c.min), bar_number(c.max));
        notes.push(if frame.small {
            format!("Colours clipped; data run {range}")
        } else {
            format!("Colours clipped: values beyond the bar's ends (triangles) take its end colours; the data run {range}")
        });
    }
    notes
}

/// The notes wrapped to the chart's width, a line each.
fn wrap_notes<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    frame: &Frame,
    notes: Vec<String>,
) -> Result<Vec<String>> {
    let style = frame.foot_style();
    let mut lines = Vec::new();
    for note in notes {
        let mut line = String::new();
        for word in note.split(' ') {
            let longer = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            if !line.is_empty()
                && text_width(area, &longer, &style)? as i32 > frame.w - 2 * frame.margin
            {
                lines.push(std::mem::replace(&mut line, word.to_string()));
            } else {
                line = longer;
            }
        }
        lines.push(line);
    }
    Ok(lines)
}

/// The layout and the wrapped note under the chart. The note's height shapes the layout and
/// the layout (how labels are thinned) the note, so a note longer than first allowed for
/// lays the chart out once more.
fn fit_layout<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    frame: &Frame,
    row_texts: &LabelTexts,
    col_texts: &LabelTexts,
    clipped: Option<Clipped>,
) -> Result<(Layout, Vec<String>)> {
    let foot_of =
        |l: &Layout| wrap_notes(area, frame, notes(frame, l, row_texts, col_texts, clipped));
    let mut foot_lines = if clipped.is_some() || frame.masked {
        foot_of(&layout(frame, row_texts, col_texts, 1))?.len() as i32
    } else {
        0
    };
    let mut l = layout(frame, row_texts, col_texts, foot_lines);
    let mut foot = foot_of(&l)?;
    if foot.len() as i32 > foot_lines {
        foot_lines = foot.len() as i32;
        l = layout(frame, row_texts, col_texts, foot_lines);
        foot = foot_of(&l)?;
    }
    Ok((l, foot))
}

/// The title, smaller (down to the labels' size) and then shortened when the chart is narrow;
/// centred over the cells when it fits there, else over the whole chart.
fn draw_title<DB: Canvas>(area: &DrawingArea<DB, Shift>, frame: &Frame, title: &str) -> Result<()> {
    let Frame {
        w,
        base,
        margin,
        bar_w,
        ..
    } = *frame;
    let room = w - 2 * margin;
    let mut title = title.to_string();
    let mut title_font = base + 4;
    let title_w = |t: &str, f: u32| -> Result<i32> {
        Ok(text_width(area, t, &anchored_text(f, HPos::Left, VPos::Top))? as i32)
    };
    while title_font > base && title_w(&title, title_font)? > room {
        title_font -= 1;
    }
    while title.chars().count() > 4 && title_w(&title, title_font)? > room {
        title = short_label(&title, title.chars().count() - 1);
    }
    let main_w = w - bar_w;
    let title_x = if title_w(&title, title_font)? > main_w {
        w / 2
    } else {
        main_w / 2
    };
    area.draw(&Text::new(
        title,
        (title_x, margin + (base as i32 + 4) / 2 + 2),
        anchored_text(title_font, HPos::Center, VPos::Center),
    ))
    .map_err(draw_err)
}

/// The cells in their grey frame: one rectangle a cell (a small matrix in an SVG), one
/// embedded image (a larger one, returned for `pixels::embed_images`), or one blitted image.
fn draw_cells<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    m: ArrayView2<f32>,
    spec: &Heatmap,
    l: &Layout,
    base: u32,
) -> Result<Option<EmbeddedImage>> {
    let (rows, cols) = m.dim();
    let (left, top, pw, ph) = (l.left, l.top, l.width, l.height);
    let mut image = None;
    if spec.vector && rows * cols <= MAX_VECTOR_CELLS {
        let edge = |i: usize, n: usize, px: i32| (i as i64 * px as i64 / n.max(1) as i64) as i32;
        for ((r, c), &v) in m.indexed_iter() {
            let (x0, x1) = (left + edge(c, cols, pw), left + edge(c + 1, cols, pw));
            let (y0, y1) = (top + edge(r, rows, ph), top + edge(r + 1, rows, ph));
            area.draw(&Rectangle::new(
                [(x0, y0), (x1, y1)],
                spec.scale.color(v).filled(),
            ))
            .map_err(draw_err)?;
        }
    } else if spec.vector {
        let (ox, oy) = area.get_base_pixel();
        let marker = format!("tviz-cells-{}-{}", ox + left, oy + top);
        let block = |px: i32, n: usize| (px as f32 / n.max(1) as f32).ceil().clamp(1.0, 8.0) as u32;
        let pixels = matrix_blocks(m, spec.scale, (block(pw, cols), block(ph, rows)));
        image = Some(EmbeddedImage::new(
            marker.clone(),
            (ox + left, oy + top, pw, ph),
            &pixels,
        )?);
        area.draw(&Text::new(
            marker,
            (left, top),
            anchored_text(base, HPos::Left, VPos::Top),
        ))
        .map_err(draw_err)?;
    } else {
        area.draw(&matrix_cells(
            m,
            spec.scale,
            (left, top),
            pw as u32,
            ph as u32,
        ))
        .map_err(draw_err)?;
    }
    area.draw(&Rectangle::new(
        [(left - 1, top - 1), (left + pw, top + ph)],
        RGBColor(160, 160, 160).stroke_width(1),
    ))
    .map_err(draw_err)?;
    Ok(image)
}

/// The pixel offset of cell `i`'s centre along an axis of `n` cells over `px` pixels.
fn centre(i: usize, n: usize, px: i32) -> i32 {
    ((i as f32 + 0.5) * px as f32 / n.max(1) as f32).round() as i32
}

/// Every `l.row.step`-th row's label, right-aligned left of the cells.
fn draw_row_labels<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    l: &Layout,
    row_texts: &LabelTexts,
) -> Result<Vec<LabelBox>> {
    let rows = row_texts.texts.len();
    let f = l.row.font;
    let mut boxes = Vec::new();
    for r in (0..rows).step_by(l.row.step) {
        let text = &row_texts.texts[r];
        let width = (row_texts.widths[r] * f as f32 / row_texts.base_font as f32).ceil() as i32;
        let (x, y) = (l.left - 6, l.top + centre(r, rows, l.height));
        area.draw(&Text::new(
            text.clone(),
            (x, y),
            anchored_text(f, HPos::Right, VPos::Center),
        ))
        .map_err(draw_err)?;
        boxes.push(LabelBox {
            index: r,
            text: text.clone(),
            x: x - width,
            y: y - (f as i32 + 2) / 2,
            width,
            height: f as i32 + 2,
        });
    }
    Ok(boxes)
}

/// Every `l.col.step`-th column's label under the cells, across or bottom to top.
fn draw_col_labels<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    l: &Layout,
    col_texts: &LabelTexts,
) -> Result<Vec<LabelBox>> {
    let cols = col_texts.texts.len();
    let f = l.col.font;
    let mut boxes = Vec::new();
    for c in (0..cols).step_by(l.col.step) {
        let text = &col_texts.texts[c];
        let length = (col_texts.widths[c] * f as f32 / col_texts.base_font as f32).ceil() as i32;
        let (x, y) = (l.left + centre(c, cols, l.width), l.top + l.height + 5);
        let label = if l.rotated {
            let style =
                anchored_text(f, HPos::Right, VPos::Center).transform(FontTransform::Rotate270);
            area.draw(&Text::new(text.clone(), (x, y), style))
                .map_err(draw_err)?;
            LabelBox {
                index: c,
                text: text.clone(),
                x: x - (f as i32 + 2) / 2,
                y,
                width: f as i32 + 2,
                height: length,
            }
        } else {
            area.draw(&Text::new(
                text.clone(),
                (x, y),
                anchored_text(f, HPos::Center, VPos::Top),
            ))
            .map_err(draw_err)?;
            LabelBox {
                index: c,
                text: text.clone(),
                x: x - length / 2,
                y,
                width: length,
                height: f as i32 + 2,
            }
        };
        boxes.push(label);
    }
    Ok(boxes)
}

/// The axis names, under the column labels and left of the row labels (bottom to top).
fn draw_axis_names<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    frame: &Frame,
    l: &Layout,
    spec: &Heatmap,
) -> Result<()> {
    let desc = anchored_text(frame.base + 1, HPos::Center, VPos::Center);
    area.draw(&Text::new(
        spec.x_desc.to_string(),
        (
            l.left + l.width / 2,
            l.top + l.height + l.col_area + frame.desc_h / 2,
        ),
        desc.clone(),
    ))
    .map_err(draw_err)?;
    area.draw(&Text::new(
        spec.y_desc.to_string(),
        (frame.margin + frame.desc_h / 2, l.top + l.height / 2),
        desc.transform(FontTransform::Rotate270),
    ))
    .map_err(draw_err)
}

/// The note's lines at the bottom of the chart.
fn draw_foot<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    frame: &Frame,
    foot: &[String],
) -> Result<()> {
    let style = frame.foot_style();
    let foot_top = frame.h - frame.margin - foot.len() as i32 * frame.line_h;
    for (i, line) in foot.iter().enumerate() {
        area.draw(&Text::new(
            line.clone(),
            (frame.margin, foot_top + i as i32 * frame.line_h),
            style.clone(),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// The colour bar's numbers, each with its height on the bar (0 top, 1 bottom): the ends,
/// with ≥ / ≤ when the scale clips there, and 0 on a diverging scale.
fn bar_labels(scale: Scale, clipped: Option<Clipped>) -> Vec<(String, f32)> {
    let (lo, hi) = scale.range();
    let (above, below) = clipped
        .map(|c| (c.above(), c.below()))
        .unwrap_or((false, false));
    let number = |v: f32, clipped: bool, sign: &str| {
        if clipped {
            format!("{sign}{}", bar_number(v))
        } else {
            bar_number(v)
        }
    };
    let mut labels = vec![(number(hi, above, "≥"), 0.0), (number(lo, below, "≤"), 1.0)];
    if lo < 0.0 && hi > 0.0 {
        labels.push(("0".to_string(), hi / (hi - lo)));
    }
    labels
}

/// A vertical gradient beside the cells (`x, top, width, height` of its column), with its
/// range; a clipped end gets a triangle and a ≥ / ≤ on its number.
fn draw_colour_bar<DB: Canvas>(
    area: &DrawingArea<DB, Shift>,
    (x, top, _width, height): (i32, i32, i32, i32),
    scale: Scale,
    clipped: Option<Clipped>,
    legend: &str,
    font_px: u32,
    vector: bool,
) -> Result<()> {
    let (lo, hi) = scale.range();
    let tip = 10; // triangle height
    let (bar_top, bar_bottom) = (top + tip + 2, top + height - tip - 2);
    if bar_bottom <= bar_top + 10 {
        return Ok(());
    }
    let (x0, x1) = (x + 8, x + 22);
    // 64 steps from the top (hi) down: an SVG gets a rectangle each, a canvas or PNG one
    // column of cells.
    let steps = 64;
    let value = |s: usize| hi - (hi - lo) * ((s as f32 + 0.5) / steps as f32);
    if vector {
        for s in 0..steps {
            let t0 = s as f32 / steps as f32;
            let y0 = bar_top + ((bar_bottom - bar_top) as f32 * t0) as i32;
            let y1 =
                bar_top + ((bar_bottom - bar_top) as f32 * (t0 + 1.0 / steps as f32)).ceil() as i32;
            area.draw(&Rectangle::new(
                [(x0, y0), (x1, y1)],
                scale.color(value(s)).filled(),
            ))
            .map_err(draw_err)?;
        }
    } else {
        let column = ndarray::Array2::from_shape_fn((steps, 1), |(s, _)| value(s)); // (steps, 1)
        area.draw(&matrix_cells(
            column.view(),
            scale,
            (x0, bar_top),
            (x1 - x0) as u32,
            (bar_bottom - bar_top) as u32,
        ))
        .map_err(draw_err)?;
    }
    let (above, below) = clipped
        .map(|c| (c.above(), c.below()))
        .unwrap_or((false, false));
    if above {
        let triangle = vec![(x0, bar_top), (x1, bar_top), ((x0 + x1) / 2, bar_top - tip)];
        area.draw(&Polygon::new(triangle, scale.color(hi).filled()))
            .map_err(draw_err)?;
    }
    if below {
        let triangle = vec![
            (x0, bar_bottom),
            (x1, bar_bottom),
            ((x0 + x1) / 2, bar_bottom + tip),
        ];
        area.draw(&Polygon::new(triangle, scale.color(lo).filled()))
            .map_err(draw_err)?;
    }
    let style = anchored_text(font_px, HPos::Left, VPos::Center);
    for (text, at) in bar_labels(scale, clipped) {
        let y = bar_top + ((bar_bottom - bar_top) as f32 * at) as i32;
        area.draw(&Text::new(text, (x1 + 4, y), style.clone()))
            .map_err(draw_err)?;
    }
    area.draw(&Text::new(
        legend.to_string(),
        (x + 4, bar_bottom + tip + 6),
        anchored_text(font_px, HPos::Left, VPos::Top),
    ))
    .map_err(draw_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_steps() {
        let steps: Vec<usize> = [1, 2, 3, 6, 11, 21, 26, 51, 120]
            .iter()
            .map(|&n| round_step(n))
            .collect();
        assert_eq!(steps, [1, 2, 5, 10, 20, 25, 50, 100, 200]);
    }

    #[test]
    fn sixteen_tokens_keep_every_label_and_long_axes_thin_out() {
        assert_eq!(
            plan_axis(16, 14.0, 13, false, |f| f as f32 + 3.0).step,
            1,
            "11 px text fits a 14 px row"
        );
        assert_eq!(plan_axis(16, 14.0, 13, false, |f| f as f32 + 3.0).font, 11);
        let long = plan_axis(71, 7.0, 13, false, |f| f as f32 + 3.0);
        assert!(long.step >= 2 && 71usize.div_ceil(long.step) <= MAX_LABELLED);
        assert_eq!(plan_axis(64, 8.0, 13, true, |f| f as f32 + 3.0).step, 2);
    }
}
